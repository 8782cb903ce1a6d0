"""Trace ids are unique within one input to `check`, `grade` and `run`.

Two traces under one id would share their items (`<trace_id>#<seq>:<rubric>`) and their
stored rows: one trace's veto would stand over the other's items, one's labels over the
other's verdicts. So the second trace with an id already seen in the input is bad input
(InputError naming both places: file and line of each), left out, and the command exits 2;
the first is checked as usual.

`remember_place` records where the loader read a `Trace` (kept only while the trace lives),
so that checks further down the flow can name it without the loader's help.
"""

from __future__ import annotations

import weakref
from typing import Any

from judge.errors import InputError

Place = tuple[str, int | None]
_PLACES: dict[int, Place] = {}


def remember_place(trace: Any, file: str, line: int | None) -> None:
    """Record where `trace` was read (forgotten when the trace is)."""
    key = id(trace)
    _PLACES[key] = (file, line)
    weakref.finalize(trace, _PLACES.pop, key, None)


def place_of(trace: Any) -> Place | None:
    return _PLACES.get(id(trace))


def _shown(place: Place) -> str:
    file, line = place
    return f"{file}:{line}" if line is not None else file


class TraceIds:
    """The trace ids one input has given so far, and where each came first."""

    def __init__(self) -> None:
        self._first: dict[str, Place] = {}

    def add(self, trace_id: str, file: str, line: int | None) -> InputError | None:
        """None for a new id; the InputError (naming both places) for one seen before."""
        first = self._first.get(trace_id)
        if first is None:
            self._first[trace_id] = (file, line)
            return None
        return InputError(f"trace id {trace_id!r} used twice in the input (first at "
                          f"{_shown(first)}): trace ids must be unique, or one trace's "
                          "findings and verdicts would stand for the other's",
                          file=file, line=line, field="trace_id")
