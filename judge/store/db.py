"""Open the database at a URL (callers take it from Settings: JUDGE_DATABASE_URL, the config
file or --db), else a SQLite file `judge.db` in the working directory.

SQLite runs with WAL, a busy timeout and foreign keys on; PostgreSQL goes through psycopg 3
(`postgresql+psycopg://`). Every driver error is turned into a one-line StoreError naming the
database, so the CLI can print it and exit 2 without a traceback.

A SQLite file is made only when the store is opened with `create` (the default); once open,
the engine never makes one: every transaction first checks that the file it opened is still
there, the same file (`SqliteFile`), and every later connection opens it read-write without
create. Deleting or replacing the file under a running process (`judge serve`) then fails
every read and write with one StoreError, instead of writing on into the deleted file (lost
at exit) or into a fresh empty one.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from operator import itemgetter
from typing import Any
from urllib.parse import quote

import orjson
from sqlalchemy import create_engine, event
from sqlalchemy.engine import Connection, Engine, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, SQLAlchemyError
from sqlalchemy.pool import StaticPool

from judge.errors import StoreError

DEFAULT_URL = "sqlite:///judge.db"
#: milliseconds a SQLite writer waits for a lock before giving up (Settings.db_busy_timeout_ms)
DEFAULT_BUSY_TIMEOUT_MS = 5000


def database_url(url: str | None = None) -> str:
    """The URL to use: the argument (a URL or a bare SQLite path), else `sqlite:///judge.db`."""
    raw = url or DEFAULT_URL
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


class MissingDatabase(StoreError):
    """The database to open does not exist (or holds no judge tables), and the caller did
    not ask for a new one."""


class SqliteFile:
    """The file a SQLite engine works on: its absolute path, and which file it was when the
    store opened it (device and inode), so that a deleted or replaced file is noticed."""

    def __init__(self, path: str, display: str) -> None:
        self.path = os.path.abspath(path)
        self.display = display
        self.identity: tuple[int, int] | None = None

    def remember(self) -> None:
        st = os.stat(self.path)
        self.identity = (st.st_dev, st.st_ino)

    def check(self) -> None:
        """Raise a StoreError unless the file opened is still at its path."""
        if self.identity is None:
            return
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            raise StoreError(f"database {self.display}: its file was deleted while open; "
                             "nothing more is read or written (restore the file, or start "
                             "again on a new database)") from None
        except OSError as exc:
            raise StoreError(f"database {self.display}: {exc.strerror or exc}") from None
        if (st.st_dev, st.st_ino) != self.identity:
            raise StoreError(f"database {self.display}: its file was replaced by another "
                             "while open; nothing more is read or written (start again to "
                             "open the new file)")


def make_engine(url: str, *, busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS,
                create: bool = True) -> Engine:
    """An engine for `url` with the pragmas and timeouts judge relies on. Without `create`,
    a SQLite file that does not exist is a MissingDatabase, not a new file."""
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise StoreError(f"bad database URL {display_url(url)!r}: {describe(exc)}") from exc
    timeout = busy_timeout_ms
    if parsed.get_backend_name() == "sqlite":
        memory = parsed.database in (None, "", ":memory:")
        engine = create_engine(
            url, poolclass=StaticPool if memory else None,
            connect_args={"timeout": timeout / 1000, "isolation_level": None,
                          "check_same_thread": False})
        if not memory and not parsed.query.get("uri"):  # a file URI is taken as it is
            file = SqliteFile(str(parsed.database), display_url(url))
            if not create and not os.path.isfile(file.path):
                engine.dispose()
                raise MissingDatabase(f"no database at {file.display}")
            _guard_file(engine, file, create=create)  # its checks run before the pragmas
        _sqlite_pragmas(engine, timeout)
        return engine
    if parsed.get_backend_name() == "postgresql":
        # No pre-ping: a claim is one round trip; a dropped connection is invalidated by
        # the pool on its first error (one StoreError) and replaced on the next call.
        engine = create_engine(url, pool_size=2, max_overflow=4, pool_recycle=1800,
                               connect_args={"connect_timeout": 5})
        _pg_nul_safe(engine)
        return engine
    raise StoreError(f"{display_url(url)}: unsupported database (use sqlite or postgresql)")


def insert_ignore(table: Any, dialect: str) -> Any:
    """An INSERT that skips rows whose unique key is already stored (idempotent writes)."""
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as pg_insert

        return pg_insert(table).on_conflict_do_nothing()
    from sqlalchemy.dialects.sqlite import insert as sqlite_insert

    return sqlite_insert(table).on_conflict_do_nothing()


def _wal(cur: Any, busy_timeout_ms: int) -> None:
    """Put the database in WAL mode (persistent: a no-op once it is). Switching needs an
    exclusive lock, and SQLite answers "database is locked" at once, without waiting out the
    busy timeout, when another connection is switching the same new file at that moment; so
    wait here, up to the busy timeout."""
    deadline = time.monotonic() + busy_timeout_ms / 1000
    while True:
        try:
            cur.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(0.005)


#: what PostgreSQL stores for U+0000, which its text types cannot hold
NUL_STAND_IN = "\ufffd"


def _pg_nul_safe(engine: Engine) -> None:
    """Every str parameter sent on this engine's connections has U+0000 replaced by U+FFFD.

    PostgreSQL's text types refuse NUL, and trace bytes (or a judge echoing them) reach
    free-text columns: without this, one rationale holding a NUL failed a whole batch of
    verdicts. Doing it in the driver's str dumper covers every statement, writes and lookups
    alike, so a value is found by the same value it was stored under. JSON columns are
    unaffected (JSON text escapes NUL as \\u0000). SQLite stores NUL as it is."""
    from psycopg.types.string import StrBinaryDumper, StrDumperUnknown

    class NulSafeText(StrDumperUnknown):
        def dump(self, obj: str) -> Any:
            return super().dump(obj.replace("\x00", NUL_STAND_IN) if "\x00" in obj else obj)

    class NulSafeBinary(StrBinaryDumper):
        def dump(self, obj: str) -> Any:
            return super().dump(obj.replace("\x00", NUL_STAND_IN) if "\x00" in obj else obj)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.adapters.register_dumper(str, NulSafeBinary)
        dbapi_conn.adapters.register_dumper(str, NulSafeText)


def _guard_file(engine: Engine, file: SqliteFile, *, create: bool) -> None:
    """Connections open `file` by its absolute path and never make it once it was opened
    (or at all, without `create`); each transaction checks it is still the same file."""
    uri = f"file:{quote(file.path)}?mode=rw"

    @event.listens_for(engine, "do_connect")
    def _on_do_connect(_dialect: Any, _record: Any, cargs: list[Any],
                       cparams: dict[str, Any]) -> None:
        file.check()
        if file.identity is not None or not create:
            cargs[:1] = [uri]
            cparams["uri"] = True
        else:
            cargs[:1] = [file.path]

    @event.listens_for(engine, "connect")
    def _on_connect(_dbapi_conn: Any, _record: Any) -> None:
        if file.identity is None:
            file.remember()

    @event.listens_for(engine, "begin")
    def _on_begin(_conn: Connection) -> None:
        file.check()


def _sqlite_pragmas(engine: Engine, busy_timeout_ms: int) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        cur = dbapi_conn.cursor()
        cur.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        cur.execute("PRAGMA foreign_keys = ON")
        _wal(cur, busy_timeout_ms)
        cur.execute("PRAGMA synchronous = NORMAL")
        cur.execute("PRAGMA cache_size = -65536")  # 64 MiB: bulk writes keep indexes in memory
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


_JSON = json.JSONEncoder(separators=(",", ":"), default=str).encode
_ORJSON_OPTS = orjson.OPT_NON_STR_KEYS


class JsonText(str):
    """A value already encoded as JSON text: stored as it is (e.g. a trace body encoded once
    for both its content hash and its column)."""


def _json_param(v: Any) -> str | None:
    if v is None:
        return None
    if isinstance(v, JsonText):
        return v
    if isinstance(v, dict) and not v:
        return "{}"
    try:  # orjson: the bulk paths spend their time here (requests of many kB per call)
        return orjson.dumps(v, default=str, option=_ORJSON_OPTS).decode("utf-8")
    except TypeError:  # e.g. an integer beyond 64 bits
        return _JSON(v)


def _sqlite_time() -> Any:
    """SQLAlchemy's SQLite storage format, so ORM reads and comparisons agree; rows of one
    bulk write usually share one timestamp, so the last one is remembered."""
    last: list[Any] = [None, None]

    def fmt(v: datetime | None) -> str | None:
        if v is None:
            return None
        if v is last[0]:
            return str(last[1])
        out = (v.astimezone(UTC) if v.tzinfo is not None else v).strftime(
            "%Y-%m-%d %H:%M:%S.%f")
        last[0], last[1] = v, out
        return out
    return fmt


def _converter(column: Any, dialect: str) -> Any:
    """How one column's Python value becomes a driver parameter, without SQLAlchemy's
    per-row statement processing (bulk writes spend their time here)."""
    kind = type(column.type).__name__
    if kind == "JSON":
        return _json_param
    if kind == "DateTime" and dialect == "sqlite":
        return _sqlite_time()
    return None


def insert_sql(dialect: str, table: Any, columns: list[str], *,
               ignore_conflicts: bool = True) -> str:
    """A driver-level INSERT for `columns` (qmark for SQLite, %s for psycopg)."""
    names = ", ".join(f'"{c}"' for c in columns)
    mark = "?" if dialect == "sqlite" else "%s"
    sql = f'INSERT INTO "{table.name}" ({names}) VALUES ({", ".join([mark] * len(columns))})'
    if ignore_conflicts:  # uniqueness conflicts only; every other violation still fails
        sql += " ON CONFLICT DO NOTHING"
    return sql


def time_param(dialect: str) -> Any:
    """The converter for DateTime parameters of driver-level statements."""
    return _sqlite_time() if dialect == "sqlite" else (lambda v: v)


def json_param(v: Any) -> str | None:
    return _json_param(v)


def bulk_insert(conn: Connection, table: Any, rows: list[dict[str, Any]], *,
                ignore_conflicts: bool = True) -> None:
    """INSERT many rows with one driver-level executemany (skipping rows whose unique key is
    already stored when `ignore_conflicts`). Rows must carry every non-autoincrement column."""
    if not rows:
        return
    dialect = conn.dialect.name
    cols = [c for c in table.columns if c.name in rows[0]]
    sql = insert_sql(dialect, table, [c.name for c in cols], ignore_conflicts=ignore_conflicts)
    getter = itemgetter(*(c.name for c in cols))
    convs = [(j, conv) for j, c in enumerate(cols) if (conv := _converter(c, dialect))]
    params: list[Any] = []
    for row in rows:
        values = list(getter(row))
        for j, conv in convs:
            values[j] = conv(values[j])
        params.append(tuple(values))
    conn.exec_driver_sql(sql, params)
