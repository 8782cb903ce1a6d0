"""Ordered, named migrations with a table of applied names, run whenever a store is opened.

Rules: never edit or reorder a released migration; add a new one at the end. A migration that
adds a column to a table in tables.py must skip it when present (a blank database gets the
current tables from the first migration), see `add_column_if_missing`.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from sqlalchemy import Column, inspect, text
from sqlalchemy.engine import Connection, Engine
from sqlmodel import SQLModel

from judge.store import tables

Migration = Callable[[Connection], None]
MIGRATIONS: list[tuple[str, Migration]] = []

#: a fixed key for PostgreSQL's advisory lock: two processes opening a blank database at the
#: same moment must not both create the tables
_PG_LOCK_KEY = 0x6A75646765


def migration(name: str) -> Callable[[Migration], Migration]:
    def register(fn: Migration) -> Migration:
        MIGRATIONS.append((name, fn))
        return fn
    return register


@migration("0001_initial_schema")
def _initial(conn: Connection) -> None:
    SQLModel.metadata.create_all(conn, tables=[t.__table__ for t in tables.ALL_TABLES])
    # Claiming walks this index: open items, safety-critical first, lowest confidence next.
    conn.execute(text("CREATE INDEX ix_queue_claim_order ON review_queue "
                      "(state, safety_critical DESC, sort_confidence ASC, item_id ASC)"))


@migration("0002_verdicts_item_run_index")
def _verdict_lookup(conn: Connection) -> None:
    # Finding the newest verdict of an item across runs (labelling with --show-judge, reports).
    conn.execute(text("CREATE INDEX IF NOT EXISTS ix_verdicts_item_created "
                      "ON verdicts (item_id, created_at)"))


def add_column_if_missing(conn: Connection, table: str, column: Column[object]) -> None:
    """For later migrations: ALTER TABLE … ADD COLUMN unless a blank database already has it."""
    present = {c["name"] for c in inspect(conn).get_columns(table)}
    if column.name not in present:
        ddl = column.type.compile(dialect=conn.dialect)
        conn.execute(text(f'ALTER TABLE {table} ADD COLUMN "{column.name}" {ddl}'))


def applied(conn: Connection) -> list[str]:
    rows = conn.execute(text("SELECT name FROM judge_migrations ORDER BY name"))
    return [r[0] for r in rows]


def migrate(engine: Engine) -> list[str]:
    """Apply every migration not yet applied, in order, each in the same transaction as its
    record in judge_migrations. Returns the names applied now."""
    done_now: list[str] = []
    with engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _PG_LOCK_KEY})
        tables.AppliedMigration.__table__.create(conn, checkfirst=True)
        have = set(applied(conn))
        for name, fn in MIGRATIONS:
            if name in have:
                continue
            fn(conn)
            conn.execute(text("INSERT INTO judge_migrations (name, applied_at) VALUES (:n, :t)"),
                         {"n": name, "t": datetime.now(UTC).replace(tzinfo=None)
                          if conn.dialect.name == "sqlite" else datetime.now(UTC)})
            done_now.append(name)
    return done_now


@migration("0003_grading_work")
def _grading_work(conn: Connection) -> None:
    # Scale-out: `judge worker` processes lease grading work from this table.
    tables.WorkRow.__table__.create(conn, checkfirst=True)


@migration("0004_drop_redundant_indexes")
def _drop_redundant(conn: Connection) -> None:
    # Bulk verdict writes pay for every index: verdicts.item_id is covered by
    # ix_verdicts_item_created (0002); the queue is walked by ix_queue_claim_order, and a
    # rubric filter rides on that walk.
    conn.execute(text("DROP INDEX IF EXISTS ix_verdicts_item_id"))
    conn.execute(text("DROP INDEX IF EXISTS ix_review_queue_rubric"))
    # Expiry looks only at claimed entries: a partial index that new (open) entries skip.
    conn.execute(text("DROP INDEX IF EXISTS ix_queue_lease"))
    conn.execute(text("CREATE INDEX IF NOT EXISTS ix_queue_lease_claimed ON review_queue "
                      "(lease_expires_at) WHERE state = 'claimed'"))


@migration("0005_render_memo")
def _render_memo(conn: Connection) -> None:
    tables.MemoRow.__table__.create(conn, checkfirst=True)
