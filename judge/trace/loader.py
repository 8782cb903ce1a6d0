"""Load traces from `.json` (one trace) and `.jsonl` (one trace per line), streaming.

A `.jsonl` file may also hold *streamed* traces (an extension of formats §1 for very long
traces): a header line with every trace field except `events`, followed by one event object
per line, until the next header. Memory then stays flat however long the trace grows.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from judge.errors import InputError
from judge.trace.document import check_document
from judge.trace.fast import parse_trace_json, validate_event_json
from judge.trace.files import unusable_file
from judge.trace.model import Event, PositionState, Trace, TraceHeader


def format_loc(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def first_error(exc: ValidationError) -> Any:
    """The error to show: an unknown (typo'd) field first, else the first one."""
    errs = exc.errors()
    return next((e for e in errs if e["type"] == "extra_forbidden"), errs[0])


def validation_error(
    exc: ValidationError, file: str, line: int | None = None, prefix: str = ""
) -> InputError:
    """Turn the first pydantic error into a one-line InputError naming the field."""
    err = first_error(exc)
    loc = tuple(x for x in err["loc"] if not (isinstance(x, str) and x.startswith("function-")))
    path = format_loc(loc)
    if prefix:
        path = f"{prefix}.{path}" if path else prefix
    msg = err["msg"]
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, ") :]
    if err["type"] == "extra_forbidden":
        msg = "unknown field (not in the format; check its spelling)"
    return InputError(msg, file=file, line=line, path=path or None)


def _parse_trace(obj: Any, file: str, line: int | None) -> Trace:
    if not isinstance(obj, dict):
        raise InputError("expected a trace object", file=file, line=line)
    try:
        return Trace.model_validate(obj)
    except ValidationError as exc:
        raise validation_error(exc, file, line) from None
    except ValueError as exc:  # seq ordering raised during filling
        raise InputError(str(exc), file=file, line=line) from None


def parse_json(text: str, file: str, line: int | None) -> Any:
    """json.loads with a one-line InputError naming the file and line on malformed input,
    and on what the fast parser refuses but json.loads reads (judge.trace.document)."""
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"malformed JSON ({exc.msg} at column {exc.colno})", file=file,
                         line=line if line is not None else exc.lineno) from None
    except RecursionError:
        raise InputError("malformed JSON (nested too deeply)", file=file, line=line) from None
    except ValueError as exc:  # an integer too long for Python to convert
        raise InputError(f"malformed JSON ({exc})", file=file, line=line) from None
    check_document(obj, file, line, text)
    return obj


_loads = parse_json


@dataclass
class TraceStream:
    """A trace header and a lazy iterator over its events (exhaust it before the next)."""

    header: TraceHeader
    events: Iterator[Event]
    file: str
    line: int | None


def iter_trace_streams(
    path: str | Path, errors: list[InputError] | None = None
) -> Iterator[TraceStream]:
    """Yield each trace of a file as a header plus a lazy event iterator.

    With `errors` given, a bad trace is recorded there and skipped; without it, raised.
    """
    file = str(path)
    p = Path(path)
    problem = unusable_file(p)
    if problem is not None:
        _fail(InputError(problem, file=file), errors)
        return
    if p.suffix == ".json":
        try:
            text = p.read_text(encoding="utf-8")
            if not text or text.isspace():
                raise InputError(EMPTY, file=file)
            trace = parse_trace_json(text) or _parse_trace(_loads(text, file, None), file, None)
        except UnicodeDecodeError as exc:
            _fail(InputError(f"not UTF-8 text ({exc.reason} at byte {exc.start})", file=file),
                  errors)
            return
        except OSError as exc:
            _fail(InputError(f"cannot read ({exc.strerror})", file=file), errors)
            return
        except InputError as exc:
            _fail(exc, errors)
            return
        yield TraceStream(_header_of(trace), iter(trace.events), file, None)
        return
    if p.suffix != ".jsonl":
        _fail(InputError("expected a .json or .jsonl trace file", file=file), errors)
        return
    yield from _not_empty(_iter_jsonl(p, file, errors), file, errors)


EMPTY = "no trace in the file (it is empty)"


def _not_empty(streams: Iterator[TraceStream], file: str,
               errors: list[InputError] | None) -> Iterator[TraceStream]:
    """`streams`, then an error if the file held no trace and no error was found in it (a
    file with no trace is bad input, not a check that passed); an unreadable file too."""
    before = len(errors) if errors is not None else 0
    found = False
    try:
        for stream in streams:
            found = True
            yield stream
    except OSError as exc:
        _fail(InputError(f"cannot read ({exc.strerror})", file=file), errors)
        return
    if not found and (errors is None or len(errors) == before):
        _fail(InputError(EMPTY, file=file), errors)


def _header_of(trace: Trace) -> TraceHeader:
    """The header of a validated trace (its fields are valid already)."""
    return TraceHeader.model_construct(trace_id=trace.trace_id, scenario=trace.scenario,
                                       candidate=trace.candidate, metadata=trace.metadata)


class _Lines:
    """A file's lines with one line of push-back, numbered from 1."""

    def __init__(self, fh: Iterable[str], file: str = "<input>") -> None:
        self.it = iter(fh)
        self.file = file
        self._pushed: tuple[int, str] | None = None
        self.lineno = 0

    def take_pushed(self) -> tuple[int, str] | None:
        item, self._pushed = self._pushed, None
        return item

    def next(self) -> tuple[int, str] | None:
        if self._pushed is not None:
            item, self._pushed = self._pushed, None
            return item
        try:
            for raw in self.it:
                self.lineno += 1
                if not raw.isspace():  # (no copy of a long line, unlike strip)
                    return self.lineno, raw
        except UnicodeDecodeError as exc:
            raise self.broken(exc) from None
        return None

    def broken(self, exc: UnicodeDecodeError) -> InputError:
        """The file is not UTF-8 from the next line on: stop reading it and say where."""
        self.it = iter(())
        self._pushed = None
        return InputError(f"cannot decode as UTF-8 at or after this line ({exc.reason})",
                          file=self.file, line=self.lineno + 1)

    def push(self, item: tuple[int, str]) -> None:
        self._pushed = item


def _iter_jsonl(p: Path, file: str, errors: list[InputError] | None) -> Iterator[TraceStream]:
    with p.open(encoding="utf-8") as fh:
        lines = _Lines(fh, file)
        while True:
            try:
                item = lines.next()
            except InputError as exc:  # not UTF-8: the rest of the file is unreadable
                _fail(exc, errors)
                return
            if item is None:
                return
            lineno, raw = item
            if '"events"' in raw:  # a whole trace on one line: the fast path first
                fast = parse_trace_json(raw)
                if fast is not None:
                    yield TraceStream(_header_of(fast), iter(fast.events), file, lineno)
                    continue
            try:
                obj = _loads(raw, file, lineno)
                if isinstance(obj, dict) and "kind" in obj and "trace_id" not in obj:
                    raise InputError("event line without a preceding trace header line",
                                     file=file, line=lineno)
                if isinstance(obj, dict) and "events" not in obj:
                    try:
                        header = TraceHeader.model_validate(obj)
                    except ValidationError as exc:
                        raise validation_error(exc, file, lineno) from None
                    stream = _StreamedEvents(lines, file, errors)
                    yield TraceStream(header, iter(stream), file, lineno)
                    stream.drain()
                    continue
                trace = _parse_trace(obj, file, lineno)
            except InputError as exc:
                _fail(exc, errors)
                if '"events"' not in raw:  # a bad header (or stray event): its events go
                    _StreamedEvents(lines, file, None).drain()  # with it, one error for all
                continue
            yield TraceStream(_header_of(trace), iter(trace.events), file, lineno)


class _StreamedEvents:
    """Events of a streamed trace: one per line until the next header line."""

    def __init__(self, lines: _Lines, file: str, errors: list[InputError] | None) -> None:
        self._lines = lines
        self._file = file
        self._errors = errors
        self._state = PositionState()
        self._done = False

    def __iter__(self) -> Iterator[Event]:
        lines = self._lines
        validate_json = validate_event_json
        fill = self._state.fill
        try:
            while not self._done:
                item = lines.take_pushed()
                if item is None:
                    # Fast path: straight from the file; a line that is not a header is parsed
                    # and validated in one go by pydantic-core. Anything else (a header, a bad
                    # line) leaves the loop for the slow path, which words the exact error.
                    for raw in lines.it:
                        lines.lineno += 1
                        if raw.isspace():
                            continue
                        if '"trace_id"' not in raw:
                            try:
                                ev: Event = validate_json(raw)
                            except ValidationError:
                                pass
                            else:
                                try:
                                    fill(ev)
                                except ValueError as exc:
                                    raise InputError(str(exc), file=self._file,
                                                     line=lines.lineno) from None
                                yield ev
                                continue
                        item = (lines.lineno, raw)
                        break
                    else:
                        break
                slow = self._slow(item)
                if slow is None:
                    lines.push(item)
                    break
                yield slow
        except UnicodeDecodeError as exc:
            self._done = True
            raise lines.broken(exc) from None
        self._done = True

    def _slow(self, item: tuple[int, str]) -> Event | None:
        """Parse one line the careful way: None for a header line, else the event or an
        InputError naming the file, line and field."""
        lineno, raw = item
        obj = _loads(raw, self._file, lineno)
        if not (isinstance(obj, dict) and "kind" in obj and "trace_id" not in obj):
            return None
        try:
            ev = Event.model_validate(obj)
            self._state.fill(ev)
        except ValidationError as exc:
            raise validation_error(exc, self._file, lineno) from None
        except ValueError as exc:
            raise InputError(str(exc), file=self._file, line=lineno) from None
        return ev

    def drain(self) -> None:
        """Skip the rest of this trace's events (after an error, without raising again)."""
        while not self._done:
            try:
                for _ in self:
                    pass
            except InputError:
                continue


def _fail(exc: InputError, errors: list[InputError] | None) -> None:
    if errors is None:
        raise exc
    errors.append(exc)


def iter_traces(path: str | Path, errors: list[InputError] | None = None) -> Iterator[Trace]:
    """Yield each trace of a file, fully materialized."""
    for stream in iter_trace_streams(path, errors):
        try:
            events = list(stream.events)
        except InputError as exc:
            _fail(exc, errors)
            continue
        trace = Trace.model_construct(**stream.header.model_dump(), events=events)
        yield trace


def load_traces(
    paths: Iterable[str | Path], errors: list[InputError] | None = None
) -> list[Trace]:
    """Load every trace of every file; bad traces go to `errors` when it is given."""
    out: list[Trace] = []
    for path in paths:
        out.extend(iter_traces(path, errors))
    return out
