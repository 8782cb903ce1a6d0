"""Opening the database from the command line: the URL and busy timeout come from Settings
(--db, JUDGE_DATABASE_URL or the config file; JUDGE_DB_BUSY_TIMEOUT_MS)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from judge.settings import Settings

if TYPE_CHECKING:
    from judge.store import Store

DB_HELP = "database URL (default JUDGE_DATABASE_URL or ./judge.db)"


def open_database(db: str | None = None, settings: Settings | None = None) -> Store:
    """The store named by `db`, else by the settings (loaded here when not given)."""
    from judge.store import open_store

    settings = settings or Settings.load(database_url=db)
    return open_store(db or settings.database_url,
                      busy_timeout_ms=settings.db_busy_timeout_ms)
