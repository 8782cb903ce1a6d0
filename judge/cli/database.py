"""Opening the database from the command line: the URL and busy timeout come from Settings
(--db, JUDGE_DATABASE_URL or the config file; JUDGE_DB_BUSY_TIMEOUT_MS).

The URL is checked before anything is opened, so a mistyped one is one line naming where it
came from rather than a new file: it must be a URL of a supported database (`sqlite:///PATH`,
`postgresql://…`, `postgresql+psycopg://…`) or the path of a SQLite file, which is either an
existing file or a new one named like a database (`.db`, `.sqlite`, `.sqlite3`, `.db3`).
`--db 'not a url'` is neither, and creates nothing.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from judge.errors import ConfigError
from judge.settings import Settings

if TYPE_CHECKING:
    from judge.store import Store

DB_HELP = "database URL (default JUDGE_DATABASE_URL or ./judge.db)"
#: what a new SQLite file given as a bare path may be called
DB_SUFFIXES = (".db", ".sqlite", ".sqlite3", ".db3")
SCHEMES = ("sqlite", "postgresql", "postgres")


def _source(db: str | None, settings: Settings) -> str:
    """Where the URL came from, for the message: --db (given here or to Settings.load),
    the environment, or the config file."""
    url = db or settings.database_url
    if not db and url == os.environ.get("JUDGE_DATABASE_URL"):
        return "environment variable JUDGE_DATABASE_URL"
    if not db and settings.config_file is not None:
        return f"database URL (from --db or {settings.config_file})"
    return "--db"


def check_database_url(value: str, source: str = "--db") -> None:
    """ConfigError (one line naming `source`) unless `value` names a database judge can
    open: a sqlite or postgresql URL that parses, or a SQLite file path (an existing file,
    or a new one with a database suffix in an existing directory)."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    from judge.store.db import display_url

    shown = display_url(value) if "://" in value else value
    if "\x00" in value or not value.strip():
        raise ConfigError(f"{source} {shown!r}: not a database URL or path")
    if "://" in value:
        scheme = value.split("://", 1)[0].lower()
        if scheme.split("+", 1)[0] not in SCHEMES:
            raise ConfigError(f"{source} {shown!r}: unsupported database {scheme!r} (use "
                              "sqlite:///PATH or postgresql://USER@HOST/NAME)")
        try:
            make_url(value.replace("postgres://", "postgresql://", 1))
        except (ArgumentError, ValueError) as exc:
            raise ConfigError(f"{source} {shown!r}: not a database URL ({exc})") from None
        return
    path = Path(value)
    if path.is_dir():
        raise ConfigError(f"{source} {shown!r}: is a directory, not a database file")
    if path.exists():
        return  # an existing file: SQLite says whether it is a database
    if path.suffix.lower() not in DB_SUFFIXES:
        raise ConfigError(
            f"{source} {shown!r}: not a database URL (sqlite:///PATH, postgresql://…) nor "
            f"an existing file; a new SQLite file is named like a database "
            f"({', '.join(DB_SUFFIXES)})")
    if not path.parent.is_dir():
        raise ConfigError(f"{source} {shown!r}: no such directory {str(path.parent)!r}")


def open_database(db: str | None = None, settings: Settings | None = None, *,
                  create: bool = True) -> Store:
    """The store named by `db`, else by the settings (loaded here when not given), after
    checking its URL (`check_database_url`). Without `create`, only an existing judge
    database is opened (judge.store.db.MissingDatabase otherwise)."""
    from judge.store import open_store

    settings = settings or Settings.load(database_url=db)
    url = db or settings.database_url
    if url:
        check_database_url(url, _source(db, settings))
    return open_store(url, busy_timeout_ms=settings.db_busy_timeout_ms, create=create)
