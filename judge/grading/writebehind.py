"""A call cache that stores from a background thread, so the event loop never waits on disk.

`put` returns at once; a writer thread stores pending calls in batches. `get` sees pending
calls too. Whoever stores verdicts must `flush()` first: a verdict is then never stored
before the call it came from, so a run killed at any point repeats no stored call (a call
still pending at the kill was never stored, and repeating it is correct).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Protocol

from judge.providers.base import CallCache, CallRecord


class _Batching(Protocol):
    def put_many(self, records: Sequence[CallRecord]) -> None: ...


class WriteBehindCache:
    """Wraps a CallCache; batches its writes on a daemon thread."""

    def __init__(self, inner: CallCache, *, interval_s: float = 0.2) -> None:
        self.inner = inner
        self.interval_s = interval_s
        self._pending: dict[str, CallRecord] = {}
        self._queue: list[CallRecord] = []
        self._memos: dict[str, tuple[str, str]] = {}  # memo key -> (cache key, text)
        self._memo_queue: list[tuple[str, str]] = []
        self._lock = threading.Lock()  # guards _pending and _queue
        self._write = threading.Lock()  # one writer at a time, in order
        self._wake = threading.Event()
        self._stop = False
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="judge-call-writer",
                                        daemon=True)
        self._thread.start()

    def get(self, cache_key: str) -> CallRecord | None:
        with self._lock:
            rec = self._pending.get(cache_key)
        return rec if rec is not None else self.inner.get(cache_key)

    def put(self, record: CallRecord) -> None:
        self._raise()
        with self._lock:
            self._pending[record.cache_key] = record
            self._queue.append(record)
            wake = len(self._queue) == 1  # the writer is idle or busy with an earlier batch
        if wake:
            self._wake.set()

    def get_memo(self, memo_key: str) -> tuple[str, str] | None:
        """RenderMemo, when the wrapped cache has one."""
        with self._lock:
            hit = self._memos.get(memo_key)
        if hit is not None:
            return hit
        get = getattr(self.inner, "get_memo", None)
        return get(memo_key) if callable(get) else None

    def put_memo(self, memo_key: str, cache_key: str, text: str) -> None:
        if not callable(getattr(self.inner, "put_memo", None)):
            return
        with self._lock:
            self._memos[memo_key] = (cache_key, text)
            self._memo_queue.append((memo_key, cache_key))
        self._wake.set()

    def flush(self) -> None:
        """Store every pending call (then memo) now (in the caller's thread)."""
        with self._write:
            with self._lock:
                batch, self._queue = self._queue, []
                memos, self._memo_queue = self._memo_queue, []
            if batch:
                put_many = getattr(self.inner, "put_many", None)
                if callable(put_many):
                    put_many(batch)
                else:
                    for rec in batch:
                        self.inner.put(rec)
                with self._lock:
                    for rec in batch:
                        if self._pending.get(rec.cache_key) is rec:
                            del self._pending[rec.cache_key]
            if memos:  # after the calls they point at
                put_memos = getattr(self.inner, "put_memos", None)
                if callable(put_memos):
                    put_memos(memos)
                else:
                    for memo_key, cache_key in memos:
                        text = self._memos[memo_key][1]
                        self.inner.put_memo(memo_key, cache_key, text)  # type: ignore[attr-defined]
                with self._lock:
                    for memo_key, _ in memos:
                        self._memos.pop(memo_key, None)
        self._raise()

    def close(self) -> None:
        self._stop = True
        self._wake.set()
        self._thread.join(timeout=30)
        self.flush()

    def _run(self) -> None:
        while not self._stop:
            self._wake.wait(self.interval_s)
            self._wake.clear()
            try:
                self.flush()
            except BaseException as exc:  # surfaced to the caller on the next put/flush
                self._error = exc
                return

    def _raise(self) -> None:
        if self._error is not None:
            err, self._error = self._error, None
            raise err
