"""The provider-call cache in the database (implements judge.providers.base.CallCache).

`put` commits at once, in its own transaction, so a call is stored before the verdict made
from it: a grading run killed afterwards repeats no stored call when it is run again.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select
from sqlalchemy.engine import Engine

from judge.providers.base import CallRecord
from judge.store.db import insert_ignore, store_errors, utcnow
from judge.store.tables import CallRow

_T: Any = CallRow.__table__  # type: ignore[attr-defined]


class DbCallCache:
    """CallCache over the `provider_calls` table."""

    def __init__(self, engine: Engine, url: str) -> None:
        self._engine = engine
        self._url = url
        self.hits = 0
        self.misses = 0

    def get(self, cache_key: str) -> CallRecord | None:
        with store_errors(self._url), self._engine.connect().execution_options(
                judge_read=True) as conn:
            row = conn.execute(select(_T).where(_T.c.cache_key == cache_key)).mappings().first()
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        return CallRecord(
            cache_key=row["cache_key"], item_id=row["item_id"], prompt_hash=row["prompt_hash"],
            model=row["model"], params=row["params"], request=row["request"],
            response_text=row["response_text"], usage=row["usage"],
            latency_s=row["latency_s"], raw=row["raw"])

    def put(self, record: CallRecord) -> None:
        row = {
            "cache_key": record.cache_key, "item_id": record.item_id,
            "prompt_hash": record.prompt_hash, "model": record.model, "params": record.params,
            "request": record.request, "response_text": record.response_text,
            "usage": record.usage, "latency_s": record.latency_s, "raw": record.raw,
            "created_at": utcnow()}
        with store_errors(self._url), self._engine.begin() as conn:
            conn.execute(insert_ignore(_T, conn.dialect.name), [row])

    def count(self) -> int:
        with store_errors(self._url), self._engine.connect().execution_options(
                judge_read=True) as conn:
            return int(conn.execute(select(func.count()).select_from(_T)).scalar_one())
