"""Open the database: JUDGE_DATABASE_URL, else a SQLite file `judge.db` in the working directory.

SQLite runs with WAL, a busy timeout and foreign keys on; PostgreSQL goes through psycopg 3
(`postgresql+psycopg://`). Every driver error is turned into a one-line StoreError naming the
database, so the CLI can print it and exit 2 without a traceback.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, SQLAlchemyError
from sqlalchemy.pool import StaticPool
from sqlmodel import create_engine

from judge.errors import StoreError

DEFAULT_URL = "sqlite:///judge.db"
#: milliseconds a SQLite writer waits for a lock before giving up (JUDGE_DB_BUSY_TIMEOUT_MS)
DEFAULT_BUSY_TIMEOUT_MS = 5000


def database_url(url: str | None = None) -> str:
    """The URL to use: the argument, else JUDGE_DATABASE_URL, else `sqlite:///judge.db`."""
    raw = url or os.environ.get("JUDGE_DATABASE_URL") or DEFAULT_URL
    if raw.startswith(("postgresql://", "postgres://")):
        raw = "postgresql+psycopg://" + raw.split("://", 1)[1]
    elif "://" not in raw:  # a bare path means a SQLite file
        raw = f"sqlite:///{raw}"
    return raw


def display_url(url: str) -> str:
    """The URL without its password, fit for messages; a SQLite URL shows just the file."""
    if url.startswith("sqlite"):
        path = url.split(":///", 1)[-1] if ":///" in url else ":memory:"
        return path or ":memory:"
    return re.sub(r"://([^:/@]+):[^@]*@", r"://\1:***@", url)


def describe(exc: BaseException) -> str:
    """The first line of a driver error, without SQLAlchemy's boilerplate."""
    orig = getattr(exc, "orig", None) or exc
    text = str(orig).strip().splitlines()
    line = text[0] if text else type(orig).__name__
    return re.sub(r"\s*\(Background on this error.*$", "", line)


def make_engine(url: str, *, busy_timeout_ms: int | None = None) -> Engine:
    """An engine for `url` with the pragmas and timeouts judge relies on."""
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise StoreError(f"bad database URL {display_url(url)!r}: {describe(exc)}") from exc
    timeout = busy_timeout_ms
    if timeout is None:
        timeout = int(os.environ.get("JUDGE_DB_BUSY_TIMEOUT_MS", DEFAULT_BUSY_TIMEOUT_MS))
    if parsed.get_backend_name() == "sqlite":
        engine = create_engine(
            url, poolclass=StaticPool if parsed.database in (None, "", ":memory:") else None,
            connect_args={"timeout": timeout / 1000, "isolation_level": None,
                          "check_same_thread": False})
        _sqlite_pragmas(engine, timeout)
        return engine
    if parsed.get_backend_name() == "postgresql":
        return create_engine(url, pool_pre_ping=True, pool_size=2, max_overflow=4,
                             connect_args={"connect_timeout": 5})
    raise StoreError(f"{display_url(url)}: unsupported database (use sqlite or postgresql)")


def insert_ignore(table: Any, dialect: str) -> Any:
    """An INSERT that skips rows whose unique key is already stored (idempotent writes)."""
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as pg_insert

        return pg_insert(table).on_conflict_do_nothing()
    from sqlalchemy.dialects.sqlite import insert as sqlite_insert

    return sqlite_insert(table).on_conflict_do_nothing()


def _sqlite_pragmas(engine: Engine, busy_timeout_ms: int) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        cur = dbapi_conn.cursor()
        cur.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        cur.execute("PRAGMA foreign_keys = ON")
        cur.execute("PRAGMA journal_mode = WAL")
        cur.execute("PRAGMA synchronous = NORMAL")
        cur.close()

    # The driver runs in autocommit (isolation_level=None) so that we issue BEGIN ourselves:
    # BEGIN IMMEDIATE takes the write lock up front, so a transaction never fails half-way
    # on a lock upgrade.
    # Read-only work (execution option judge_read=True) uses a plain deferred BEGIN.
    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        read = conn.get_execution_options().get("judge_read", False)
        conn.exec_driver_sql("BEGIN" if read else "BEGIN IMMEDIATE")


@contextmanager
def store_errors(url: str) -> Iterator[None]:
    """Turn any database error inside into a StoreError naming the database."""
    try:
        yield
    except StoreError:
        raise
    except DBAPIError as exc:
        raise StoreError(f"database {display_url(url)}: {describe(exc)}") from exc
    except SQLAlchemyError as exc:
        raise StoreError(f"database {display_url(url)}: {describe(exc)}") from exc


def utcnow() -> datetime:
    return datetime.now(UTC)


def as_utc(value: datetime | None) -> datetime | None:
    """Timestamps are stored in UTC; SQLite hands them back without a zone."""
    if value is None:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
