"""Call caches: every provider call is stored and served again for the same cache key.

`MemoryCache` lives for one process (tests, benchmarks). `JsonlCache` appends one JSON line
per call to a file (`.judge-cache.jsonl` by default) — the default until the database store
takes over; both implement `judge.providers.base.CallCache`, so the engine does not care.

Both also implement the optional `RenderMemo` protocol: a small map from an item's render
memo key (judge.grading.keys.MemoMaker) to the cache key and completion text of the call
made for it, so a cached rerun needs neither rendering nor reading the stored request.
A cache without it still works; the engine then renders every item.

A call whose reply failed validation carries `invalid_reason`; a call asked again in its
place (`replaces_invalid`) becomes the one served for the key (judge.grading.engine). The
JSONL cache keeps both lines (the newest record for a key wins), the memory cache keeps the
old record in `replaced`.
"""

from __future__ import annotations

import hashlib
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
#: request fields that repeat across calls and are stored once per file (the system prompt
#: carries a per-item fence nonce, so it does not repeat)
BLOB_FIELDS = frozenset({"schema"})
BLOB_MIN_BYTES = 256


@runtime_checkable
class RenderMemo(Protocol):
    """Optional cache capability: item memo key → (cache key, completion text)."""

    def get_memo(self, memo_key: str) -> tuple[str, str] | None: ...

    def put_memo(self, memo_key: str, cache_key: str, text: str) -> None: ...


def record_to_dict(record: CallRecord) -> dict[str, Any]:
    d = {  # cache_key first: the JSONL cache indexes lines by this prefix
        "cache_key": record.cache_key, "item_id": record.item_id,
        "prompt_hash": record.prompt_hash, "model": record.model, "params": record.params,
        "response_text": record.response_text, "usage": record.usage,
        "latency_s": record.latency_s, "raw": record.raw, "request": record.request,
    }
    if record.invalid_reason is not None:
        d["invalid_reason"] = record.invalid_reason
    if record.replaces_invalid is not None:
        d["replaces_invalid"] = record.replaces_invalid
    return d


def record_from_dict(d: dict[str, Any]) -> CallRecord:
    return CallRecord(
        cache_key=d["cache_key"], item_id=d["item_id"], prompt_hash=d["prompt_hash"],
        model=d["model"], params=d.get("params") or {}, request=d.get("request") or {},
        response_text=d["response_text"], usage=d.get("usage") or {},
        latency_s=float(d.get("latency_s") or 0.0), raw=d.get("raw") or {},
        invalid_reason=d.get("invalid_reason"), replaces_invalid=d.get("replaces_invalid"),
    )


class MemoryCache:
    """A dict of calls; counts lookups so tests can assert on hits."""

    def __init__(self) -> None:
        self.records: dict[str, CallRecord] = {}
        self.replaced: list[CallRecord] = []  # calls a `replaces_invalid` call took over from
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
        old = self.records.get(record.cache_key)
        if old is not None and record.replaces_invalid is not None:
            self.replaced.append(old)
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
    Opening indexes record lines by key without parsing them (a record is parsed when asked
    for); an unreadable line (e.g. half-written) is a miss, counted in `skipped`. The newest
    record for a key wins. Memo lines (`{"memo": …}`) are small and read at open. Large
    request parts repeated by every call (the output schema) are written once
    as blob lines (`{"blob": sha256, "value": …}`) and referenced as `{"$blob": sha256}`.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.skipped = 0
        self.hits = 0
        self.misses = 0
        self._data = b""
        self._index: dict[str, tuple[int, int]] = {}
        self._parsed: dict[str, CallRecord] = {}
        self._blobs: dict[str, Any] = {}
        self._blob_of: dict[int, str] = {}  # id(value) -> blob id, for values already written
        self.memos: dict[str, tuple[str, str]] = {}
        self._fd: int | None = None
        try:
            self._load()
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            if self._data and not self._data.endswith(b"\n"):
                os.write(self._fd, b"\n")
        except OSError as exc:
            raise StoreError(f"{self.path}: cannot open the call cache ({exc.strerror})") from None

    def _load(self) -> None:
        if not self.path.exists():
            return
        data = self._data = self.path.read_bytes()
        index, size, skip = self._index, len(data), len(_RECORD_PREFIX)
        pos = 0
        while pos < size:
            end = data.find(b"\n", pos)
            if end < 0:
                end = size
            if data.startswith(_RECORD_PREFIX, pos):
                kend = data.find(b'"', pos + skip, end)
                if kend > 0:
                    index[data[pos + skip:kend].decode("utf-8", "replace")] = (pos, end)
                else:
                    self.skipped += 1
            elif end > pos and data[pos:end].strip():
                self._load_other(data[pos:end])
            pos = end + 1

    def _load_other(self, raw: bytes) -> None:
        try:
            obj = orjson.loads(raw)
            if isinstance(obj, dict) and "memo" in obj:
                self.memos[str(obj["memo"])] = (str(obj["key"]), str(obj["text"]))
            elif isinstance(obj, dict) and "blob" in obj:
                self._blobs[str(obj["blob"])] = obj["value"]
            else:
                rec = record_from_dict(obj)
                self._parsed[rec.cache_key] = rec
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            self.skipped += 1

    def get(self, cache_key: str) -> CallRecord | None:
        rec = self._parsed.get(cache_key)
        if rec is None:
            span = self._index.get(cache_key)
            if span is not None:
                try:
                    rec = record_from_dict(orjson.loads(self._data[span[0]:span[1]]))
                    rec.request = {k: self._unblob(v) for k, v in rec.request.items()}
                except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
                    self.skipped += 1
                    del self._index[cache_key]
        if rec is None:
            self.misses += 1
        else:
            self.hits += 1
        return rec

    def _unblob(self, value: Any) -> Any:
        if isinstance(value, dict) and len(value) == 1 and "$blob" in value:
            return self._blobs[value["$blob"]]  # KeyError: the blob line is lost
        return value

    def put(self, record: CallRecord) -> None:
        self._parsed[record.cache_key] = record
        d = record_to_dict(record)
        d["request"] = {k: self._blob(v) if k in BLOB_FIELDS else v
                        for k, v in record.request.items()}
        self._write(_dump(d))

    def _blob(self, value: Any) -> Any:
        """A reference to `value`, written once as a blob line (the engine passes the same
        system prompt and schema objects for every call, so `id` finds repeats cheaply)."""
        blob_id = self._blob_of.get(id(value))
        if blob_id is None or self._blobs.get(blob_id) is not value:
            body = _dump(value)
            if len(body) < BLOB_MIN_BYTES:
                return value
            blob_id = "sha256:" + hashlib.sha256(body).hexdigest()
            if blob_id not in self._blobs:
                self._write(b'{"blob":"' + blob_id.encode() + b'","value":' + body + b"}")
            self._blobs[blob_id] = value
            self._blob_of[id(value)] = blob_id
        return {"$blob": blob_id}

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
        return len(self._index.keys() | self._parsed.keys())

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
