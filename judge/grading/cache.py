"""Call caches: every provider call is stored and served again for the same cache key.

`MemoryCache` lives for one process (tests, benchmarks). `JsonlCache` appends one JSON line
per call to a file (`.judge-cache.jsonl` by default) — the default until the database store
takes over; both implement `judge.providers.base.CallCache`, so the engine does not care.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import TracebackType
from typing import Any

from judge.errors import StoreError
from judge.providers.base import CallRecord

DEFAULT_CACHE_FILE = ".judge-cache.jsonl"


def record_to_dict(record: CallRecord) -> dict[str, Any]:
    return {
        "cache_key": record.cache_key, "item_id": record.item_id,
        "prompt_hash": record.prompt_hash, "model": record.model, "params": record.params,
        "request": record.request, "response_text": record.response_text,
        "usage": record.usage, "latency_s": record.latency_s, "raw": record.raw,
    }


def record_from_dict(d: dict[str, Any]) -> CallRecord:
    return CallRecord(
        cache_key=d["cache_key"], item_id=d["item_id"], prompt_hash=d["prompt_hash"],
        model=d["model"], params=d.get("params") or {}, request=d.get("request") or {},
        response_text=d["response_text"], usage=d.get("usage") or {},
        latency_s=float(d.get("latency_s") or 0.0), raw=d.get("raw") or {},
    )


class MemoryCache:
    """A dict of calls; counts lookups so tests can assert on hits."""

    def __init__(self) -> None:
        self.records: dict[str, CallRecord] = {}
        self.hits = 0
        self.misses = 0

    def get(self, cache_key: str) -> CallRecord | None:
        rec = self.records.get(cache_key)
        if rec is None:
            self.misses += 1
        else:
            self.hits += 1
        return rec

    def put(self, record: CallRecord) -> None:
        self.records[record.cache_key] = record

    def __len__(self) -> int:
        return len(self.records)


class JsonlCache(MemoryCache):
    """Calls appended to a JSONL file, one line per call, written as each call returns.

    Each record is written with one `write` on an O_APPEND descriptor, so concurrent
    writers never interleave inside a line and a killed run loses at most the line being
    written. On open, unreadable (e.g. half-written) lines are skipped and counted in
    `skipped`; the newest record for a key wins.
    """

    def __init__(self, path: str | Path) -> None:
        super().__init__()
        self.path = Path(path)
        self.skipped = 0
        self._fd: int | None = None
        try:
            self._load()
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            if self.path.stat().st_size and not self._ends_with_newline():
                os.write(self._fd, b"\n")
        except OSError as exc:
            raise StoreError(f"{self.path}: cannot open the call cache ({exc.strerror})") from None

    def _ends_with_newline(self) -> bool:
        with self.path.open("rb") as fh:
            fh.seek(-1, os.SEEK_END)
            return fh.read(1) == b"\n"

    def _load(self) -> None:
        if not self.path.exists():
            return
        with self.path.open("rb") as fh:
            for raw in fh:
                if not raw.strip():
                    continue
                try:
                    rec = record_from_dict(json.loads(raw))
                except (ValueError, KeyError, TypeError):
                    self.skipped += 1
                    continue
                self.records[rec.cache_key] = rec

    def put(self, record: CallRecord) -> None:
        super().put(record)
        if self._fd is None:
            raise StoreError(f"{self.path}: the call cache is closed")
        line = json.dumps(record_to_dict(record), ensure_ascii=False, separators=(",", ":"),
                          default=str)
        try:
            os.write(self._fd, (line + "\n").encode("utf-8"))
        except OSError as exc:
            raise StoreError(f"{self.path}: cannot write the call cache ({exc.strerror})") from None

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> JsonlCache:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
