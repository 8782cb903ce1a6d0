"""What every importer hands on: a trace header and its events as a lazy stream, and the
writer that validates and writes them (`.jsonl`, atomically, with flat memory).

A trace whose events fit in `BUFFER_EVENTS` is written as one line (formats §1); a longer
one in the streamed form the loader also reads (a header line, then one event per line), so
neither the importer nor the writer ever holds a long trace whole.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from pydantic import ValidationError

from judge.errors import InputError
from judge.importers.writer import write_trace_lines
from judge.trace.loader import validation_error
from judge.trace.model import Event, PositionState, Trace, TraceHeader

BUFFER_EVENTS = 2000


@dataclass
class ImportedTrace:
    """One converted trace: `header` has every trace field but `events`, which is lazy."""

    header: dict[str, Any]
    events: Iterator[dict[str, Any]]
    file: str

    def materialize(self) -> Trace:
        """The whole trace, validated (for tests, small files and the suite loader)."""
        _, events = _validated(self)
        evs = list(events)
        header = _header(self)  # again: metadata an importer fills as its events stream
        return Trace.model_construct(**header.model_dump(), events=evs)


def _where(trace_id: str, ev: dict[str, Any]) -> str:
    md = ev.get("metadata")
    if not isinstance(md, dict):
        md = {}
    src = md.get("source_span_id") or md.get("source_run_id") or md.get("source_message")
    return f"trace {trace_id}" + (f", source {src}" if src is not None else "")


def _header(t: ImportedTrace) -> TraceHeader:
    try:
        return TraceHeader.model_validate(t.header)
    except ValidationError as exc:
        raise validation_error(exc, t.file) from None


def _validated(t: ImportedTrace) -> tuple[TraceHeader, Iterator[Event]]:
    header = _header(t)

    def events() -> Iterator[Event]:
        state = PositionState()
        for ev in t.events:
            try:
                event = Event.model_validate(ev)
                state.fill(event)
            except ValidationError as exc:
                raise validation_error(exc, t.file, None, _where(header.trace_id, ev)) from None
            except ValueError as exc:
                raise InputError(str(exc), file=t.file, path=_where(header.trace_id, ev)) \
                    from None
            yield event

    return header, events()


def _dump(obj: dict[str, Any]) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def _event_dict(ev: Event) -> dict[str, Any]:
    return ev.model_dump(mode="json", exclude_none=True)


def trace_lines(t: ImportedTrace) -> Iterator[str]:
    """Validate one trace and give its lines: one, or header + event lines when long."""
    _, events = _validated(t)
    buffered: list[dict[str, Any]] = []
    streaming = False
    for ev in events:
        d = _event_dict(ev)
        if streaming:
            yield _dump(d) + "\n"
            continue
        buffered.append(d)
        if len(buffered) > BUFFER_EVENTS:
            streaming = True
            yield _dump(_head(t)) + "\n"
            for b in buffered:
                yield _dump(b) + "\n"
            buffered = []
    if not streaming:
        yield _dump({**_head(t), "events": buffered}) + "\n"


def write_one(t: ImportedTrace, fh: IO[str]) -> None:
    """Validate one trace and write it to `fh` (see `trace_lines`)."""
    for line in trace_lines(t):
        fh.write(line)


def _head(t: ImportedTrace) -> dict[str, Any]:
    """The header as written: dumped when it is written, since an importer may add to its
    metadata while the events stream (e.g. the system prompts it kept out of them)."""
    return _header(t).model_dump(mode="json", exclude_none=True)


def write_imported(traces: Iterable[ImportedTrace], out: str | Path) -> int:
    """Stream `traces` to `out` (`.jsonl`, a device, a FIFO or "-") and return how many were
    written (judge.importers.writer.write_trace_lines: all or nothing for a regular file)."""
    return write_trace_lines((trace_lines(t) for t in traces), out)
