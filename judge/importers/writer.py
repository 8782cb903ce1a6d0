"""Write traces to a `.jsonl` file as they are produced (one trace per line)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path

from judge.errors import InputError
from judge.outputs import check_output, is_special, write_output
from judge.safe_text import json_safe
from judge.trace.model import Trace


def trace_line(trace: Trace) -> str:
    """One trace as a compact JSON line (absent optional fields left out)."""
    return json.dumps(trace.model_dump(mode="json", exclude_none=True), ensure_ascii=False,
                      separators=(",", ":"))


def write_traces(traces: Iterable[Trace], out: str | Path) -> int:
    """Stream `traces` to `out` and return how many were written (see `write_trace_lines`)."""
    return write_trace_lines(([trace_line(t) + "\n"] for t in traces), out)


def write_trace_lines(traces: Iterable[Iterable[str]], out: str | Path) -> int:
    """Stream traces, each given as its lines ("\n" included), to `out` and return how
    many were written.

    A file appears only when every trace converted: a bad record leaves no half-written
    output behind (judge.outputs: atomic for a regular file, nothing temporary survives;
    in place for a device, a FIFO or "-" for standard output).
    """
    check_output(out)  # a directory or a missing parent first: the clearer message
    if Path(out).suffix != ".jsonl" and not is_special(out):
        raise InputError("the output of an import is a .jsonl trace file", file=str(out))
    n = 0

    def lines() -> Iterator[str]:
        nonlocal n
        for trace in traces:
            for line in trace:
                body = line[:-1] if line.endswith("\n") else line
                # C1, U+2028…: \u escapes, same data (the common line has none: as it is)
                yield line if body.isprintable() else json_safe(line)
            n += 1

    write_output(out, lines())
    return n
