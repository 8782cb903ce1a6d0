"""The processes a command started, from /proc, and whether they have all ended.

    tracked = Tracked()
    tracked.record(proc.pid)          # the command and its descendants now (repeat freely)
    os.kill(proc.pid, signal.SIGKILL)
    left = tracked.wait_gone(deadline)   # [] once every recorded process has exited
    tracked.close()                   # kills any left (no orphan of a failed test)

Each recorded process is pinned by a pidfd (Linux 5.3+), so a pid reused after it exits is
never mistaken for it, and `wait_gone` sleeps in `poll` until the kernel reports each exit
(a zombie has exited: it holds no memory, descriptor or lock) or the deadline passes.
"""

from __future__ import annotations

import os
import select
import signal
import time
from contextlib import suppress
from pathlib import Path


def stat_of(pid: int) -> tuple[int, int, str] | None:
    """(parent pid, start time in clock ticks, state) of `pid`, None if it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()
    return int(fields[1]), int(fields[19]), fields[0]


def descendants(pid: int) -> dict[int, int]:
    """Every living descendant of `pid` (children, theirs, ...): pid -> start time."""
    parents: dict[int, list[tuple[int, int]]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        st = stat_of(int(entry.name))
        if st is not None and st[2] not in ("Z", "X"):
            parents.setdefault(st[0], []).append((int(entry.name), st[1]))
    found: dict[int, int] = {}
    todo = [pid]
    while todo:
        for child, start in parents.get(todo.pop(), ()):
            if child not in found:
                found[child] = start
                todo.append(child)
    return found


class Tracked:
    """Processes recorded while a command runs (see the module doc)."""

    def __init__(self) -> None:
        self.fds: dict[int, int] = {}  # pid -> pidfd
        self.names: dict[int, str] = {}

    def add(self, pid: int, start: int | None = None) -> None:
        if pid in self.fds:
            return  # (a name read while it was exec-ing is read again by refresh_names)
        try:
            fd = os.pidfd_open(pid)
        except ProcessLookupError:
            return  # already gone
        st = stat_of(pid)
        if st is None or (start is not None and st[1] != start):
            os.close(fd)  # it ended and its pid went to another process: not ours
            return
        self.fds[pid] = fd
        self.names[pid] = _cmdline(pid) or "?"

    def refresh_names(self) -> None:
        """Read the command line of every recorded process still alive again. A name read
        right after a fork or an exec can be stale: the kernel fills in a new program's
        argv only after `Popen` has returned (an empty name), and a child about to exec
        another program still has its parent's command line."""
        for pid, fd in self.fds.items():
            if not _exited(fd, 0):
                self.names[pid] = _cmdline(pid) or self.names[pid]

    def record(self, root: int) -> set[int]:
        """Add `root` and its descendants now; returns the descendants' pids."""
        self.add(root)
        kids = descendants(root)
        for pid, start in kids.items():
            self.add(pid, start)
        return set(kids)

    def alive(self) -> list[int]:
        return [pid for pid, fd in self.fds.items() if not _exited(fd, 0)]

    def wait_gone(self, deadline: float) -> list[int]:
        """Wait until every recorded process has exited or `deadline` (time.monotonic)
        passes; returns those still alive."""
        left = dict(self.fds)
        while left:
            poller = select.poll()
            for fd in left.values():
                poller.register(fd, select.POLLIN)
            timeout_ms = max(0, int((deadline - time.monotonic()) * 1000))
            ready = {fd for fd, _ in poller.poll(timeout_ms)}
            left = {pid: fd for pid, fd in left.items() if fd not in ready}
            if not ready:
                break  # the deadline passed
        return sorted(left)

    def describe(self, pids: list[int]) -> str:
        return "; ".join(f"{pid} [{stat_of(pid)}] {self.names.get(pid, '?')}" for pid in pids)

    def close(self) -> None:
        """Kill what is still alive (a failed test leaves no orphan), release the pidfds."""
        for fd in self.fds.values():
            if not _exited(fd, 0):
                with suppress(OSError):
                    signal.pidfd_send_signal(fd, signal.SIGKILL)
            os.close(fd)
        self.fds.clear()


def _cmdline(pid: int) -> str:
    """A process's command line, as one string ("" while it is being exec'd or once gone)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes() \
            .replace(b"\0", b" ").decode(errors="replace").strip()[:200]
    except OSError:
        return ""


def _exited(pidfd: int, timeout_ms: int) -> bool:
    poller = select.poll()
    poller.register(pidfd, select.POLLIN)
    return bool(poller.poll(timeout_ms))
