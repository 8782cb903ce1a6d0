"""Check the traces of many files and render their reports, in input order, in one process
or several.

`check_and_render(..., jobs=1)` checks every trace in this process. With `jobs > 1`, a big
`.jsonl` file of whole-trace lines (one trace per line) is cut into chunks of whole lines;
`jobs` worker processes each check and render a chunk, and the chunks' results are yielded
in input order as they come in, so what comes out is exactly what `jobs=1` gives. At most
`WINDOW_PER_JOB * jobs` chunks are in flight, so memory stays bounded however big the file.

What is not split stays in this process: `.json` files, files smaller than
`PARALLEL_MIN_BYTES` (a worker is not worth starting for them), and streamed traces (a
header line, then one event per line: their lines cannot be checked apart). A file that
opens with a streamed trace is read here from the start; a streamed trace met further on
(a worker stops at its header line) is read here from that line to the end of the file.

Workers are forked on Linux (they start in milliseconds and inherit the loaded scenario);
elsewhere the platform's default start method is used and the scenario is pickled to them.
They ignore SIGINT: an interrupt is the parent's to handle, and it stops them. They die
with the parent (judge.lifeline): a SIGKILLed `judge check` would otherwise leave them
waiting forever on queues whose other ends they hold themselves.
"""

from __future__ import annotations

import os
import signal
import sys
from collections import deque
from collections.abc import Generator, Iterable, Iterator
from io import FileIO
from pathlib import Path
from typing import TYPE_CHECKING

from judge.checks.output import Rendered, ReportFormat, render_report
from judge.checks.runner import Checker
from judge.errors import InputError, JudgeError
from judge.ledger.loader import LoadedScenario
from judge.trace.loader import (
    EventStream,
    JsonlChunk,
    file_lines,
    iter_event_streams,
    iter_jsonl_lines,
    split_lines,
)
from judge.trace.unique import TraceIds

if TYPE_CHECKING:  # (imported when workers start: `judge check` of a small file needs neither)
    from concurrent.futures import Future, ProcessPoolExecutor

PARALLEL_MIN_BYTES = 4 << 20
"""A `.jsonl` file smaller than this is checked in this process (see benchmarks/README.md,
"cli": below it, starting workers costs more than they save)."""
CHUNK_BYTES = 1 << 20
"""The most a chunk handed to a worker holds (whole lines: a longer line is one chunk);
a smaller file is cut into about `WINDOW_PER_JOB` chunks per worker, of at least 64 KiB."""
_MIN_CHUNK = 64 << 10
WINDOW_PER_JOB = 3
"""Chunks in flight per worker: enough that a worker finishing early finds more work."""
_PEEK_BYTES = 1 << 16

ChunkResult = tuple[list[Rendered | InputError], int | None]
"""A worker's answer: reports and bad inputs in input order, and the line of a streamed
trace's header where it stopped (None: it read the whole chunk)."""


def default_jobs() -> int:
    """The CPUs this process may run on (its affinity mask, where the OS has one)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


def check_and_render(loaded: LoadedScenario, paths: Iterable[str | Path],
                     errors: list[InputError], fmt: ReportFormat, verbose: bool = False,
                     jobs: int = 1) -> Generator[Rendered, None, None]:
    """Check every trace of every file; yield each valid trace's report rendered in `fmt`,
    in input order.

    Each bad trace or file is appended to `errors`, in input order, before the report of
    any trace after it is yielded; the other traces are still checked. Close the iterator
    (or exhaust it) to stop the workers.
    """
    checker = Checker(loaded)
    executor: ProcessPoolExecutor | None = None
    ids = TraceIds()  # trace ids are unique within the input (judge.trace.unique)
    try:
        for path in paths:
            p = Path(path)
            if jobs > 1 and _splittable(p):
                if executor is None:
                    executor = _start_workers(loaded, fmt, verbose, jobs)
                yield from _unique(_split_file(executor, WINDOW_PER_JOB * jobs, p, checker,
                                               errors, fmt, verbose), ids, errors)
            else:
                yield from _unique(_render(checker, iter_event_streams(p, errors), errors,
                                           fmt, verbose), ids, errors)
    finally:
        if executor is not None:
            # Waited for even when interrupted (the chunks the workers already hold, then
            # they end): returning while the pool's manager thread is still shutting down
            # races CPython 3.11's exit hook for process pools, which writes to a wake-up
            # pipe that thread may be closing ("Bad file descriptor" and a traceback after
            # a Ctrl-C, seen in 2 full test runs under load). Ending the workers sooner by
            # terminate() is not safe: one killed while writing its result leaves the
            # manager thread waiting forever for the rest of it.
            executor.shutdown(wait=True, cancel_futures=True)


def _render(checker: Checker, streams: Iterable[EventStream], errors: list[InputError],
            fmt: ReportFormat, verbose: bool) -> Iterator[Rendered]:
    for stream in streams:
        try:
            report = checker.check(stream)
        except InputError as exc:
            errors.append(exc)
            continue
        yield render_report(report, fmt, verbose)._replace(
            trace_id=stream.header.trace_id, file=stream.file, line=stream.line)


def _unique(rendered: Iterable[Rendered], ids: TraceIds,
            errors: list[InputError]) -> Iterator[Rendered]:
    """The reports of traces whose id is new to the input; the others are errors."""
    for r in rendered:
        duplicate = ids.add(r.trace_id, r.file, r.line)
        if duplicate is not None:
            errors.append(duplicate)
            continue
        yield r


def _splittable(p: Path) -> bool:
    """A big `.jsonl` file that opens with a whole-trace line (not a streamed trace)."""
    if p.suffix != ".jsonl":
        return False
    try:
        if not p.is_file() or p.stat().st_size < PARALLEL_MIN_BYTES:
            return False
        with p.open("rb") as fh:
            head = fh.read(_PEEK_BYTES)
    except OSError:
        return False  # the careful path says what is wrong
    first = next((line for line in split_lines(head) if not line.isspace()), b"")
    return b'"events"' in first


# -- the parent's side -------------------------------------------------------------------------

def _start_workers(loaded: LoadedScenario, fmt: ReportFormat, verbose: bool,
                   jobs: int) -> ProcessPoolExecutor:
    # A forked child flushes the stdio buffers it inherited when it exits: empty them first,
    # or output written so far would be written again.
    sys.stdout.flush()
    sys.stderr.flush()
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    method = "fork" if sys.platform == "linux" else None
    return ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context(method),
                               initializer=_init_worker,
                               initargs=(loaded, fmt, verbose, os.getpid()))


def _chunks(fh: FileIO, size: int) -> Iterator[tuple[int, int, int]]:
    """(number of its first line, start offset, end offset) of each chunk of whole lines of
    about `size` bytes (a longer line is a chunk of its own). The data is read once, into
    one buffer, to count line breaks; workers read their chunks themselves."""
    buf = bytearray(size)
    line = 1
    start = pos = 0  # the chunk's start; the offset `buf` was read from
    cr = False  # a CR in the chunk (lone CRs end lines too): count its lines the slow way
    while True:
        n = fh.readinto(buf)
        if not n:
            if pos > start:
                yield line, start, pos
            return
        cut = buf.rfind(b"\n", 0, n) + 1
        if cut == 0:  # no line ends in this block: the chunk goes on
            cr = cr or buf.find(b"\r", 0, n) >= 0
            pos += n
            continue
        end = pos + cut
        if cr or buf.find(b"\r", 0, cut) >= 0:
            fh.seek(start)
            lines = len(split_lines(fh.read(end - start)))
            fh.seek(pos + n)
        else:  # the chunk's line breaks are all in this block (`cut` is after the last)
            lines = buf.count(b"\n", 0, cut)
        yield line, start, end
        line += lines
        cr = buf.find(b"\r", cut, n) >= 0
        start, pos = end, pos + n


def _split_file(executor: ProcessPoolExecutor, window: int, p: Path, checker: Checker,
                errors: list[InputError], fmt: ReportFormat,
                verbose: bool) -> Iterator[Rendered]:
    file = str(p)
    pending: deque[tuple[Future[ChunkResult], int, int]] = deque()
    with p.open("rb", buffering=0) as fh:
        size = min(CHUNK_BYTES, max(_MIN_CHUNK, os.fstat(fh.fileno()).st_size // window))
        chunks = _chunks(fh, size)
        try:
            while True:
                for line, start, end in chunks:
                    pending.append((executor.submit(_check_chunk, file, line, start, end),
                                    line, start))
                    if len(pending) >= window:
                        break
                if not pending:
                    return
                future, line, start = pending.popleft()
                items, stopped_at = _result(future)
                for item in items:
                    if isinstance(item, InputError):
                        errors.append(item)
                    else:
                        yield item
                if stopped_at is not None:
                    break
        finally:
            for future, *_ in pending:
                future.cancel()
        # A streamed trace at `stopped_at`: it and every line after it are read here.
        fh.seek(start)
        raw = file_lines(fh)
        for _ in range(stopped_at - line):
            next(raw)
        lines = iter_jsonl_lines(raw, file, errors, stopped_at)
        yield from _render(checker, lines, errors, fmt, verbose)


def _result(future: Future[ChunkResult]) -> ChunkResult:
    from concurrent.futures.process import BrokenProcessPool

    try:
        return future.result()
    except BrokenProcessPool:
        raise JudgeError("a worker process of `judge check` died (out of memory?); "
                         "try --jobs 1") from None


# -- the worker's side -------------------------------------------------------------------------

_worker: tuple[Checker, ReportFormat, bool] | None = None


def _init_worker(loaded: LoadedScenario, fmt: ReportFormat, verbose: bool,
                 parent_pid: int) -> None:
    global _worker
    from judge.lifeline import die_with_parent

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent(parent_pid)
    _worker = (Checker(loaded), fmt, verbose)


def _check_chunk(file: str, first_line: int, start: int, end: int) -> ChunkResult:
    """Check and render the whole-trace lines of one chunk (in a worker process)."""
    assert _worker is not None, "not a worker process"
    checker, fmt, verbose = _worker
    with open(file, "rb") as fh:
        fh.seek(start)
        data = fh.read(end - start)
    errors: list[InputError] = []
    items: list[Rendered | InputError] = []
    chunk = JsonlChunk(data, file, first_line, errors)
    for rendered in _render(checker, chunk, errors, fmt, verbose):
        items += errors
        errors.clear()
        items.append(rendered)
    items += errors
    return items, chunk.stopped_at
