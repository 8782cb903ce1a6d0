"""Load traces from `.json` (one trace) and `.jsonl` (one trace per line), streaming.

A `.jsonl` file may also hold *streamed* traces (an extension of formats §1 for very long
traces): a header line with every trace field except `events`, followed by one event object
per line, until the next header. Memory then stays flat however long the trace grows.

Lines are read as bytes and cut as text mode would cut them (`\n`, `\r\n` or a lone `\r`),
then decoded one at a time: a line that is not UTF-8 is one error naming that line, and the
lines after it are still read. `JsonlChunk` reads the whole-trace lines of a piece of such
a file exactly as reading the whole file would (what `judge check --jobs N` hands to its
worker processes), stopping at the first streamed trace.

`iter_trace_streams` gives each event as an `Event`; `iter_event_streams` (what the checks
read) as an `EventData` dict, built a third faster: the same reading, lines, errors and
rules (`judge.trace.fast`), only what the events are made into differs (`_Reader`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Generic, TypeVar, cast

from pydantic import ValidationError

from judge.errors import InputError
from judge.trace.document import check_document
from judge.trace.fast import (
    header_of,
    parse_trace_data,
    parse_trace_json,
    validate_event_data_json,
    validate_event_json,
)
from judge.trace.files import unusable_file
from judge.trace.model import Event, EventData, PositionState, Trace, TraceHeader
from judge.trace.unique import remember_place


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


@dataclass
class EventStream:
    """`TraceStream` with each event an `EventData` dict (what the checks read)."""

    header: TraceHeader
    events: Iterator[EventData]
    file: str
    line: int | None


E = TypeVar("E", Event, EventData)
S = TypeVar("S", TraceStream, EventStream)


@dataclass(frozen=True)
class _Reader(Generic[E, S]):
    """What the events of a file are made into, by the one reading of it."""

    whole: Callable[[str | bytes], tuple[TraceHeader, list[E]] | None]  # fast, or None
    events_of: Callable[[Trace], list[E]]  # of a trace validated the careful way
    event: Callable[[str | bytes], E]  # one event line, fast (raises ValidationError)
    from_model: Callable[[Event], E]  # one event validated the careful way
    fill: Callable[[PositionState], Callable[[E], None]]
    stream: Callable[[TraceHeader, Iterator[E], str, int | None], S]


def _whole_models(text: str | bytes) -> tuple[TraceHeader, list[Event]] | None:
    trace = parse_trace_json(text)
    return None if trace is None else (header_of(trace), trace.events)


def _data_of(trace: Trace) -> list[EventData]:
    return [cast(EventData, vars(ev)) for ev in trace.events]


_MODELS: _Reader[Event, TraceStream] = _Reader(
    _whole_models, lambda t: t.events, validate_event_json, lambda ev: ev,
    lambda state: state.fill, TraceStream)
_DATA: _Reader[EventData, EventStream] = _Reader(
    parse_trace_data, _data_of, validate_event_data_json,
    lambda ev: cast(EventData, vars(ev)),
    lambda state: cast(Callable[[EventData], None], state.fill_data), EventStream)


def iter_trace_streams(
    path: str | Path, errors: list[InputError] | None = None
) -> Iterator[TraceStream]:
    """Yield each trace of a file as a header plus a lazy event iterator.

    With `errors` given, a bad trace is recorded there and skipped; without it, raised.
    """
    return _iter_file(path, errors, _MODELS)


def iter_event_streams(
    path: str | Path, errors: list[InputError] | None = None
) -> Iterator[EventStream]:
    """`iter_trace_streams` with each event an `EventData` dict (for the checks)."""
    return _iter_file(path, errors, _DATA)


def _iter_file(path: str | Path, errors: list[InputError] | None,
               reader: _Reader[E, S]) -> Iterator[S]:
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
            found = reader.whole(text)
            if found is None:
                trace = _parse_trace(_loads(text, file, None), file, None)
                found = header_of(trace), reader.events_of(trace)
        except UnicodeDecodeError as exc:
            _fail(InputError(f"not UTF-8 text ({exc.reason} at byte {exc.start})", file=file),
                  errors)
            return
        except OSError as exc:  # a directory, no permission...
            _fail(_unreadable(exc, file), errors)
            return
        except InputError as exc:
            _fail(exc, errors)
            return
        yield reader.stream(found[0], iter(found[1]), file, None)
        return
    if p.suffix != ".jsonl":
        _fail(InputError("expected a .json or .jsonl trace file", file=file), errors)
        return
    yield from _not_empty(_iter_jsonl(p, file, errors, reader), file, errors)


def _iter_jsonl(p: Path, file: str, errors: list[InputError] | None,
                reader: _Reader[E, S]) -> Iterator[S]:
    try:
        fh = p.open("rb")
    except OSError as exc:
        _fail(_unreadable(exc, file), errors)
        return
    with fh:
        try:
            yield from _iter_lines(_Lines(file_lines(fh), file), file, errors, reader)
        except OSError as exc:  # a directory opens, and fails on reading
            _fail(_unreadable(exc, file), errors)


EMPTY = "no trace in the file (it is empty)"


def _not_empty(streams: Iterator[S], file: str, errors: list[InputError] | None) -> Iterator[S]:
    """`streams`, then an error if the file held no trace and no error was found in it (a
    file with no trace is bad input, not a check that passed)."""
    before = len(errors) if errors is not None else 0
    found = False
    for stream in streams:
        found = True
        yield stream
    if not found and (errors is None or len(errors) == before):
        _fail(InputError(EMPTY, file=file), errors)


def _unreadable(exc: OSError, file: str) -> InputError:
    return InputError(f"cannot read the file ({exc.strerror or exc})", file=file)


def split_lines(data: bytes) -> list[bytes]:
    """`data` cut into lines as text mode cuts them (universal newlines), ends kept."""
    return data.splitlines(keepends=True)


def file_lines(fh: IO[bytes], size: int = 1 << 20) -> Iterator[bytes]:
    """The lines of a binary file, cut as `split_lines` cuts them (read `size` bytes at a
    time: cutting a block in C is much cheaper than reading line by line)."""
    parts: list[bytes] = []  # the start of a line that goes on in the next block
    while True:
        block = fh.read(size)
        if not block:
            if parts:
                yield from split_lines(b"".join(parts))
            return
        cut = block.rfind(b"\n") + 1
        if cut == 0:
            parts.append(block)
            continue
        if parts:
            parts.append(block[:cut])
            data = b"".join(parts)
        else:
            data = block[:cut] if cut < len(block) else block
        parts = [block[cut:]] if cut < len(block) else []
        yield from split_lines(data)


class _Lines:
    """Numbered lines (bytes, decoded one at a time) with one line of push-back."""

    def __init__(self, raw: Iterable[bytes], file: str = "<input>", lineno: int = 0) -> None:
        self.it = iter(raw)
        self.file = file
        self._pushed: tuple[int, str] | None = None
        self.lineno = lineno  # the number of the last line taken from `it`

    def take_pushed(self) -> tuple[int, str] | None:
        item, self._pushed = self._pushed, None
        return item

    def next(self) -> tuple[int, str | bytes] | None:
        """The next line that is not blank; an undecodable line raises its InputError.

        A line that may hold a whole trace comes undecoded (bytes: pydantic-core reads
        UTF-8 itself, and refuses what is not), any other line as text.
        """
        if self._pushed is not None:
            item, self._pushed = self._pushed, None
            return item
        for data in self.it:
            self.lineno += 1
            if b'"events"' in data:
                return self.lineno, data
            raw = self.decode(data)
            if not raw.isspace():  # (no copy of a long line, unlike strip)
                return self.lineno, raw
        return None

    def decode(self, data: bytes) -> str:
        """The current line as text, or its InputError if it is not UTF-8."""
        try:
            return data.decode()
        except UnicodeDecodeError as exc:
            raise self.undecodable(exc) from None

    def undecodable(self, exc: UnicodeDecodeError) -> InputError:
        """The error for the current line, which is not UTF-8."""
        return InputError(f"not UTF-8 text ({exc.reason} at byte {exc.start} of the line)",
                          file=self.file, line=self.lineno)

    def push(self, item: tuple[int, str]) -> None:
        self._pushed = item


def iter_jsonl_lines(raw: Iterable[bytes], file: str, errors: list[InputError] | None,
                     first_line: int = 1) -> Iterator[EventStream]:
    """`iter_event_streams` of a `.jsonl` file's lines (`raw`, cut by `file_lines`), the
    first of them line `first_line` and outside any streamed trace."""
    return _iter_lines(_Lines(raw, file, first_line - 1), file, errors, _DATA)


class JsonlChunk:
    """Consecutive lines of a `.jsonl` file, whole-trace lines only, read as the whole file's
    reading would read them (the first line must lie outside any streamed trace), each
    trace an `EventStream`.

    Iterating stops before a streamed trace's header line (or a line that may be one: an
    undecodable line, a stray event line, whose errors take the event lines after them
    along): `stopped_at` is then its line number, for the caller to read from there on, in
    order (`iter_jsonl_lines`).
    """

    def __init__(self, data: bytes, file: str, first_line: int,
                 errors: list[InputError]) -> None:
        self.stopped_at: int | None = None
        self._lines = _Lines(split_lines(data), file, first_line - 1)
        self._file = file
        self._errors = errors

    def __iter__(self) -> Iterator[EventStream]:
        yield from _iter_lines(self._lines, self._file, self._errors, _DATA,
                               stop_at_streamed=True)
        pushed = self._lines.take_pushed()
        if pushed is not None:
            self.stopped_at = pushed[0]


def _iter_lines(lines: _Lines, file: str, errors: list[InputError] | None,
                reader: _Reader[E, S], stop_at_streamed: bool = False) -> Iterator[S]:
    while True:
        try:
            item = lines.next()
        except InputError as exc:  # not UTF-8: that line is lost, the next one is read
            if stop_at_streamed:  # maybe a streamed trace's header: read it in order
                lines.push((lines.lineno, ""))
                return
            _fail(exc, errors)  # a header or a stray event (a whole trace comes as bytes):
            _StreamedEvents(lines, file, reader).drain()  # events after it go with it
            continue
        if item is None:
            return
        lineno, raw = item
        if isinstance(raw, bytes):  # maybe a whole trace on one line: the fast path first
            found = reader.whole(raw)
            if found is not None:
                yield reader.stream(found[0], iter(found[1]), file, lineno)
                continue
            try:
                raw = lines.decode(raw)
            except InputError as exc:
                _fail(exc, errors)
                continue
        if stop_at_streamed and '"events"' not in raw:
            # not a whole trace: a streamed trace's header, or a bad line whose error takes
            # the event lines after it along; the whole-file reading reads from here, in order
            lines.push((lineno, raw))
            return
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
                stream = _StreamedEvents(lines, file, reader)
                yield reader.stream(header, iter(stream), file, lineno)
                stream.drain()
                continue
            trace = _parse_trace(obj, file, lineno)
        except InputError as exc:
            _fail(exc, errors)
            if '"events"' not in raw:  # a bad header, a stray event, a line that is no
                _StreamedEvents(lines, file, reader).drain()  # trace: event lines go with it
            continue
        yield reader.stream(header_of(trace), iter(reader.events_of(trace)), file, lineno)


class _StreamedEvents(Generic[E, S]):
    """Events of a streamed trace: one per line until the next header line."""

    def __init__(self, lines: _Lines, file: str, reader: _Reader[E, S]) -> None:
        self._lines = lines
        self._file = file
        self._reader: _Reader[E, S] = reader
        self._state = PositionState()
        self._done = False

    def __iter__(self) -> Iterator[E]:
        lines = self._lines
        validate_json = self._reader.event
        fill = self._reader.fill(self._state)
        while not self._done:
            item = lines.take_pushed()
            if item is None:
                # Fast path: straight from the file; a line that is not a header is parsed
                # and validated in one go by pydantic-core. Anything else (a header, a bad
                # line) leaves the loop for the slow path, which words the exact error.
                for data in lines.it:
                    lines.lineno += 1
                    if b'"trace_id"' not in data:  # (bytes: pydantic-core reads UTF-8)
                        try:
                            ev = validate_json(data)
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
                    raw = lines.decode(data)
                    if raw.isspace():
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
        self._done = True

    def _slow(self, item: tuple[int, str]) -> E | None:
        """Parse one line the careful way: None for a header line, else the event or an
        InputError naming the file, line and field."""
        lineno, raw = item
        obj = _loads(raw, self._file, lineno)
        if not (isinstance(obj, dict) and "kind" in obj and "trace_id" not in obj):
            return None
        try:
            ev: E = self._reader.from_model(Event.model_validate(obj))
            self._reader.fill(self._state)(ev)
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
    """Yield each trace of a file, fully materialized (where it was read is remembered:
    `judge.trace.unique.place_of`)."""
    for stream in iter_trace_streams(path, errors):
        try:
            events = list(stream.events)
        except InputError as exc:
            _fail(exc, errors)
            continue
        trace = Trace.model_construct(**stream.header.model_dump(), events=events)
        remember_place(trace, stream.file, stream.line)
        yield trace


def load_traces(
    paths: Iterable[str | Path], errors: list[InputError] | None = None
) -> list[Trace]:
    """Load every trace of every file; bad traces go to `errors` when it is given."""
    out: list[Trace] = []
    for path in paths:
        out.extend(iter_traces(path, errors))
    return out
