"""The provider-call cache in the database (implements judge.providers.base.CallCache).

`put` commits at once, in its own transaction, so a call is stored before the verdict made
from it: a grading run killed afterwards repeats no stored call when it is run again.

A call is stored under its cache key, with `invalid_reason` when its reply failed verdict
validation. An already stored key is kept (two workers that asked at once store one call),
except for a call marked `replaces_invalid` (the engine asked again because the stored reply
was not usable): the stored row is kept for audit under `<key>#replaced-<uuid>` (its reason
filled in if it had none) and the new call takes the key.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.engine import Engine

from judge.errors import StoreError
from judge.providers.base import CallRecord
from judge.store.db import bulk_insert, describe, display_url, store_errors, utcnow
from judge.store.tables import CallRow, MemoRow

_T: Any = CallRow.__table__
_M: Any = MemoRow.__table__


def _json(value: Any) -> Any:
    """JSON columns come back parsed from psycopg and as text from sqlite3."""
    return json.loads(value) if isinstance(value, str | bytes) else value


class DbCallCache:
    """CallCache over the `provider_calls` table."""

    def __init__(self, engine: Engine, url: str) -> None:
        self._engine = engine
        self._url = url
        mark = "?" if engine.dialect.name == "sqlite" else "%s"
        self._get_sql = ("SELECT cache_key, item_id, prompt_hash, model, params, request, "
                         "response_text, usage, latency_s, raw, invalid_reason "
                         f"FROM provider_calls WHERE cache_key = {mark}")
        self._memo_sql = ("SELECT m.cache_key, c.response_text FROM render_memo m JOIN "
                          "provider_calls c ON c.cache_key = m.cache_key "
                          f"WHERE m.memo_key = {mark}")
        self.hits = 0
        self.misses = 0

    def get(self, cache_key: str) -> CallRecord | None:
        # The hot path of a cached rerun: one driver-level SELECT on a pooled connection,
        # without SQLAlchemy's transaction bookkeeping.
        row = self._fetch(self._get_sql, cache_key)
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        (key, item_id, prompt_hash, model, params, request, text, usage, latency, extra,
         invalid) = row
        return CallRecord(
            cache_key=key, item_id=item_id, prompt_hash=prompt_hash, model=model,
            params=_json(params), request=_json(request), response_text=text,
            usage=_json(usage), latency_s=float(latency), raw=_json(extra),
            invalid_reason=invalid)

    def _fetch(self, sql: str, key: str) -> Any:
        with store_errors(self._url):
            raw = self._engine.raw_connection()
        try:
            cur = raw.cursor()
            cur.execute(sql, (key,))
            row = cur.fetchone()
            cur.close()
            raw.rollback()  # end the read (PostgreSQL opened a transaction for it)
        except self._engine.dialect.loaded_dbapi.Error as exc:
            raw.invalidate()
            raise StoreError(f"database {display_url(self._url)}: {describe(exc)}") from exc
        finally:
            raw.close()
        return row

    def get_memo(self, memo_key: str) -> tuple[str, str] | None:
        """The (cache key, completion) of the call made for an item digest (RenderMemo)."""
        row = self._fetch(self._memo_sql, memo_key)
        return (str(row[0]), str(row[1])) if row is not None else None

    def put_memo(self, memo_key: str, cache_key: str, text: str) -> None:
        self.put_memos([(memo_key, cache_key)])

    def put_memos(self, memos: Sequence[tuple[str, str]]) -> None:
        if not memos:
            return
        rows = [{"memo_key": m, "cache_key": c} for m, c in memos]
        with store_errors(self._url), self._engine.begin() as conn:
            bulk_insert(conn, _M, rows)

    def put(self, record: CallRecord) -> None:
        self.put_many([record])

    def put_many(self, records: Sequence[CallRecord]) -> None:
        """Store several calls in one transaction: an already stored key is kept, unless
        the new call `replaces_invalid` (then the stored one is set aside, see above)."""
        self.put_batch(records, ())

    def put_batch(self, records: Sequence[CallRecord], memos: Sequence[tuple[str, str]]
                  ) -> None:
        """`put_many` and `put_memos` in one transaction: the calls, then the memos ((memo
        key, cache key) pairs, of these calls or of calls already stored)."""
        if not records and not memos:
            return
        rows = [self._row(r) for r in records if r.replaces_invalid is None]
        again = [r for r in records if r.replaces_invalid is not None]
        with store_errors(self._url), self._engine.begin() as conn:
            bulk_insert(conn, _T, rows)  # driver-level executemany, JSON by orjson
            for rec in again:  # rare: one stored chain that ended invalid, asked again
                conn.execute(update(_T).where(_T.c.cache_key == rec.cache_key).values(
                    cache_key=f"{rec.cache_key}#replaced-{uuid.uuid4().hex}",
                    invalid_reason=func.coalesce(_T.c.invalid_reason, rec.replaces_invalid)))
                bulk_insert(conn, _T, [self._row(rec)])
            bulk_insert(conn, _M, [{"memo_key": m, "cache_key": c} for m, c in memos])

    @staticmethod
    def _row(record: CallRecord) -> dict[str, Any]:
        return {
            "cache_key": record.cache_key, "item_id": record.item_id,
            "prompt_hash": record.prompt_hash, "model": record.model, "params": record.params,
            "request": record.request, "response_text": record.response_text,
            "usage": record.usage, "latency_s": record.latency_s, "raw": record.raw,
            "created_at": utcnow(), "invalid_reason": record.invalid_reason}

    def count(self) -> int:
        with store_errors(self._url), self._engine.connect().execution_options(
                judge_read=True) as conn:
            return int(conn.execute(select(func.count()).select_from(_T)).scalar_one())
