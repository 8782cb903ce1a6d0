"""Provider calls stored by a forked child, so the grading loop never waits on the database
nor, for the GIL, on a thread that does.

The write-behind thread (judge.grading.writebehind) keeps the database off the event loop,
but it shares the interpreter lock with it: each of the dozen places a transaction lets go
of the lock (a SQLite step, a commit, a `stat`) costs it up to the 5 ms switch interval to
get it back from a busy loop. Measured on the 1,164-call benchmark (benchmarks/README.md),
a call waited a median 10 ms and a 90th percentile 46 ms to be stored, every grading worker
waited that long before its next request, and the handovers cost the process ~0.4 CPU-s.
Here a child with its own interpreter stores the calls: the loop pickles what was put in one
turn of the loop into one message and writes it to a pipe without blocking (what the pipe
cannot take waits for the loop's next writable event), and reads the child's
acknowledgements with the loop's own reader.

The contract is the write-behind cache's, unchanged (and it remains the fallback where a
child cannot be forked: off Linux, an in-memory database): `put` returns at once; `get` and
`get_memo` see what is put and not yet stored; `wait_stored(key)` returns once the call is
stored (the child acknowledged its batch: one transaction, its memos with it), so each
grading worker holds at most one call that reached the provider without being stored, and
a run killed at any point repeats at most `concurrency` calls. A failure to store ends the
run with the child's StoreError; so does the child's death.

Lifetime, as for the checking child (judge.pipeline.checkproc): forked before any thread of
ours, it closes its copies of the parent's pipe ends at once, ignores SIGINT, dies with the
parent (`die_with_parent`, and the pipe from the parent reads end-of-file when the parent is
gone), writes through a `ParentPipe`, and ends with `os._exit`. `close()` sends what is left,
waits for every acknowledgement, then for the child's exit.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import signal
from collections.abc import Sequence
from contextlib import suppress
from multiprocessing.connection import Connection
from multiprocessing.reduction import ForkingPickler
from typing import TYPE_CHECKING, Any

from judge.errors import StoreError
from judge.lifeline import ParentPipe, die_with_parent, frame_header
from judge.providers.base import CallRecord

if TYPE_CHECKING:
    from judge.store import Store

_F_SETPIPE_SZ = 1031  # <fcntl.h>, Linux: room for a few hundred calls before a write waits
_PIPE_BYTES = 1 << 20
_Waiter = tuple[int, "asyncio.Future[None]"]


class CallWriterProcess:
    """A CallCache (with `wait_stored` and the render memo) whose writes a child stores."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.inner = store.calls  # reads: stored calls and memos
        self._pending: dict[str, tuple[CallRecord, int]] = {}  # put, not yet stored
        self._memos: dict[str, tuple[str, str]] = {}  # memo key -> (cache key, text)
        self._queue: list[CallRecord] = []  # put, not yet sent
        self._memo_queue: list[tuple[str, str]] = []
        self._put = 0  # calls put so far: each call's number
        self._stored = 0  # calls numbered up to this are stored
        self._messages = 0  # messages framed so far: each message's number
        #: messages sent and not acknowledged: (number, calls up to, memo keys)
        self._inflight: list[tuple[int, int, list[str]]] = []
        self._waiters: list[_Waiter] = []
        self._out = bytearray()  # framed messages the pipe has not taken yet
        self._error: StoreError | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._scheduled = False
        self._writing = False  # the loop watches the pipe for room
        self._proc: multiprocessing.process.BaseProcess | None = None
        self._to_child: Connection | None = None
        self._from_child: Connection | None = None
        self._parent_pid = os.getpid()

    # -- lifecycle ------------------------------------------------------------------------
    def start(self, *, close_in_child: Sequence[Connection] = ()) -> None:
        """Fork the child (before any thread of ours) and watch its acknowledgements on the
        running loop. `close_in_child`: this process's ends of other children's pipes, which
        the child must not hold."""
        ctx = multiprocessing.get_context("fork")
        to_child_r, to_child_w = ctx.Pipe(duplex=False)
        from_child_r, from_child_w = ctx.Pipe(duplex=False)
        self._parent_pid = os.getpid()
        self._proc = ctx.Process(target=self._child,
                                 args=(to_child_r, (to_child_w, from_child_r, *close_in_child),
                                       from_child_w),
                                 name="judge-call-writer", daemon=True)
        self._proc.start()
        to_child_r.close()
        from_child_w.close()
        self._to_child, self._from_child = to_child_w, from_child_r
        with suppress(OSError):  # a bigger pipe: fewer waits for room (Linux only)
            import fcntl

            fcntl.fcntl(to_child_w.fileno(), _F_SETPIPE_SZ, _PIPE_BYTES)
        os.set_blocking(to_child_w.fileno(), False)
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(from_child_r.fileno(), self._acknowledged)

    @property
    def running(self) -> bool:
        return self._proc is not None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def close(self) -> None:
        """Send what is left, wait until all of it is stored (raising the child's error, if
        any), then end the child. Blocking: for the end of a run."""
        try:
            if self._error is None and self._to_child is not None:
                self._frame_queue()
                self._drain_blocking()
                while self._inflight and self._error is None:
                    self._receive(self._recv())
        finally:
            self._shutdown()
        self._raise()

    def _shutdown(self) -> None:
        if self._loop is not None and self._from_child is not None:
            with suppress(Exception):
                self._loop.remove_reader(self._from_child.fileno())
            if self._writing and self._to_child is not None:
                with suppress(Exception):
                    self._loop.remove_writer(self._to_child.fileno())
        self._writing = False
        for conn in (self._to_child, self._from_child):
            if conn is not None:
                conn.close()  # the child reads end-of-file and exits
        self._to_child = self._from_child = None
        proc, self._proc = self._proc, None
        if proc is not None:
            proc.join(timeout=10)
            if proc.is_alive():
                proc.kill()
                proc.join(timeout=5)
        self._fail_waiters(self._error or StoreError("the call writer process was closed"))

    # -- the cache ------------------------------------------------------------------------
    def get(self, cache_key: str) -> CallRecord | None:
        entry = self._pending.get(cache_key)
        return entry[0] if entry is not None else self.inner.get(cache_key)

    def put(self, record: CallRecord) -> None:
        self._raise()
        self._put += 1
        self._pending[record.cache_key] = (record, self._put)
        self._queue.append(record)
        self._schedule()

    async def wait_stored(self, cache_key: str) -> None:
        """Return once the call put under `cache_key` is stored; raise what storing it
        raised."""
        entry = self._pending.get(cache_key)
        if entry is None or entry[1] <= self._stored:
            return
        self._raise()
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        self._waiters.append((entry[1], future))
        await future

    def get_memo(self, memo_key: str) -> tuple[str, str] | None:
        hit = self._memos.get(memo_key)
        return hit if hit is not None else self.inner.get_memo(memo_key)

    def put_memo(self, memo_key: str, cache_key: str, text: str) -> None:
        self._memos[memo_key] = (cache_key, text)
        self._memo_queue.append((memo_key, cache_key))
        self._schedule()

    def flush(self) -> None:
        """Send what is queued now (without waiting for it to be stored: every verdict's
        calls are stored before the verdict is made, `wait_stored`)."""
        self._raise()
        self._frame_queue()
        self._write_some()

    # -- sending --------------------------------------------------------------------------
    def _schedule(self) -> None:
        """One message per turn of the loop, whatever was put during it."""
        if not self._scheduled and self._loop is not None:
            self._scheduled = True
            self._loop.call_soon(self._send_queued)

    def _send_queued(self) -> None:
        self._scheduled = False
        if self._error is not None or self._to_child is None:
            return
        self._frame_queue()
        self._write_some()

    def _frame_queue(self) -> None:
        if not self._queue and not self._memo_queue:
            return
        records, self._queue = self._queue, []
        memos, self._memo_queue = self._memo_queue, []
        self._messages += 1
        upto = self._put  # every call put so far is in this message or an earlier one
        body = ForkingPickler.dumps(("batch", self._messages, records, memos))
        self._out += frame_header(len(body))
        self._out += body
        self._inflight.append((self._messages, upto, [m for m, _ in memos]))

    def _write_some(self) -> None:
        """Write what the pipe takes now; watch for room for the rest."""
        if not self._out or self._to_child is None:
            return
        fd = self._to_child.fileno()
        try:
            n = os.write(fd, self._out)
        except BlockingIOError:
            n = 0
        except OSError as exc:  # the child is gone
            self._fail(StoreError(f"the call writer process is gone ({exc.strerror})"))
            return
        del self._out[:n]
        if self._out and not self._writing and self._loop is not None:
            self._writing = True
            self._loop.add_writer(fd, self._writable)
        elif not self._out and self._writing and self._loop is not None:
            self._writing = False
            self._loop.remove_writer(fd)

    def _writable(self) -> None:
        self._write_some()

    def _drain_blocking(self) -> None:
        if self._to_child is None:
            return
        fd = self._to_child.fileno()
        if self._writing and self._loop is not None:
            self._loop.remove_writer(fd)
            self._writing = False
        os.set_blocking(fd, True)
        view = memoryview(bytes(self._out))
        self._out.clear()
        try:
            while view:
                view = view[os.write(fd, view):]
        except OSError as exc:
            self._fail(StoreError(f"the call writer process is gone ({exc.strerror})"))

    # -- acknowledgements -----------------------------------------------------------------
    def _acknowledged(self) -> None:
        """The loop's reader: every message the child has written."""
        conn = self._from_child
        if conn is None:
            return
        try:
            while True:
                self._receive(conn.recv())
                if self._from_child is None or not conn.poll():
                    return
        except (EOFError, OSError):
            if self._loop is not None:
                with suppress(Exception):
                    self._loop.remove_reader(conn.fileno())
            self._fail(StoreError("the call writer process ended before storing every call"))

    def _recv(self) -> Any:
        assert self._from_child is not None
        try:
            return self._from_child.recv()
        except (EOFError, OSError):
            self._fail(StoreError("the call writer process ended before storing every call"))
            return ("gone", None)

    def _receive(self, message: Any) -> None:
        kind, payload = message
        if kind == "stored":
            self._settle(int(payload))
        elif kind == "failed":
            self._fail(StoreError(str(payload)))

    def _settle(self, message: int) -> None:
        """Every message up to number `message` is stored: its calls and memos are the
        database's to serve from now on, and whoever waited for them goes on."""
        while self._inflight and self._inflight[0][0] <= message:
            _, upto, memo_keys = self._inflight.pop(0)
            self._stored = max(self._stored, upto)
            for memo_key in memo_keys:
                self._memos.pop(memo_key, None)
        upto = self._stored
        done = [k for k, (_, n) in self._pending.items() if n <= upto]
        for k in done:
            del self._pending[k]
        ready = [w for w in self._waiters if w[0] <= upto]
        if ready:
            self._waiters = [w for w in self._waiters if w[0] > upto]
            for _, future in ready:
                if not future.done():
                    future.set_result(None)

    def _fail(self, error: StoreError) -> None:
        if self._error is None:
            self._error = error
        self._fail_waiters(self._error)

    def _fail_waiters(self, error: StoreError) -> None:
        waiters, self._waiters = self._waiters, []
        for _, future in waiters:
            if not future.done():
                future.set_exception(error)

    def _raise(self) -> None:
        if self._error is not None:
            raise self._error

    # -- in the child ---------------------------------------------------------------------
    def _child(self, inbox: Connection, parents: Sequence[Connection],
               outbox: Connection) -> None:
        try:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            for conn in parents:  # else the pipe from the parent never reads end-of-file
                conn.close()
            die_with_parent(self._parent_pid)
            parent = multiprocessing.parent_process()
            pipe = ParentPipe(outbox, self._parent_pid,
                              sentinel=parent.sentinel if parent is not None else None)
        except BaseException:
            os._exit(1)
        code = 1
        try:
            self._serve(inbox, pipe)
            code = 0
        except BrokenPipeError:
            pass  # the parent has gone: nothing to tell
        except BaseException as exc:
            message = exc.message if isinstance(exc, StoreError) else \
                f"storing provider calls failed: {type(exc).__name__}: {exc}"
            with suppress(OSError):
                pipe.send(("failed", message))
        finally:
            with suppress(OSError):
                pipe.close()
            os._exit(code)  # skip the parent's inherited cleanup

    def _serve(self, inbox: Connection, pipe: ParentPipe) -> None:
        from judge.store import open_store

        store = open_store(self.store.url, busy_timeout_ms=self.store.busy_timeout_ms,
                           create=False)
        try:
            while True:
                try:
                    kind, number, records, memos = inbox.recv()
                except EOFError:  # the parent closed its end (done, or gone)
                    return
                if kind != "batch":
                    continue
                store_batch(store, records, memos)
                pipe.send(("stored", number))
        finally:
            store.close()


def store_batch(store: Store, records: Sequence[CallRecord],
                memos: Sequence[tuple[str, str]]) -> None:
    """One transaction: the calls, then the memos (which point at these or stored calls)."""
    store.calls.put_batch(records, memos)
