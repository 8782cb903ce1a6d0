"""Checks → items (and each item's rendered request) in a child process, beside grading.

Checking traces and rendering prompts is plain Python CPU work. In the grading process it
takes the GIL from the event loop that drives the provider's HTTP client, so a run pays for
it twice: in CPU, and in requests that wait. A forked child runs the Checker instead (storing
traces and items through its own database connection) and renders every request ahead; it
sends each chunk of checked traces back over a pipe, and the parent only grades. Pickling
a rendered item costs the parent about a tenth of checking and rendering it.

The child never outlives the parent (judge.lifeline): right after the fork it closes its
inherited copy of the pipe's read end (holding it, it would never see the pipe break) and
points its stdout at /dev/null (it writes nothing there, and must not hold the run's output
open), asks the kernel for SIGKILL when the parent dies (`PR_SET_PDEATHSIG`, then checks
the parent pid to close the race), and sends through a non-blocking `ParentPipe` that gives
up as soon as the parent cannot read. The parent's other descriptors (its database
connections, its event loop's) stay open but unused: closing a descriptor an inherited
object still owns would let that object close or write to a number the child reuses, and
they go when the child does, which is when the parent does at the latest.

The child ignores SIGINT (the parent decides) and exits without running the parent's
inherited cleanup (`os._exit`). It is forked before the parent starts any thread of its
own, from the thread that then waits for it. Off Linux, or with an in-memory database, the
Checker runs in the parent.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import signal
import sys
import time
import traceback
from collections.abc import AsyncIterator, Sequence
from contextlib import suppress
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any

from judge.errors import ConfigError, InputError, JudgeError, StoreError
from judge.lifeline import ParentPipe, die_with_parent
from judge.pipeline.collect import Checked, Checker, Prepare, Source, TraceChecked

if TYPE_CHECKING:
    from judge.store import Store

CHUNK_ITEMS = 48  # items per message: fewer, larger pickles share their common objects
CHUNK_SECONDS = 0.05  # ...but no record waits longer than this
_ERRORS: dict[str, type[JudgeError]] = {"StoreError": StoreError, "ConfigError": ConfigError,
                                        "InputError": InputError}


def can_fork(store: Store | None) -> bool:
    """Whether the checks can run in a forked child: on Linux (elsewhere fork is unavailable
    or, on macOS, unsafe next to system frameworks) with a database it can open on its own."""
    if not sys.platform.startswith("linux"):
        return False
    if store is None:
        return True
    return ":memory:" not in store.url and store.url not in ("sqlite://", "sqlite:///")


class CheckerProcess:
    """Runs a Checker in a forked child; `traces()` yields its TraceChecked records in the
    parent as they arrive (with `scenario` reattached), `checked` holds the totals."""

    def __init__(self, sources: Sequence[Source], store: Store | None, *,
                 errors: list[InputError], prepare: Prepare | None = None,
                 keep_events: bool = False) -> None:
        self.sources = sources
        self.store = store
        self.errors = errors
        self.prepare = prepare
        self.keep_events = keep_events
        self.checked = Checked(errors=errors)
        self._proc: multiprocessing.process.BaseProcess | None = None
        self._conn: Connection | None = None
        self._parent_pid = os.getpid()

    def parent_ends(self) -> tuple[Connection, ...]:
        """This process's end of the child's pipe, for a child forked later to close (a
        copy held elsewhere would keep the pipe from breaking when this process closes it)."""
        return (self._conn,) if self._conn is not None else ()

    @property
    def pid(self) -> int | None:
        """The child's process id (None before `start` and after `close`)."""
        return self._proc.pid if self._proc is not None else None

    def start(self) -> None:
        ctx = multiprocessing.get_context("fork")
        parent, child = ctx.Pipe(duplex=False)
        self._parent_pid = os.getpid()
        self._proc = ctx.Process(target=self._child, args=(child, parent),
                                 name="judge-checks", daemon=True)
        self._proc.start()
        child.close()
        self._conn = parent

    async def traces(self) -> AsyncIterator[TraceChecked]:
        assert self._conn is not None, "start() first"
        conn = self._conn
        loop = asyncio.get_running_loop()
        inbox: asyncio.Queue[Any] = asyncio.Queue()

        def readable() -> None:
            try:
                while True:
                    inbox.put_nowait(conn.recv())
                    if not conn.poll():
                        return
            except (EOFError, OSError):
                loop.remove_reader(conn.fileno())
                inbox.put_nowait(("gone", None))

        loop.add_reader(conn.fileno(), readable)
        try:
            while True:
                kind, payload = await inbox.get()
                if kind == "traces":
                    for tc in payload:
                        tc.scenario = self.sources[tc.source].scenario
                        self.checked.add(tc)
                        yield tc
                elif kind == "errors":
                    self.errors.extend(InputError(m) for m in payload)
                elif kind == "done":
                    return
                elif kind == "failed":
                    name, message = payload
                    error = _ERRORS.get(name)
                    if error is not None:
                        raise error(message)
                    raise RuntimeError(f"checking traces failed: {message}")
                else:
                    raise RuntimeError("the checking process ended before it was done")
        finally:
            loop.remove_reader(conn.fileno())

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        proc = self._proc
        if proc is not None:
            proc.join(timeout=5)
            if proc.is_alive():
                proc.terminate()
                proc.join(timeout=5)
            self._proc = None

    # -- in the child ---------------------------------------------------------------------
    def _child(self, conn: Connection, parents_end: Connection) -> None:
        code = 1
        try:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            parents_end.close()  # else the pipe never breaks: a full pipe blocks forever
            die_with_parent(self._parent_pid)
            _quiet_stdout()
            parent = multiprocessing.parent_process()
            pipe = ParentPipe(conn, self._parent_pid,
                              sentinel=parent.sentinel if parent is not None else None)
        except BaseException:
            os._exit(1)
        try:
            self._check(pipe)
            code = 0
        except BrokenPipeError:
            pass  # the parent has gone (ParentGone): nothing to tell
        except BaseException as exc:
            if isinstance(exc, JudgeError):
                failure = (type(exc).__name__, exc.message)
            else:
                failure = ("", f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=8)}")
            with suppress(OSError):  # the parent may have gone too
                pipe.send(("failed", failure))
        finally:
            pipe.close()
            os._exit(code)  # skip the parent's inherited cleanup (its database connections)

    def _check(self, conn: ParentPipe) -> None:
        store = None
        if self.store is not None:
            from judge.store import open_store

            store = open_store(self.store.url, busy_timeout_ms=self.store.busy_timeout_ms)
        checker = Checker(self.sources, store, errors=self.errors, prepare=self.prepare,
                          keep_events=self.keep_events)
        batch: list[TraceChecked] = []
        n_items = 0
        sent_errors = len(self.errors)
        last = time.monotonic()

        def send() -> None:
            nonlocal batch, n_items, sent_errors, last
            if len(self.errors) > sent_errors:
                conn.send(("errors", [e.message for e in self.errors[sent_errors:]]))
                sent_errors = len(self.errors)
            if batch:
                conn.send(("traces", batch))
                batch, n_items = [], 0
            last = time.monotonic()

        for tc in checker.traces():
            tc.scenario = None  # the parent has it
            batch.append(tc)
            n_items += len(tc.items)
            # the first items go at once (grading starts), then in chunks
            if n_items >= CHUNK_ITEMS or checker.checked.n_traces <= 2 \
                    or time.monotonic() - last > CHUNK_SECONDS:
                send()
        send()
        conn.send(("done", None))
        if store is not None:
            store.close()


def _quiet_stdout() -> None:
    """Point fd 1 at /dev/null (the number stays valid for whatever refers to it)."""
    with suppress(OSError):
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, 1)
        finally:
            os.close(null)
