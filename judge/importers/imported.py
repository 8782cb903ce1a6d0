"""What every importer hands on: a trace header and its events as a lazy stream, and the
writer that validates and writes them (`.jsonl`, atomically, with flat memory).

A trace whose events fit in `BUFFER_EVENTS` is written as one line (formats §1); a longer
one in the streamed form the loader also reads (a header line, then one event per line), so
neither the importer nor the writer ever holds a long trace whole.

What the writer does to keep every trace it writes one that `judge check` reads (each noted
in the `ImportLog`; `--strict` refuses instead): a string that is not Unicode (a lone
surrogate, from a `\\ud800` escape) has it replaced by U+FFFD; an event nested deeper than
the loader reads is left out; a trace with no events is not written; a trace id written
before gets `/dup-N`. A file that yields no event at all is bad input ("nothing to
import"), never an empty output and exit 0.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from pydantic import ValidationError

from judge.errors import InputError
from judge.importers.report import ImportLog
from judge.importers.writer import write_trace_lines
from judge.trace.document import MAX_DEPTH, deep_path, too_deep, unencodable_path
from judge.trace.loader import validation_error
from judge.trace.model import Event, PositionState, Trace, TraceHeader

BUFFER_EVENTS = 2000
_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass
class ImportedTrace:
    """One converted trace: `header` has every trace field but `events`, which is lazy.
    `omitted` counts what the source held that no event carries (filled as events stream)."""

    header: dict[str, Any]
    events: Iterator[dict[str, Any]]
    file: str
    omitted: Counter[str] = field(default_factory=Counter)

    def materialize(self, log: ImportLog | None = None) -> Trace:
        """The whole trace, validated (for tests, small files and the suite loader)."""
        _, events = _validated(self, log or ImportLog(self.file), repair=True)
        evs = list(events)
        header = _header(self)  # again: metadata an importer fills as its events stream
        return Trace.model_construct(**header.model_dump(), events=evs)


def _where(trace_id: str, ev: dict[str, Any]) -> str:
    md = ev.get("metadata")
    if not isinstance(md, dict):
        md = {}
    src = next((md[k] for k in ("source_span_id", "source_run_id", "source_event_id",
                                "source_message_id", "source_message", "source_record")
                if md.get(k) is not None), None)
    return f"trace {trace_id}" + (f", source {src}" if src is not None else "")


def _header(t: ImportedTrace) -> TraceHeader:
    try:
        return TraceHeader.model_validate(repaired(t.header)[0])
    except ValidationError as exc:
        raise validation_error(exc, t.file) from None


def repaired(value: Any) -> tuple[Any, str | None]:
    """`value` with every lone surrogate replaced by U+FFFD, and the path of the first one
    (None: there was none)."""
    where = unencodable_path(value)
    if where is None:
        return value, None
    return _replace(value), where


def _replace(value: Any) -> Any:
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {_replace(k): _replace(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_replace(v) for v in value]
    return value


def _validated(t: ImportedTrace, log: ImportLog,
               repair: bool = False) -> tuple[TraceHeader, Iterator[Event]]:
    """The header and the events, validated; `repair`: lone surrogates replaced here (the
    writer looks for them in the line it writes instead, which costs less)."""
    header = _header(t)

    def events() -> Iterator[Event]:
        state = PositionState()
        for ev in t.events:
            where = _where(header.trace_id, ev)
            if too_deep(ev, MAX_DEPTH - 2):  # its trace line nests it two levels down
                log.problem(f"nested deeper than {MAX_DEPTH} levels: the event is left out",
                            where=where, fld=deep_path(ev, MAX_DEPTH - 2) or None)
                continue
            if repair:
                ev, path = repaired(ev)
                if path is not None:
                    _repair_note(log, where, path)
            try:
                event = Event.model_validate(ev)
                state.fill(event)
            except ValidationError as exc:
                raise validation_error(exc, t.file, None, where) from None
            except ValueError as exc:
                raise InputError(str(exc), file=t.file, path=where) from None
            yield event

    return header, events()


def _repair_note(log: ImportLog, where: str, path: str) -> None:
    log.problem("not Unicode text (a lone surrogate, from a \\ud800-\\udfff escape): "
                "replaced by U+FFFD", where=where, fld=path or None, action="repaired")


def _dump(obj: dict[str, Any]) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def _event_dict(ev: Event) -> dict[str, Any]:
    return ev.model_dump(mode="json", exclude_none=True)


class _Writer:
    """Validates and writes the traces of one import, counting into its log."""

    def __init__(self, log: ImportLog) -> None:
        self.log = log
        self.ids: Counter[str] = Counter()

    def trace_lines(self, t: ImportedTrace) -> Iterator[str]:
        """Validate one trace and give its lines: one, or header + event lines when long."""
        _, events = _validated(t, self.log)
        kinds: Counter[str] = Counter()
        buffered: list[str] = []  # event lines, until the trace is known to be long
        streaming = False
        for ev in events:
            kinds[ev.kind.value] += 1
            d = _event_dict(ev)
            line = _dump(d)
            if _SURROGATE.search(line):
                d, path = repaired(d)
                _repair_note(self.log, _where(str(t.header.get("trace_id")), d), path or "")
                line = _dump(d)
            if streaming:
                yield line + "\n"
                continue
            buffered.append(line)
            if len(buffered) > BUFFER_EVENTS:
                streaming = True
                yield _dump(self._head(t)) + "\n"
                for b in buffered:
                    yield b + "\n"
                buffered = []
        self.log.omitted.update(t.omitted)
        if not streaming:
            if not buffered:
                tid = str(t.header.get("trace_id"))
                self.log.note("the trace has no events (nothing of it is a user turn, "
                              "model output, tool call or tool result): not written",
                              where=f"trace {tid}", action="skipped")
                return
            head = _dump(self._head(t))
            parts = [head[:-1], ',"events":[']
            for k, line in enumerate(buffered):
                parts += (",", line) if k else (line,)
            parts.append("]}\n")
            buffered = []
            yield "".join(parts)  # (one copy of the trace, not two)
        self.log.traces += 1
        self.log.events.update(kinds)

    def _head(self, t: ImportedTrace) -> dict[str, Any]:
        """The header as written: dumped when it is written, since an importer may add to
        its metadata while the events stream (e.g. the system prompts it kept out of them).
        A trace id written before in this import is made unique (noted)."""
        head = _header(t).model_dump(mode="json", exclude_none=True)
        tid = head["trace_id"]
        self.ids[tid] += 1
        if self.ids[tid] > 1:
            new = f"{tid}/dup-{self.ids[tid]}"
            while new in self.ids:
                self.ids[tid] += 1
                new = f"{tid}/dup-{self.ids[tid]}"
            self.ids[new] += 1
            self.log.problem(f"trace id {tid!r} given twice in the input: this one is "
                             f"written as {new!r}", where=f"trace {tid}", action="renamed")
            head["trace_id"] = new
        return head


def trace_lines(t: ImportedTrace, log: ImportLog | None = None) -> Iterator[str]:
    """Validate one trace and give its lines (see `_Writer.trace_lines`)."""
    return _Writer(log or ImportLog(t.file)).trace_lines(t)


def write_one(t: ImportedTrace, fh: IO[str]) -> None:
    """Validate one trace and write it to `fh` (see `trace_lines`)."""
    for line in trace_lines(t):
        fh.write(line)


def nothing_imported(log: ImportLog) -> InputError:
    """The error for a file that gave no event: why, in one line."""
    first = log.notes[0] if log.notes else None
    why = f"; first problem: {first.text()}" if first is not None else ""
    extra = f" ({len(log.notes)} problems, --report FILE lists them)" \
        if len(log.notes) > 1 else ""
    return InputError(f"nothing to import: no user turn, model output, tool call or tool "
                      f"result in the file{why}{extra}", file=log.file)


def write_imported(traces: Iterable[ImportedTrace], out: str | Path,
                   log: ImportLog | None = None) -> int:
    """Stream `traces` to `out` (`.jsonl`, a device, a FIFO or "-") and return how many were
    written (judge.importers.writer.write_trace_lines: all or nothing for a regular file).
    A file that gives no event at all is an InputError ("nothing to import")."""
    writer: _Writer | None = None

    def all_lines() -> Iterator[Iterable[str]]:
        nonlocal writer
        for t in traces:
            if writer is None:
                writer = _Writer(log if log is not None else ImportLog(t.file))
            lines = list_or_stream(writer.trace_lines(t))
            if lines is not None:
                yield lines
        if writer is None or writer.log.traces == 0:
            raise nothing_imported(writer.log if writer is not None else
                                   (log if log is not None else ImportLog(str(out))))

    return write_trace_lines(all_lines(), out)


def list_or_stream(lines: Iterator[str]) -> Iterable[str] | None:
    """The lines of one trace, or None when it writes none (a trace with no events): the
    first line is read ahead to know."""
    first = next(lines, None)
    if first is None:
        return None

    def rest() -> Iterator[str]:
        yield first
        yield from lines

    return rest()
