"""A forked child's tie to its parent: it never outlives the process that forked it.

A child forked without `exec` (judge.pipeline.checkproc's checking child, the workers of
`judge check --jobs`, the fake provider server's process) inherits every descriptor of its
parent, the read end of its own result pipe included. Holding that end, it never sees the
pipe break when the parent dies: once the pipe fills, its next write blocks forever, and the
orphan keeps its memory, the database and its WAL, and the parent's output files. So a child
calls, first thing:

    die_with_parent(parent_pid)   # SIGKILL when the parent dies; exit now if it already has

and, to write to the parent, `ParentPipe` instead of `Connection.send`: the same framing
(the parent reads with `Connection.recv`), but the descriptor is non-blocking and a full
pipe is waited on with `poll` for at most `poll_s` at a time, so a send returns, or raises
`ParentGone` when the reader's end is closed, the parent's sentinel fires or the parent pid
changes. A blocked send is impossible whatever else holds the pipe open.

`PR_SET_PDEATHSIG` fires when the *thread* that forked the child ends, not the process:
fork from a thread that outlives the child (the main thread, or the one that waits for the
child). Off Linux there is no such signal; the ppid check and `ParentPipe` remain.
"""

from __future__ import annotations

import os
import select
import signal
import struct
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # (multiprocessing is imported by what forks, not by `judge check`)
    from multiprocessing.connection import Connection

_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
_SMALL = 16384  # Connection._send_bytes sends header and body in one write below this
_GONE = select.POLLERR | select.POLLHUP | select.POLLNVAL


class ParentGone(BrokenPipeError):
    """The parent that reads this pipe has died or closed its end."""


def die_with_parent(parent_pid: int, *, sig: int = signal.SIGKILL) -> bool:
    """In a freshly forked child: have the kernel send `sig` to this process when the
    thread that forked it ends (Linux), then exit at once (`os._exit(1)`) if the parent is
    already gone, since a death before the prctl goes unnoticed. Returns whether the signal
    is armed (False off Linux, or where prctl is refused)."""
    armed = False
    if sys.platform.startswith("linux"):
        import ctypes

        try:
            libc = ctypes.CDLL(None, use_errno=True)
            armed = libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0
        except (OSError, AttributeError):  # no libc symbol: keep the other safeguards
            armed = False
    if os.getppid() != parent_pid:
        os._exit(1)
    return armed


def frame_header(n: int) -> bytes:
    """The length prefix `multiprocessing.connection.Connection.recv_bytes` expects."""
    if n > 0x7FFFFFFF:
        return struct.pack("!i", -1) + struct.pack("!Q", n)
    return struct.pack("!i", n)


class ParentPipe:
    """The child's write end of a pipe whose reader is the parent (see the module doc).

    `conn`: the write end (it is made non-blocking and owned from now on); `sentinel`: a
    descriptor that becomes readable when the parent dies (multiprocessing's
    `parent_process().sentinel`), optional."""

    def __init__(self, conn: Connection, parent_pid: int, *, sentinel: int | None = None,
                 poll_s: float = 1.0) -> None:
        from multiprocessing.reduction import ForkingPickler

        self._dumps = ForkingPickler.dumps
        self.conn = conn
        self.fd = conn.fileno()
        self.parent_pid = parent_pid
        self.sentinel = sentinel
        self.poll_ms = max(1, int(poll_s * 1000))
        os.set_blocking(self.fd, False)
        self._poll = select.poll()
        self._poll.register(self.fd, select.POLLOUT)
        if sentinel is not None:
            self._poll.register(sentinel, select.POLLIN)

    def send(self, obj: Any) -> None:
        """Pickle `obj` and write it whole (raises ParentGone if the parent cannot read)."""
        body = self._dumps(obj)
        n = len(body)
        if n <= _SMALL:
            self._write(frame_header(n) + body)
        else:
            self._write(frame_header(n))
            self._write(body)

    def _write(self, data: bytes | memoryview) -> None:
        view = memoryview(data).cast("B")
        while view:
            try:
                written = os.write(self.fd, view)
            except BlockingIOError:
                self._wait()
                continue
            except BrokenPipeError:
                raise ParentGone("the parent closed its end of the pipe") from None
            view = view[written:]

    def _wait(self) -> None:
        """Until there is room in the pipe; ParentGone as soon as there is no reader."""
        for fd, events in self._poll.poll(self.poll_ms):
            if fd == self.fd and events & _GONE:
                raise ParentGone("the parent closed its end of the pipe")
            if fd == self.sentinel:
                raise ParentGone("the parent process ended")
        if os.getppid() != self.parent_pid:
            raise ParentGone("the parent process ended")

    def close(self) -> None:
        self.conn.close()
