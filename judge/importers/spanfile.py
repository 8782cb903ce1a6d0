"""Read span objects out of a JSON or JSONL file, whole or streaming, the same either way.

The shapes: an OTLP/JSON export (`resourceSpans[].scopeSpans[].spans[]`, with each group's
`resource` and `scope`); a list of span objects; an object wrapping one (`spans`, `data`,
`runs`, `traces`: e.g. `{"trace_id": ..., "spans": [...]}`); a single root span; and in any of
them spans nested under `children` / `child_spans` / `child_runs`, which become spans of their
own whose parent is the span that held them. A `.jsonl` file holds one such document per line
(e.g. the OpenTelemetry collector's file exporter).

At the top level, an object whose other keys hold lists of spans (`{"generateText": [spans],
"embed": [spans]}`: spans grouped by whatever the exporter chose) wraps each list too: a list
counts when its first item is an object with a span or trace id.

`iter_raw(path, stream=True)` reads with ijson's incremental parser: memory holds one span at
a time (plus a nested span's ancestors), whatever the file's size. `stream=False` loads the
document whole. Both yield the same `RawSpan`s with the same ordinals (pre-order
positions) — the tests hold them to it. Both bound numbers the same way
(`judge.importers.jsonio`): integers of any width up to 4,300 digits (ids written as 128-bit
integers), doubles, no NaN; a gzip file is read through gzip; a BOM is skipped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from judge.errors import InputError
from judge.importers import jsonio
from judge.importers.jsonio import Pull

CHILD_KEYS = frozenset({"children", "child_spans", "child_runs", "childSpans", "childRuns"})
WRAPPER_KEYS = frozenset({"spans", "data", "runs", "traces", "items", "observations"})
OTLP_KEYS = frozenset({"resourceSpans", "resource_spans"})
SCOPE_KEYS = frozenset({"scopeSpans", "scope_spans", "instrumentationLibrarySpans",
                        "instrumentation_library_spans"})
_SPAN_ID = ("spanId", "span_id", "spanID", "id")
_TRACE_ID = ("traceId", "trace_id", "traceID")
_CONTEXTS = ("context", "spanContext", "span_context")
#: lists a span holds that are never spans of their own (links hold span ids)
SPAN_LISTS = frozenset({"links", "events", "attributes", "span_attributes", "tags"})
#: keys that make an object a span (or a run) when it is the first item of a list
SPAN_MARKS = frozenset({"spanId", "span_id", "spanID", "traceId", "trace_id", "traceID",
                        "spanContext", "span_context", "parentSpanId", "parent_span_id",
                        "run_type", "parent_run_id"})
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


_FLAT_PARTS = ("context.", "attributes.", "status.", "parent.")


def unflat_span(obj: dict[str, Any]) -> dict[str, Any]:
    """A span whose nested fields were written as dotted columns (`context.span_id`,
    `attributes.llm.input_messages`, as a Phoenix spans dataframe's records are) as the
    span they are; any other object as it is."""
    if not any(isinstance(k, str) and k.startswith(_FLAT_PARTS) for k in obj):
        return obj
    out: dict[str, Any] = {}
    for key, value in obj.items():
        head, dot, rest = str(key).partition(".")
        if dot and key.startswith(_FLAT_PARTS):
            group = out.setdefault(head, {})
            if isinstance(group, dict) and value is not None:
                group[rest] = value
        else:
            out[key] = value
    return out


def columns_to_records(doc: Any) -> Any:
    """A spans dataframe written column by column (`{"name": {"0": ...},
    "context.span_id": {"0": ...}}`, pandas' default `to_json`) as its list of records;
    anything else as it is. (Read whole: a file above 8 MB needs `--no-stream`.)"""
    if not isinstance(doc, dict) or "context.span_id" not in doc or not all(
            isinstance(v, dict) for v in doc.values()):
        return doc
    index = list(next(iter(doc.values())).keys())
    if not all(list(v.keys()) == index for v in doc.values()):
        return doc
    return [{col: doc[col][i] for col in doc} for i in index]


def context_of(obj: dict[str, Any]) -> dict[str, Any]:
    """A span's context object (`context`, the JS SDK's `spanContext`), or {}."""
    for key in _CONTEXTS:
        ctx = obj.get(key)
        if isinstance(ctx, dict):
            return ctx
    return {}


def ids_of(obj: dict[str, Any]) -> tuple[Any, Any]:
    """(span id, trace id) as written, wherever the shape keeps them."""
    ctx = context_of(obj)
    span = next((obj[k] for k in _SPAN_ID if obj.get(k) is not None), None)
    if span is None:
        span = ctx.get("span_id", ctx.get("spanId"))
    trace = next((obj[k] for k in _TRACE_ID if obj.get(k) is not None), None)
    if trace is None:
        trace = ctx.get("trace_id", ctx.get("traceId"))
    return span, trace


def looks_like_span(obj: Any) -> bool:
    """Whether an object is a span or run by its keys (for lists under unknown keys)."""
    return isinstance(obj, dict) and (bool(obj.keys() & SPAN_MARKS) or any(
        isinstance(obj.get(k), dict) and (obj[k].keys() & {"span_id", "spanId"})
        for k in _CONTEXTS))


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
            count: _Counter, line: int | None, top: bool = False) -> Iterator[RawSpan]:
    """An object: OTLP groups, a wrapper of spans, or a span with children — in key order,
    as the streaming reader meets them."""
    ordinal = count.next()
    own: dict[str, Any] = {}
    wrapper = False
    for key, value in obj.items():
        if key in OTLP_KEYS:
            wrapper = True
            yield from _otlp_groups(value, count, line)
        elif (key in WRAPPER_KEYS or (top and key not in CHILD_KEYS and key not in SPAN_LISTS)
              ) and isinstance(value, list) and (key in WRAPPER_KEYS or (
                  value and looks_like_span(value[0]))):
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
    doc = columns_to_records(doc)
    if isinstance(doc, list):
        for item in doc:
            if isinstance(item, dict):
                yield from _object(item, None, {}, count, line)
    elif isinstance(doc, dict):
        yield from _object(doc, None, {}, count, line, top=True)


# -- streaming ---------------------------------------------------------------------------------
def _stream_otlp(p: Pull, count: _Counter) -> Iterator[RawSpan]:
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


def _stream_object(p: Pull, parent: int | None, context: dict[str, Any],
                   count: _Counter, top: bool = False) -> Iterator[RawSpan]:
    """The streaming twin of `_object`, from the object's `start_map` on. At the top
    level, a list under another key is read ahead by its first item: spans, or a value."""
    p.next()  # start_map
    ordinal = count.next()
    own: dict[str, Any] = {}
    wrapper = False
    while True:
        ev, key = p.next()
        if ev == "end_map":
            break
        is_list = p.peek()[0] == "start_array"
        if top and is_list and key not in OTLP_KEYS and key not in WRAPPER_KEYS \
                and key not in CHILD_KEYS and key not in SPAN_LISTS:
            p.next()  # start_array
            if p.peek()[0] == "end_array":
                p.next()
                own[key] = []
                continue
            first = p.value()
            if looks_like_span(first):
                wrapper = True
                if isinstance(first, dict):
                    yield from _object(first, ordinal, context, count, None)
                while p.peek()[0] != "end_array":
                    if p.peek()[0] == "start_map":
                        yield from _stream_object(p, ordinal, context, count)
                    else:
                        p.value()
                p.next()
            else:
                rest = [first]
                while p.peek()[0] != "end_array":
                    rest.append(p.value())
                p.next()
                own[key] = rest
            continue
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


def _stream_document(p: Pull, count: _Counter) -> Iterator[RawSpan]:
    ev = p.peek()[0]
    if ev == "start_array":
        for _ in p.objects():
            yield from _stream_object(p, None, {}, count)
    elif ev == "start_map":
        yield from _stream_object(p, None, {}, count, top=True)
    else:
        p.value()


# -- files -------------------------------------------------------------------------------------
def iter_raw(path: str | Path, *, stream: bool | None = None,
             document: Callable[[Any, _Counter, int | None], Iterator[RawSpan]] | None = None,
             max_bytes: int | None = None) -> Iterator[RawSpan]:
    """Every span object of a `.json` or `.jsonl` file (see the module docstring)."""
    p = Path(path)
    file = str(path)
    jsonio.check_file(p)
    if stream is None:
        stream = p.stat().st_size > STREAM_ABOVE or jsonio.is_gzip(p)
    count = _Counter()
    doc_fn = document or _document
    if jsonio.is_jsonl(p):
        for lineno, raw in jsonio.iter_lines(p, max_bytes=max_bytes):
            doc = jsonio.loads(raw, file, lineno)
            for span in doc_fn(doc, count, lineno):
                span.line = lineno
                yield span
        return
    if not stream:
        yield from doc_fn(jsonio.load_file(p, max_bytes=max_bytes), count, None)
        return
    pull = Pull(jsonio.events(lambda: jsonio.open_input(p, max_bytes=max_bytes), file))
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
