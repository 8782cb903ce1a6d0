"""Ordered, named migrations with a table of applied names, run whenever a store is opened.

Every migration is frozen DDL written out in this file, never built from judge/store/tables.py:
a blank database runs them all in order, an older one runs the ones its `judge_migrations`
table does not name yet, and both end with the same schema. SQLite and PostgreSQL share each
statement except for two types, filled in from `_TYPES` (timestamps with a time zone, and
autoincrement ids: SQLite's INTEGER PRIMARY KEY is the rowid, PostgreSQL's SERIAL makes
`<table>_id_seq`). Tables are written in the layout SQLAlchemy emitted when they were first
made, so SQLite stores the same text in a database made before the DDL was frozen.

Rules:

- Never edit, rename or reorder a released migration, nor `_TYPES`; databases in use have
  already run them. Change the schema by adding a new migration at the end.
- The pending migrations run in one transaction, each followed by its row in
  `judge_migrations`, so a failure leaves the database as it was (DDL is transactional on
  both databases); on PostgreSQL an advisory lock keeps two processes from migrating at once.
  An up-to-date database is only read.

To add one, e.g. a column:

1. Append `@migration("0006_what_it_does")` below the last one: plain DDL through `_run`
   (`ALTER TABLE verdicts ADD COLUMN … `, `CREATE INDEX …`), per dialect where they differ.
   No conditionals on what the database holds: the applied-names table decides.
2. Change judge/store/tables.py to match; `test_tables_agree_with_migrated_schema` fails until
   code and database agree.
3. In tests/test_store_migrations.py update the literal `EXPECTED` schema and add the new name
   to `NAMES`; the tests then migrate blank databases and databases stopped before every
   migration, on SQLite and PostgreSQL, and compare each with `EXPECTED`.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine

Migration = Callable[[Connection], None]
MIGRATIONS: list[tuple[str, Migration]] = []

#: a fixed key for PostgreSQL's advisory lock: two processes opening a blank database at the
#: same moment must not both create the tables
_PG_LOCK_KEY = 0x6A75646765

#: the only words of the DDL that differ between the dialects (part of every released
#: migration: never edit)
_TYPES: dict[str, dict[str, str]] = {
    "sqlite": {"timestamp": "DATETIME", "serial": "INTEGER"},
    "postgresql": {"timestamp": "TIMESTAMP WITH TIME ZONE", "serial": "SERIAL"},
}


def migration(name: str) -> Callable[[Migration], Migration]:
    def register(fn: Migration) -> Migration:
        MIGRATIONS.append((name, fn))
        return fn
    return register


def _run(conn: Connection, *statements: str) -> None:
    """Execute DDL with `{timestamp}` and `{serial}` filled in for this dialect."""
    types = _TYPES[conn.dialect.name]
    for sql in statements:
        conn.exec_driver_sql(sql.format_map(types))


def _table(name: str, body: str) -> str:
    """CREATE TABLE with one column or constraint a line of `body`, laid out as SQLAlchemy
    laid it out (SQLite keeps the text; IF NOT EXISTS is dropped from what it keeps)."""
    lines = [line.strip().removesuffix(",") for line in body.strip().splitlines()]
    return f"CREATE TABLE IF NOT EXISTS {name} (\n\t" + ", \n\t".join(lines) + "\n)"


_APPLIED = _table("judge_migrations", """
    name VARCHAR NOT NULL,
    applied_at {timestamp} NOT NULL,
    PRIMARY KEY (name)
""")


@migration("0001_initial_schema")
def _initial(conn: Connection) -> None:
    _run(
        conn,
        _table("traces", """
            trace_id VARCHAR NOT NULL,
            scenario VARCHAR,
            candidate JSON NOT NULL,
            meta JSON NOT NULL,
            n_events INTEGER NOT NULL,
            content_hash VARCHAR NOT NULL,
            body JSON NOT NULL,
            created_at {timestamp} NOT NULL,
            PRIMARY KEY (trace_id)
        """),
        _table("scenarios", """
            content_hash VARCHAR NOT NULL,
            scenario_id VARCHAR NOT NULL,
            path VARCHAR,
            text VARCHAR NOT NULL,
            created_at {timestamp} NOT NULL,
            PRIMARY KEY (content_hash)
        """),
        "CREATE INDEX IF NOT EXISTS ix_scenarios_scenario_id ON scenarios (scenario_id)",
        _table("items", """
            item_id VARCHAR NOT NULL,
            trace_id VARCHAR NOT NULL,
            seq INTEGER NOT NULL,
            turn INTEGER NOT NULL,
            rubric VARCHAR NOT NULL,
            kind VARCHAR NOT NULL,
            safety_critical BOOLEAN NOT NULL,
            data JSON NOT NULL,
            created_at {timestamp} NOT NULL,
            PRIMARY KEY (item_id)
        """),
        "CREATE INDEX IF NOT EXISTS ix_items_trace_id ON items (trace_id)",
        "CREATE INDEX IF NOT EXISTS ix_items_rubric ON items (rubric)",
        _table("prompt_versions", """
            prompt_hash VARCHAR NOT NULL,
            rubric VARCHAR NOT NULL,
            version VARCHAR NOT NULL,
            description VARCHAR,
            template VARCHAR NOT NULL,
            created_at {timestamp} NOT NULL,
            PRIMARY KEY (prompt_hash)
        """),
        "CREATE INDEX IF NOT EXISTS ix_prompt_versions_rubric ON prompt_versions (rubric)",
        _table("provider_calls", """
            cache_key VARCHAR NOT NULL,
            item_id VARCHAR NOT NULL,
            prompt_hash VARCHAR NOT NULL,
            model VARCHAR NOT NULL,
            params JSON NOT NULL,
            request JSON NOT NULL,
            response_text VARCHAR NOT NULL,
            usage JSON NOT NULL,
            latency_s FLOAT NOT NULL,
            raw JSON NOT NULL,
            created_at {timestamp} NOT NULL,
            PRIMARY KEY (cache_key)
        """),
        "CREATE INDEX IF NOT EXISTS ix_provider_calls_item_id ON provider_calls (item_id)",
        _table("runs", """
            run_id VARCHAR NOT NULL,
            status VARCHAR NOT NULL,
            suite VARCHAR,
            config JSON NOT NULL,
            summary JSON NOT NULL,
            started_at {timestamp} NOT NULL,
            finished_at {timestamp},
            PRIMARY KEY (run_id)
        """),
        _table("labels", """
            id {serial} NOT NULL,
            item_id VARCHAR NOT NULL,
            label VARCHAR NOT NULL,
            violated_key VARCHAR,
            evidence_event INTEGER,
            annotator VARCHAR NOT NULL,
            created_at {timestamp} NOT NULL,
            note VARCHAR,
            meta JSON NOT NULL,
            fingerprint VARCHAR NOT NULL,
            PRIMARY KEY (id),
            UNIQUE (fingerprint)
        """),
        "CREATE INDEX IF NOT EXISTS ix_labels_item_annotator ON labels (item_id, annotator)",
        "CREATE INDEX IF NOT EXISTS ix_labels_annotator ON labels (annotator)",
        _table("review_queue", """
            item_id VARCHAR NOT NULL,
            rubric VARCHAR,
            run_id VARCHAR,
            verdict_id INTEGER,
            reason VARCHAR NOT NULL,
            safety_critical BOOLEAN NOT NULL,
            confidence FLOAT,
            sort_confidence FLOAT NOT NULL,
            state VARCHAR NOT NULL,
            required INTEGER NOT NULL,
            n_labelled INTEGER NOT NULL,
            claimed_by VARCHAR,
            lease_expires_at {timestamp},
            created_at {timestamp} NOT NULL,
            done_at {timestamp},
            PRIMARY KEY (item_id)
        """),
        _table("calibrations", """
            id {serial} NOT NULL,
            rubric VARCHAR NOT NULL,
            prompt_version VARCHAR,
            prompt_hash VARCHAR NOT NULL,
            model VARCHAR NOT NULL,
            threshold FLOAT,
            record JSON NOT NULL,
            created_at {timestamp} NOT NULL,
            PRIMARY KEY (id)
        """),
        "CREATE INDEX IF NOT EXISTS ix_calibrations_lookup "
        "ON calibrations (rubric, prompt_hash, model)",
        _table("verdicts", """
            id {serial} NOT NULL,
            run_id VARCHAR NOT NULL,
            item_id VARCHAR NOT NULL,
            rubric VARCHAR,
            prompt_version VARCHAR,
            prompt_hash VARCHAR,
            model VARCHAR,
            label VARCHAR NOT NULL,
            violated_key VARCHAR,
            evidence_event INTEGER,
            confidence FLOAT,
            calibrated_confidence FLOAT,
            rationale VARCHAR,
            reason VARCHAR,
            overruled BOOLEAN NOT NULL,
            route VARCHAR,
            route_reason VARCHAR,
            raw_completion VARCHAR,
            meta JSON NOT NULL,
            created_at {timestamp} NOT NULL,
            PRIMARY KEY (id),
            CONSTRAINT uq_verdicts_run_item UNIQUE (run_id, item_id),
            FOREIGN KEY(run_id) REFERENCES runs (run_id)
        """),
        "CREATE INDEX IF NOT EXISTS ix_verdicts_rubric_prompt_model "
        "ON verdicts (rubric, prompt_version, model)",
        # Claiming walks this index: open items, safety-critical first, lowest confidence next.
        "CREATE INDEX ix_queue_claim_order ON review_queue "
        "(state, safety_critical DESC, sort_confidence ASC, item_id ASC)",
    )


@migration("0002_verdicts_item_run_index")
def _verdict_lookup(conn: Connection) -> None:
    # Finding the newest verdict of an item across runs (labelling with --show-judge, reports).
    _run(conn, "CREATE INDEX IF NOT EXISTS ix_verdicts_item_created "
               "ON verdicts (item_id, created_at)")


@migration("0003_grading_work")
def _grading_work(conn: Connection) -> None:
    # Scale-out: `judge worker` processes lease grading work from this table.
    _run(
        conn,
        _table("grading_work", """
            id {serial} NOT NULL,
            run_id VARCHAR NOT NULL,
            item_id VARCHAR NOT NULL,
            rubric VARCHAR NOT NULL,
            state VARCHAR NOT NULL,
            vetoed BOOLEAN NOT NULL,
            lease_owner VARCHAR,
            lease_expires_at {timestamp},
            attempts INTEGER NOT NULL,
            updated_at {timestamp} NOT NULL,
            PRIMARY KEY (id),
            CONSTRAINT uq_grading_work_run_item UNIQUE (run_id, item_id)
        """),
        "CREATE INDEX IF NOT EXISTS ix_grading_work_claim "
        "ON grading_work (state, lease_expires_at, id)",
        "CREATE INDEX IF NOT EXISTS ix_grading_work_run_id ON grading_work (run_id)",
    )


@migration("0004_drop_redundant_indexes")
def _drop_redundant(conn: Connection) -> None:
    # Bulk verdict writes pay for every index: verdicts.item_id is covered by
    # ix_verdicts_item_created (0002); the queue is walked by ix_queue_claim_order, and a
    # rubric filter rides on that walk. (0001 made these three until its tables lost them.)
    _run(conn,
         "DROP INDEX IF EXISTS ix_verdicts_item_id",
         "DROP INDEX IF EXISTS ix_review_queue_rubric",
         # Expiry looks only at claimed entries: a partial index that new (open) entries skip.
         "DROP INDEX IF EXISTS ix_queue_lease",
         "CREATE INDEX IF NOT EXISTS ix_queue_lease_claimed ON review_queue "
         "(lease_expires_at) WHERE state = 'claimed'")


@migration("0005_render_memo")
def _render_memo(conn: Connection) -> None:
    # A cached rerun finds an item's call by the item's digest without rendering its prompt.
    _run(conn, _table("render_memo", """
        memo_key VARCHAR NOT NULL,
        cache_key VARCHAR NOT NULL,
        PRIMARY KEY (memo_key)
    """))


@migration("0006_label_import_key")
def _label_import_key(conn: Connection) -> None:
    # A labels-file line without created_at is stamped when imported; its identity is its
    # content and occurrence in the file (judge.labels.importing), so importing the file
    # again adds nothing. NULL for every other label (unique ignores NULLs on both).
    _run(conn,
         "ALTER TABLE labels ADD COLUMN import_key VARCHAR",
         "CREATE UNIQUE INDEX IF NOT EXISTS ux_labels_import_key ON labels (import_key)")


@migration("0007_provider_call_validity")
def _provider_call_validity(conn: Connection) -> None:
    # A reply that failed verdict validation is stored with the reason (audit) and is not
    # served as a final answer on a later run (judge.grading.engine); NULL: valid or not
    # validated when stored.
    _run(conn, "ALTER TABLE provider_calls ADD COLUMN invalid_reason VARCHAR")

@migration("0008_annotator_tokens_and_reveals")
def _annotators(conn: Connection) -> None:
    # `judge serve`: annotators sign in with a token (only its SHA-256 is stored), and every
    # reveal of the judge's verdict after a person labelled an item is recorded.
    _run(conn,
         _table("annotator_tokens", """
            token_hash VARCHAR NOT NULL,
            annotator VARCHAR NOT NULL,
            created_at {timestamp} NOT NULL,
            revoked_at {timestamp},
            PRIMARY KEY (token_hash)
         """),
         "CREATE INDEX IF NOT EXISTS ix_annotator_tokens_annotator "
         "ON annotator_tokens (annotator)",
         _table("label_reveals", """
            id {serial} NOT NULL,
            item_id VARCHAR NOT NULL,
            annotator VARCHAR NOT NULL,
            verdict_id INTEGER,
            created_at {timestamp} NOT NULL,
            PRIMARY KEY (id)
         """),
         "CREATE INDEX IF NOT EXISTS ix_label_reveals_item_annotator "
         "ON label_reveals (item_id, annotator)")


@migration("0009_serve_sessions")
def _serve_sessions(conn: Connection) -> None:
    # `judge serve`: signing in with a token starts a session (only the SHA-256 of its secret
    # is stored); the browser's cookie holds the session, never the token, and signing out
    # ends it, so a copied cookie stops working. A session dies with its token's revocation.
    _run(conn,
         _table("serve_sessions", """
            session_hash VARCHAR NOT NULL,
            token_hash VARCHAR NOT NULL,
            annotator VARCHAR NOT NULL,
            created_at {timestamp} NOT NULL,
            expires_at {timestamp} NOT NULL,
            ended_at {timestamp},
            PRIMARY KEY (session_hash)
         """),
         "CREATE INDEX IF NOT EXISTS ix_serve_sessions_expires_at "
         "ON serve_sessions (expires_at)")



@migration("0010_canary_stages")
def _canary_stages(conn: Connection) -> None:
    # `judge canary`: every look at a staged rollout (one call per stage, and again after a
    # hold), so the next call knows the rollout's earlier stages and its evidence so far.
    # `look` numbers a rollout's looks from 1; `record` is the decision as printed, with the
    # stage's own task outcomes (judge.compare.canary).
    _run(conn,
         _table("canary_stages", """
            id {serial} NOT NULL,
            rollout VARCHAR NOT NULL,
            look INTEGER NOT NULL,
            stage VARCHAR NOT NULL,
            share FLOAT,
            metric VARCHAR NOT NULL,
            threshold FLOAT NOT NULL,
            decision VARCHAR NOT NULL,
            n_tasks INTEGER NOT NULL,
            n_success INTEGER NOT NULL,
            record JSON NOT NULL,
            created_at {timestamp} NOT NULL,
            PRIMARY KEY (id),
            CONSTRAINT uq_canary_stages_rollout_look UNIQUE (rollout, look)
         """))

# -- applying them -----------------------------------------------------------------------

def applied(conn: Connection) -> list[str]:
    rows = conn.exec_driver_sql("SELECT name FROM judge_migrations ORDER BY name")
    return [r[0] for r in rows]


def _pending(conn: Connection, names: list[str]) -> list[str]:
    if not conn.dialect.has_table(conn, "judge_migrations"):
        return names
    have = set(applied(conn))
    return [n for n in names if n not in have]


def migrate(engine: Engine, *, stop_before: str | None = None) -> list[str]:
    """Apply every migration not yet applied, in order, in one transaction with their records
    in judge_migrations; `stop_before` names the first one to leave out (tests build older
    databases with it). Returns the names applied now."""
    todo = [name for name, _fn in MIGRATIONS]
    if stop_before is not None:
        if stop_before not in todo:
            raise ValueError(f"no migration named {stop_before!r}")
        todo = todo[:todo.index(stop_before)]
    # An up-to-date database (every open but the first) needs one read: no write lock on
    # SQLite, no advisory lock on PostgreSQL.
    with engine.connect().execution_options(judge_read=True) as conn, conn.begin():
        if not _pending(conn, todo):
            return []
    done_now: list[str] = []
    with engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _PG_LOCK_KEY})
        if not conn.dialect.has_table(conn, "judge_migrations"):
            _run(conn, _APPLIED)
        have = set(applied(conn))
        for name, fn in MIGRATIONS:
            if name not in todo or name in have:
                continue
            fn(conn)
            conn.execute(text("INSERT INTO judge_migrations (name, applied_at) VALUES (:n, :t)"),
                         {"n": name, "t": datetime.now(UTC).replace(tzinfo=None)
                          if conn.dialect.name == "sqlite" else datetime.now(UTC)})
            done_now.append(name)
    return done_now

