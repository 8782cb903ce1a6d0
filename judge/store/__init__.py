"""The database: SQLite by default, PostgreSQL for teams. `open_store()` is the entry point.

The store stores: every write takes the records it is given (routed verdicts, review
requests, calls, labels) and keeps them; routing and calibration are decided upstream
(judge.pipeline.route). All of judge's SQL lives in this package.

The names below load on first use (PEP 562), so importing a light module of this package
(e.g. `judge.store.records`) does not import the database driver.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from judge.store.calls import DbCallCache as DbCallCache
    from judge.store.db import DEFAULT_BUSY_TIMEOUT_MS as DEFAULT_BUSY_TIMEOUT_MS
    from judge.store.db import database_url as database_url
    from judge.store.records import ReviewRequest as ReviewRequest
    from judge.store.repo import Store as Store
    from judge.store.repo import open_store as open_store
    from judge.store.review_queue import QueueEntry as QueueEntry
    from judge.store.review_queue import ReviewQueue as ReviewQueue
    from judge.store.work_queue import WorkItem as WorkItem
    from judge.store.work_queue import WorkQueue as WorkQueue

_WHERE: dict[str, str] = {
    "DbCallCache": "judge.store.calls",
    "DEFAULT_BUSY_TIMEOUT_MS": "judge.store.db",
    "database_url": "judge.store.db",
    "ReviewRequest": "judge.store.records",
    "Store": "judge.store.repo",
    "open_store": "judge.store.repo",
    "QueueEntry": "judge.store.review_queue",
    "ReviewQueue": "judge.store.review_queue",
    "WorkItem": "judge.store.work_queue",
    "WorkQueue": "judge.store.work_queue",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'judge.store' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


__all__ = ["DEFAULT_BUSY_TIMEOUT_MS", "DbCallCache", "QueueEntry", "ReviewQueue",
           "ReviewRequest", "Store", "WorkItem", "WorkQueue", "database_url", "open_store"]
