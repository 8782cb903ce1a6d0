"""Call caches: every provider call is stored and served again for the same cache key.

`MemoryCache` lives for one process (tests, benchmarks). `JsonlCache` appends one JSON line
per call to a file (`.judge-cache.jsonl` by default) — the default until the database store
takes over; both implement `judge.providers.base.CallCache`, so the engine does not care.

Both also implement the optional `RenderMemo` protocol: a small map from an item's render
memo key (judge.grading.keys.MemoMaker) to the cache key and completion text of the call
made for it, so a cached rerun needs neither rendering nor reading the stored request.
A cache without it still works; the engine then renders every item.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol, runtime_checkable

import orjson

from judge.errors import StoreError
from judge.providers.base import CallRecord

DEFAULT_CACHE_FILE = ".judge-cache.jsonl"

_RECORD_PREFIX = b'{"cache_key":"'
_MEMO_PREFIX = b'{"memo":"'


@runtime_checkable
class RenderMemo(Protocol):
    """Optional cache capability: item memo key → (cache key, completion text)."""

    def get_memo(self, memo_key: str) -> tuple[str, str] | None: ...

    def put_memo(self, memo_key: str, cache_key: str, text: str) -> None: ...


def record_to_dict(record: CallRecord) -> dict[str, Any]:
    return {  # cache_key first: the JSONL cache indexes lines by this prefix
        "cache_key": record.cache_key, "item_id": record.item_id,
        "prompt_hash": record.prompt_hash, "model": record.model, "params": record.params,
        "response_text": record.response_text, "usage": record.usage,
        "latency_s": record.latency_s, "raw": record.raw, "request": record.request,
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
        self.memos: dict[str, tuple[str, str]] = {}
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

    def get_memo(self, memo_key: str) -> tuple[str, str] | None:
        return self.memos.get(memo_key)

    def put_memo(self, memo_key: str, cache_key: str, text: str) -> None:
        self.memos[memo_key] = (cache_key, text)

    def __len__(self) -> int:
        return len(self.records)


class JsonlCache:
    """Calls appended to a JSONL file, one line per call, written as each call returns.

    Each line is written with one `write` on an O_APPEND descriptor, so concurrent writers
    never interleave inside a line and a killed run loses at most the line being written.
    Opening indexes lines by key without parsing them (a record is parsed when it is asked
    for); an unreadable line (e.g. half-written) is a miss, counted in `skipped`. The newest
    record for a key wins. Memo lines (`{"memo": …}`) are small and read at open.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.skipped = 0
        self.hits = 0
        self.misses = 0
        self._lines: dict[str, bytes] = {}
        self._parsed: dict[str, CallRecord] = {}
        self.memos: dict[str, tuple[str, str]] = {}
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
        data = self.path.read_bytes()
        lines, memos = self._lines, self.memos
        start = len(_RECORD_PREFIX)
        for raw in data.split(b"\n"):
            if raw.startswith(_RECORD_PREFIX):
                end = raw.find(b'"', start)
                if end > start:
                    lines[raw[start:end].decode("utf-8", "replace")] = raw
                    continue
            if not raw.strip():
                continue
            try:
                obj = orjson.loads(raw)
                if isinstance(obj, dict) and "memo" in obj:
                    memos[str(obj["memo"])] = (str(obj["key"]), str(obj["text"]))
                else:
                    rec = record_from_dict(obj)
                    self._parsed[rec.cache_key] = rec
            except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
                self.skipped += 1

    def get(self, cache_key: str) -> CallRecord | None:
        rec = self._parsed.get(cache_key)
        if rec is None:
            raw = self._lines.get(cache_key)
            if raw is not None:
                try:
                    rec = record_from_dict(orjson.loads(raw))
                except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
                    self.skipped += 1
                    del self._lines[cache_key]
        if rec is None:
            self.misses += 1
        else:
            self.hits += 1
        return rec

    def put(self, record: CallRecord) -> None:
        self._parsed[record.cache_key] = record
        self._write(_dump(record_to_dict(record)))

    def get_memo(self, memo_key: str) -> tuple[str, str] | None:
        return self.memos.get(memo_key)

    def put_memo(self, memo_key: str, cache_key: str, text: str) -> None:
        if self.memos.get(memo_key) == (cache_key, text):
            return
        self.memos[memo_key] = (cache_key, text)
        self._write(_dump({"memo": memo_key, "key": cache_key, "text": text}))

    def _write(self, line: bytes) -> None:
        if self._fd is None:
            raise StoreError(f"{self.path}: the call cache is closed")
        try:
            os.write(self._fd, line + b"\n")
        except OSError as exc:
            raise StoreError(f"{self.path}: cannot write the call cache ({exc.strerror})") from None

    def __len__(self) -> int:
        return len(self._lines.keys() | self._parsed.keys())

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> JsonlCache:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def _dump(obj: Any) -> bytes:
    try:
        return orjson.dumps(obj, option=orjson.OPT_NON_STR_KEYS, default=str)
    except TypeError:  # e.g. an integer beyond 64 bits
        return json.dumps(obj, ensure_ascii=False, separators=(",", ":"),
                          default=str).encode("utf-8")
