"""Read span objects out of a JSON or JSONL file, whole or streaming, the same either way.

The shapes: an OTLP/JSON export (`resourceSpans[].scopeSpans[].spans[]`, with each group's
`resource` and `scope`); a list of span objects; an object wrapping one (`spans`, `data`,
`runs`, `traces`: e.g. `{"trace_id": ..., "spans": [...]}`); a single root span; and in any of
them spans nested under `children` / `child_spans` / `child_runs`, which become spans of their
own whose parent is the span that held them. A `.jsonl` file holds one such document per line
(e.g. the OpenTelemetry collector's file exporter).

`iter_raw(path, stream=True)` reads with ijson's incremental parser: memory holds one span at
a time (plus a nested span's ancestors), whatever the file's size. `stream=False` loads the
document with `json.loads`. Both yield the same `RawSpan`s with the same ordinals (pre-order
positions) — the tests hold them to it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import IO, Any

import ijson

from judge.errors import InputError

CHILD_KEYS = frozenset({"children", "child_spans", "child_runs", "childSpans", "childRuns"})
WRAPPER_KEYS = frozenset({"spans", "data", "runs", "traces", "items", "observations"})
OTLP_KEYS = frozenset({"resourceSpans", "resource_spans"})
SCOPE_KEYS = frozenset({"scopeSpans", "scope_spans", "instrumentationLibrarySpans",
                        "instrumentation_library_spans"})
_SPAN_ID = ("spanId", "span_id", "spanID", "id")
_TRACE_ID = ("traceId", "trace_id", "traceID")
#: files above this size are read streaming when the caller does not say
STREAM_ABOVE = 8 * 1024 * 1024


@dataclass
class RawSpan:
    """One span object as found, children removed. `parent` is the ordinal of the object
    that held it (a span, or a wrapper such as `{"trace_id": ..., "spans": [...]}`, which
    is yielded too, with `wrapper` set, so its trace id can be inherited)."""

    obj: dict[str, Any]
    ordinal: int
    parent: int | None = None
    context: dict[str, Any] = field(default_factory=dict)  # resource, scope (OTLP)
    line: int | None = None
    wrapper: bool = False


def ids_of(obj: dict[str, Any]) -> tuple[Any, Any]:
    """(span id, trace id) as written, wherever the shape keeps them."""
    ctx = obj.get("context")
    if not isinstance(ctx, dict):
        ctx = {}
    span = next((obj[k] for k in _SPAN_ID if obj.get(k) is not None), None)
    if span is None:
        span = ctx.get("span_id", ctx.get("spanId"))
    trace = next((obj[k] for k in _TRACE_ID if obj.get(k) is not None), None)
    if trace is None:
        trace = ctx.get("trace_id", ctx.get("traceId"))
    return span, trace


def _plain(value: Any) -> Any:
    """ijson's Decimals as ints/floats (use_float does this for most; big ints stay ints)."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    return value


class _Counter:
    def __init__(self) -> None:
        self.n = 0

    def next(self) -> int:
        self.n += 1
        return self.n


# -- whole documents ---------------------------------------------------------------------------
def _otlp_groups(groups: Any, count: _Counter, line: int | None) -> Iterator[RawSpan]:
    for group in groups if isinstance(groups, list) else []:
        if not isinstance(group, dict):
            continue
        resource = group.get("resource")
        for key in group:
            if key not in SCOPE_KEYS:
                continue
            for scope in group[key] if isinstance(group[key], list) else []:
                if not isinstance(scope, dict):
                    continue
                context = {"resource": resource,
                           "scope": scope.get("scope", scope.get("instrumentationLibrary"))}
                spans = scope.get("spans")
                for span in spans if isinstance(spans, list) else []:
                    if isinstance(span, dict):
                        yield from _object(span, None, context, count, line)


def _object(obj: dict[str, Any], parent: int | None, context: dict[str, Any],
            count: _Counter, line: int | None) -> Iterator[RawSpan]:
    """An object: OTLP groups, a wrapper of spans, or a span with children — in key order,
    as the streaming reader meets them."""
    ordinal = count.next()
    own: dict[str, Any] = {}
    wrapper = False
    for key, value in obj.items():
        if key in OTLP_KEYS:
            wrapper = True
            yield from _otlp_groups(value, count, line)
        elif key in WRAPPER_KEYS and isinstance(value, list):
            wrapper = True
            for item in value:
                if isinstance(item, dict):
                    yield from _object(item, ordinal, context, count, line)
        elif key in CHILD_KEYS and isinstance(value, list):
            for item in value:
                if isinstance(item, dict):
                    yield from _object(item, ordinal, context, count, line)
        elif key not in CHILD_KEYS:
            own[key] = value
    yield RawSpan(own, ordinal, parent, context, line, wrapper)


def _document(doc: Any, count: _Counter, line: int | None) -> Iterator[RawSpan]:
    if isinstance(doc, list):
        for item in doc:
            if isinstance(item, dict):
                yield from _object(item, None, {}, count, line)
    elif isinstance(doc, dict):
        yield from _object(doc, None, {}, count, line)


# -- streaming ---------------------------------------------------------------------------------
class _Pull:
    """ijson's basic events with one event of look-ahead."""

    def __init__(self, events: Iterator[tuple[str, Any]]) -> None:
        self._it = events
        self._peeked: tuple[str, Any] | None = None

    def next(self) -> tuple[str, Any]:
        if self._peeked is not None:
            ev, self._peeked = self._peeked, None
            return ev
        return next(self._it)

    def peek(self) -> tuple[str, Any]:
        if self._peeked is None:
            self._peeked = next(self._it)
        return self._peeked

    def value(self) -> Any:
        """The next complete value."""
        ev, val = self.next()
        if ev == "start_map":
            out: dict[str, Any] = {}
            while True:
                ev, key = self.next()
                if ev == "end_map":
                    return out
                out[key] = self.value()
        if ev == "start_array":
            arr: list[Any] = []
            while self.peek()[0] != "end_array":
                arr.append(self.value())
            self.next()
            return arr
        return _plain(val)

    def objects(self) -> Iterator[None]:
        """Consume an array; stop before each object item (the caller reads it), skip the
        other items."""
        self.next()  # start_array
        while True:
            ev = self.peek()[0]
            if ev == "end_array":
                self.next()
                return
            if ev == "start_map":
                yield None
            else:
                self.value()


def _stream_otlp(p: _Pull, count: _Counter) -> Iterator[RawSpan]:
    for _ in p.objects():
        p.next()  # start_map of a resource group
        resource: Any = None
        while True:
            ev, key = p.next()
            if ev == "end_map":
                break
            if key == "resource":
                resource = p.value()
            elif key in SCOPE_KEYS and p.peek()[0] == "start_array":
                for _ in p.objects():
                    p.next()  # start_map of a scope group
                    scope: Any = None
                    while True:
                        ev, skey = p.next()
                        if ev == "end_map":
                            break
                        if skey in ("scope", "instrumentationLibrary"):
                            scope = p.value()
                        elif skey == "spans" and p.peek()[0] == "start_array":
                            context = {"resource": resource, "scope": scope}
                            for _ in p.objects():
                                yield from _stream_object(p, None, context, count)
                        else:
                            p.value()
            else:
                p.value()


def _stream_object(p: _Pull, parent: int | None, context: dict[str, Any],
                   count: _Counter) -> Iterator[RawSpan]:
    """The streaming twin of `_object`, from the object's `start_map` on."""
    p.next()  # start_map
    ordinal = count.next()
    own: dict[str, Any] = {}
    wrapper = False
    while True:
        ev, key = p.next()
        if ev == "end_map":
            break
        is_list = p.peek()[0] == "start_array"
        if key in OTLP_KEYS:
            wrapper = True
            if is_list:
                yield from _stream_otlp(p, count)
            else:
                p.value()
        elif key in WRAPPER_KEYS and is_list:
            wrapper = True
            for _ in p.objects():
                yield from _stream_object(p, ordinal, context, count)
        elif key in CHILD_KEYS:
            if is_list:
                for _ in p.objects():
                    yield from _stream_object(p, ordinal, context, count)
            else:
                p.value()
        else:
            own[key] = p.value()
    yield RawSpan(own, ordinal, parent, context, None, wrapper)


def _stream_document(p: _Pull, count: _Counter) -> Iterator[RawSpan]:
    ev = p.peek()[0]
    if ev == "start_array":
        for _ in p.objects():
            yield from _stream_object(p, None, {}, count)
    elif ev == "start_map":
        yield from _stream_object(p, None, {}, count)
    else:
        p.value()


# -- files -------------------------------------------------------------------------------------
def _open(path: Path, file: str) -> IO[bytes]:
    try:
        return path.open("rb")
    except OSError as exc:
        raise InputError(f"cannot read ({exc.strerror})", file=file) from None


def _json_error(exc: Exception, file: str, line: int | None) -> InputError:
    if isinstance(exc, json.JSONDecodeError):
        return InputError(f"malformed JSON ({exc.msg} at column {exc.colno})", file=file,
                          line=line if line is not None else exc.lineno)
    if isinstance(exc, UnicodeDecodeError):
        return InputError(f"not UTF-8 text ({exc.reason})", file=file, line=line)
    if isinstance(exc, RecursionError):
        return InputError("malformed JSON (nested too deeply)", file=file, line=line)
    return InputError(f"malformed JSON ({' '.join(str(exc).split())[:120]})", file=file,
                      line=line)


_INT64 = 2**63


def _int64(text: str) -> int:
    """An integer the streaming parser can hold too: ijson's C backend stops at 64 bits, so
    the whole-file reader refuses the same numbers rather than reading a file it would not."""
    value = int(text)
    if not -_INT64 <= value < _INT64:
        raise ValueError(f"integer overflow ({text[:24]} does not fit in 64 bits)")
    return value


def _loads(text: str | bytes) -> Any:
    return json.loads(text, parse_int=_int64)


def iter_raw(path: str | Path, *, stream: bool | None = None,
             document: Callable[[Any, _Counter, int | None], Iterator[RawSpan]] | None = None,
             ) -> Iterator[RawSpan]:
    """Every span object of a `.json` or `.jsonl` file (see the module docstring)."""
    p = Path(path)
    file = str(path)
    if not p.is_file():
        raise InputError("no such file", file=file)
    if stream is None:
        stream = p.stat().st_size > STREAM_ABOVE
    count = _Counter()
    doc_fn = document or _document
    with _open(p, file) as fh:
        if p.suffix == ".jsonl":
            for lineno, raw in enumerate(fh, start=1):
                if not raw.strip():
                    continue
                try:
                    doc = _loads(raw)
                except (ValueError, RecursionError) as exc:
                    raise _json_error(exc, file, lineno) from None
                for span in doc_fn(doc, count, lineno):
                    span.line = lineno
                    yield span
            return
        if not stream:
            try:
                doc = _loads(fh.read())
            except (ValueError, RecursionError) as exc:
                raise _json_error(exc, file, None) from None
            yield from doc_fn(doc, count, None)
            return
        pull = _Pull(ijson.basic_parse(fh, use_float=True))
        try:
            yield from _stream_document(pull, count)
            try:
                pull.next()
            except StopIteration:
                return
            raise InputError("malformed JSON (data after the document)", file=file)
        except StopIteration:
            raise InputError("malformed JSON (the file ends inside the document)",
                             file=file) from None
        except (ijson.JSONError, ijson.IncompleteJSONError, UnicodeDecodeError,
                RecursionError) as exc:
            raise _json_error(exc, file, None) from None
