"""Write traces to a `.jsonl` file as they are produced (one trace per line)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

from judge.errors import InputError
from judge.trace.model import Trace


def trace_line(trace: Trace) -> str:
    """One trace as a compact JSON line (absent optional fields left out)."""
    return json.dumps(trace.model_dump(mode="json", exclude_none=True), ensure_ascii=False,
                      separators=(",", ":"))


def write_traces(traces: Iterable[Trace], out: str | Path) -> int:
    """Stream `traces` to `out` and return how many were written.

    The file appears only when every trace converted: a bad record leaves no half-written
    output behind (the partial file is removed and the InputError propagates).
    """
    target = Path(out)
    if target.suffix != ".jsonl":
        raise InputError("the output of an import is a .jsonl trace file", file=str(out))
    tmp = target.with_name(f".{target.name}.partial")
    n = 0
    try:
        with tmp.open("w", encoding="utf-8") as fh:
            for trace in traces:
                fh.write(trace_line(trace))
                fh.write("\n")
                n += 1
        os.replace(tmp, target)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise InputError(f"cannot write ({exc.strerror})", file=str(out)) from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return n
