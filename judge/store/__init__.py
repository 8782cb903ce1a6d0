"""The database: SQLite by default, PostgreSQL for teams. `open_store()` is the entry point."""

from judge.store.calls import DbCallCache as DbCallCache
from judge.store.db import database_url as database_url
from judge.store.repo import Store as Store
from judge.store.repo import open_store as open_store

__all__ = ["DbCallCache", "Store", "database_url", "open_store"]
