"""The nesting limit of free-form values (formats.md, extensions: "Nesting depth").

Free-form values of a trace (`candidate`, `metadata`, an event's `args`, `result`, `value`,
`metadata`) and of a scenario (ledger values, any YAML) may nest lists and objects at most
`MAX_DEPTH` levels deep: `{"a": 1}` is one level, `{"a": [1]}` two. Deeper input is bad
input, refused where it is loaded with a message naming the file, the line and the field,
instead of crashing a later stage that walks, serializes or stores it (JSON writers stop
at a few hundred levels, Python's recursion at about a thousand).
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from judge.errors import InputError
from judge.trace import fast
from judge.trace.model import Event, Trace

MAX_DEPTH = 64

_EVENT_FIELDS = ("args", "result", "value", "metadata")
_HEADER_FIELDS = ("candidate", "metadata")


def _deeper(value: dict[Any, Any] | list[Any], room: int) -> bool:
    """Whether `value` (a container: one level) nests more than `room` levels."""
    if room <= 0:
        return True
    for item in (value.values() if type(value) is dict else value):
        t = type(item)
        if (t is dict or t is list) and _deeper(item, room - 1):
            return True
    return False


def too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether `value` nests lists and dicts more than `limit` levels deep."""
    t = type(value)
    if t is not dict and t is not list:
        return False
    return _deeper(value, limit)


def deep_field(obj: Any, fields: tuple[str, ...]) -> str | None:
    """The first of `obj`'s `fields` that nests too deeply, or None."""
    for name in fields:
        value = getattr(obj, name)
        t = type(value)
        if (t is dict or t is list) and value and _deeper(value, MAX_DEPTH):
            return name
    return None


def depth_error(file: str, line: int | None, path: str) -> InputError:
    return InputError(f"nested deeper than {MAX_DEPTH} levels (the limit for any value; "
                      "see docs/formats.md)", file=file, line=line, path=path)


def check_header(header: Any, file: str, line: int | None) -> None:
    """Raise the InputError for a trace header (or trace) with a too deeply nested field."""
    name = deep_field(header, _HEADER_FIELDS)
    if name is not None:
        raise depth_error(file, line, name)


def event_too_deep(event: Any) -> str | None:
    """The name of the event's field that nests too deeply, or None."""
    return deep_field(event, _EVENT_FIELDS)


def check_trace(trace: Any, file: str, line: int | None) -> None:
    """Raise the InputError for a trace with a too deeply nested field, naming it."""
    check_header(trace, file, line)
    for i, ev in enumerate(trace.events):
        name = deep_field(ev, _EVENT_FIELDS)
        if name is not None:
            raise depth_error(file, line, f"events[{i}].{name}")


def trace_too_deep(trace: Trace) -> bool:
    """Whether any field of a whole trace nests too deeply (no message: the careful path
    words the error)."""
    if deep_field(trace, _HEADER_FIELDS) is not None:
        return True
    deeper = _deeper
    for ev in trace.events:
        for v in (ev.args, ev.result, ev.value, ev.metadata):
            t = type(v)
            if (t is dict or t is list) and v and deeper(v, MAX_DEPTH):
                return True
    return False


# The loader's fast paths (judge.trace.fast) with the limit: what nests too deeply is
# declined like anything else they do not accept, and the careful path words the error.

def parse_trace_json(text: str | bytes) -> Trace | None:
    """`judge.trace.fast.parse_trace_json`, None also for a trace that nests too deeply."""
    trace = fast.parse_trace_json(text)
    if trace is not None and trace_too_deep(trace):
        return None
    return trace


_DECLINED = ValidationError.from_exception_data("Event", [])
_validate_event = fast.validate_event_json


def validate_event_json(data: str | bytes) -> Event:
    """`judge.trace.fast.validate_event_json`, raising ValidationError also for an event
    that nests too deeply."""
    ev: Event = _validate_event(data)
    deeper = _deeper
    for v in (ev.args, ev.result, ev.value, ev.metadata):
        t = type(v)
        if (t is dict or t is list) and v and deeper(v, MAX_DEPTH):
            raise _DECLINED
    return ev
