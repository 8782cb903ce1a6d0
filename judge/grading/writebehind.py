"""A call cache that stores from a background thread, so the event loop never waits on disk.

A grading run with a database stores its calls from a forked child instead where it can
(judge.pipeline.callproc: the thread shares the interpreter lock with a busy loop, which
made each call wait ~10 ms to be stored); this thread is the same contract where a child
cannot be forked (off Linux, an in-memory database) and for callers outside the pipeline.

`put` returns at once; a writer thread stores pending calls in batches (one transaction for
all the calls that arrived while the previous batch was being stored). `get` sees pending
calls too. `wait_stored(key)` lets the grading engine wait, without blocking the loop, until
a call is stored for good: each grading worker holds its item until its call is stored, so
at most one call per worker has reached the provider without being stored, whatever the
writer's pace. That is what a run killed at any point can lose (and repeats when resumed);
a stored call is never repeated. Whoever stores verdicts must `flush()` first: a verdict is
then never stored before the call it came from.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from contextlib import suppress
from typing import Protocol, runtime_checkable

from judge.providers.base import CallCache, CallRecord


@runtime_checkable
class _Batching(Protocol):
    """A cache that stores calls and memos in one transaction (judge.store.calls)."""

    def put_batch(self, records: Sequence[CallRecord],
                  memos: Sequence[tuple[str, str]]) -> None: ...


_Waiter = tuple[int, asyncio.AbstractEventLoop, "asyncio.Future[None]"]


class WriteBehindCache:
    """Wraps a CallCache; batches its writes on a daemon thread."""

    def __init__(self, inner: CallCache, *, interval_s: float = 0.2) -> None:
        self.inner = inner
        self.interval_s = interval_s
        self._pending: dict[str, tuple[CallRecord, int]] = {}  # key -> (record, its number)
        self._queue: list[tuple[CallRecord, int]] = []
        self._put = 0  # calls put so far: each call's number
        self._stored = 0  # every call numbered up to this one is stored
        self._waiters: list[_Waiter] = []
        self._memos: dict[str, tuple[str, str]] = {}  # memo key -> (cache key, text)
        self._memo_queue: list[tuple[str, str]] = []
        self._lock = threading.Lock()  # guards everything above
        self._write = threading.Lock()  # one writer at a time, in order
        self._wake = threading.Event()
        self._stop = False
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="judge-call-writer",
                                        daemon=True)
        self._thread.start()

    def get(self, cache_key: str) -> CallRecord | None:
        with self._lock:
            entry = self._pending.get(cache_key)
        return entry[0] if entry is not None else self.inner.get(cache_key)

    def put(self, record: CallRecord) -> None:
        self._raise()
        with self._lock:
            self._put += 1
            entry = (record, self._put)
            self._pending[record.cache_key] = entry
            self._queue.append(entry)
            wake = len(self._queue) == 1  # the writer is idle or busy with an earlier batch
        if wake:
            self._wake.set()

    async def wait_stored(self, cache_key: str) -> None:
        """Return once the call put under `cache_key` is stored (at once if it is); raise
        what storing it raised."""
        loop = asyncio.get_running_loop()
        with self._lock:
            entry = self._pending.get(cache_key)
            if entry is None or entry[1] <= self._stored:
                return
            future: asyncio.Future[None] = loop.create_future()
            self._waiters.append((entry[1], loop, future))
        if not self._thread.is_alive():  # the writer stopped (closed, or failed): store now
            self.flush()
        await future

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
        """Store every pending call and memo now (in the caller's thread): one transaction
        when the wrapped cache takes memos with its calls (the database's), the memos after
        the calls they point at."""
        with self._write:
            with self._lock:
                batch, self._queue = self._queue, []
                memos, self._memo_queue = self._memo_queue, []
            if batch or memos:
                try:
                    self._store([rec for rec, _ in batch], memos)
                except BaseException as exc:
                    if batch:
                        self._settle(batch[-1][1], exc)
                    raise
            if batch:
                with self._lock:
                    for rec, number in batch:
                        if self._pending.get(rec.cache_key, (None, 0))[1] == number:
                            del self._pending[rec.cache_key]
                self._settle(batch[-1][1], None)
            if memos:
                with self._lock:
                    for memo_key, _ in memos:
                        self._memos.pop(memo_key, None)
        self._raise()

    def _store(self, records: list[CallRecord], memos: list[tuple[str, str]]) -> None:
        if isinstance(self.inner, _Batching):  # calls and memos in one transaction
            self.inner.put_batch(records, memos)
            return
        put_many = getattr(self.inner, "put_many", None)
        if callable(put_many):
            if records:
                put_many(records)
        else:
            for rec in records:
                self.inner.put(rec)
        if memos:  # after the calls they point at
            put_memos = getattr(self.inner, "put_memos", None)
            if callable(put_memos):
                put_memos(memos)
            else:
                for memo_key, cache_key in memos:
                    text = self._memos[memo_key][1]
                    self.inner.put_memo(memo_key, cache_key, text)  # type: ignore[attr-defined]

    def _settle(self, upto: int, error: BaseException | None) -> None:
        """Calls numbered up to `upto` are stored (or failed with `error`): wake their
        waiters, each on its own event loop."""
        with self._lock:
            if error is None:
                self._stored = max(self._stored, upto)
            ready = [w for w in self._waiters if w[0] <= upto]
            self._waiters = [w for w in self._waiters if w[0] > upto]
        for _, loop, future in ready:
            with suppress(RuntimeError):  # that loop is closed: nobody waits any more
                loop.call_soon_threadsafe(_resolve, future, error)

    @property
    def running(self) -> bool:
        """Whether the writer thread still runs (until `close`, or a failure to store)."""
        return self._thread.is_alive()

    def close(self) -> None:
        """Stop the writer thread and store what is pending (in the caller's thread)."""
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


def _resolve(future: asyncio.Future[None], error: BaseException | None) -> None:
    if future.done():  # cancelled while it waited
        return
    if error is None:
        future.set_result(None)
    else:
        future.set_exception(error)
