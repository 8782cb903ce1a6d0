"""A whole trace validated in one pass of pydantic-core, without Python validators.

`Trace.model_validate` runs `Event._kind_fields` (which fields each kind carries) in Python
once per event; at a million events that is most of the cost of loading. Here the same rules
are expressed in the schema itself, so pydantic-core parses and validates a trace line (JSON
text) to `Trace` and `Event` instances in Rust:

- events are a union tagged by `kind` (both spellings of the hyphenated kinds), one
  variant per kind;
- each variant builds an ordinary `Event` from the model's own field schemas: the kind's
  required fields lose their default and their `None`, and a field the kind may not carry
  keeps its default but accepts no value at all.

`parse_trace_json` then fills `seq`/`turn` (`fill_positions`, as `Trace`'s own validator
does). It returns None for anything it does not accept — the caller takes the careful path,
which words the error (file, line, field) or, should this path be stricter than the model,
accepts the trace. `validate_event_json` does the same for one event line of a streamed
trace (raising ValidationError instead). Tests hold the two paths to the same results.

`parse_trace_data` and `validate_event_data_json` are the same with each event a plain
dict (`EventData`: the fields the input gave, `seq`/`turn` filled) instead of an `Event`:
what the checks read, a third cheaper to build. Each kind's variant is a typed dict of the
fields it may carry (the required ones required), the others forbidden as extra fields.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, NoReturn, cast

from pydantic import ValidationError
from pydantic_core import CoreSchema, SchemaError, SchemaValidator
from pydantic_core import core_schema as cs

from judge.trace.model import (
    _COMMON,
    ALLOWED_FIELDS,
    KIND_ALIASES,
    REQUIRED_FIELDS,
    Event,
    EventData,
    EventKind,
    Trace,
    TraceHeader,
    fill_data_positions,
    fill_positions,
)


def _model_fields(model: type[Any]) -> dict[str, Any]:
    """The field schemas pydantic built for `model` (under its after-validator, if any)."""
    schema: Any = model.__pydantic_core_schema__
    while schema["type"] != "model":
        schema = schema["schema"]
    if schema["cls"] is not model or schema["schema"]["type"] != "model-fields":
        raise TypeError(f"unexpected core schema for {model.__name__}")
    fields: dict[str, Any] = schema["schema"]["fields"]
    return fields


def _no_value(value: Any) -> NoReturn:
    raise ValueError("field not allowed on this kind of event")


def _unref(schema: Any) -> Any:
    """A schema without its definition `ref`, so it can be used in several variants."""
    return {k: v for k, v in schema.items() if k not in ("ref", "metadata")}


def _field_roles(kind: EventKind, fields: dict[str, Any]) -> Iterator[tuple[str, str, Any]]:
    """(name, role, schema) of each field of an event of `kind`: its `kind` tag, a required
    field (present and not null: the inner schema), an allowed one, or a forbidden one (the
    schema as the model has it). Both fast schemas below are built from these."""
    allowed = _COMMON | ALLOWED_FIELDS[kind]
    required = REQUIRED_FIELDS[kind]
    for name, field in fields.items():
        schema = field["schema"]
        if name == "kind":
            yield name, "kind", _unref(schema)
        elif name in required:
            inner = schema["schema"]
            yield name, "required", inner["schema"] if inner["type"] == "nullable" else inner
        elif name in allowed:
            yield name, "allowed", schema
        else:
            yield name, "forbidden", schema


def _event_variant(kind: EventKind, fields: dict[str, Any]) -> CoreSchema:
    out: dict[str, Any] = {}
    for name, role, schema in _field_roles(kind, fields):
        if role == "forbidden":
            out[name] = cs.model_field(cs.with_default_schema(
                cs.no_info_plain_validator_function(_no_value), default=None))
        else:
            out[name] = cs.model_field(schema)
    return cs.model_schema(Event, cs.model_fields_schema(out, extra_behavior="forbid"),
                           config=cs.CoreConfig(extra_fields_behavior="forbid"))


def _event_schema() -> CoreSchema:
    """An event: one variant per kind, chosen by `kind` (either spelling)."""
    event_fields = _model_fields(Event)
    variants = {k: _event_variant(k, event_fields) for k in EventKind}
    choices: dict[Any, CoreSchema] = {k.value: v for k, v in variants.items()}
    for alias, value in KIND_ALIASES.items():
        choices[alias] = variants[EventKind(value)]
    return cs.tagged_union_schema(choices, discriminator="kind")


def _trace_schema() -> CoreSchema:
    events = cs.list_schema(_event_schema())
    fields = dict(_model_fields(Trace))
    fields["events"] = cs.model_field(events)
    return cs.model_schema(Trace, cs.model_fields_schema(fields, extra_behavior="forbid"),
                           config=cs.CoreConfig(extra_fields_behavior="forbid"))


def _data_variant(kind: EventKind, fields: dict[str, Any]) -> CoreSchema:
    out: dict[str, Any] = {}
    for name, role, schema in _field_roles(kind, fields):
        if role in ("kind", "required"):
            out[name] = cs.typed_dict_field(schema)
        elif role == "allowed":  # absent, or as the model validates it (defaults unwrapped)
            out[name] = cs.typed_dict_field(_unref(schema["schema"]), required=False)
    return cs.typed_dict_schema(out, extra_behavior="forbid")


def _event_data_schema() -> CoreSchema:
    event_fields = _model_fields(Event)
    if any(f["schema"]["type"] != "default" for n, f in event_fields.items() if n != "kind"):
        raise TypeError("unexpected core schema for Event's optional fields")
    variants = {k: _data_variant(k, event_fields) for k in EventKind}
    choices: dict[Any, CoreSchema] = {k.value: v for k, v in variants.items()}
    for alias, value in KIND_ALIASES.items():
        choices[alias] = variants[EventKind(value)]
    return cs.tagged_union_schema(choices, discriminator="kind")


def _trace_data_schema() -> CoreSchema:
    """A trace as a typed dict: the header fields as `TraceHeader` validates them."""
    fields: dict[str, Any] = {}
    for name, field in _model_fields(TraceHeader).items():
        schema = field["schema"]
        fields[name] = cs.typed_dict_field(schema, required=schema["type"] != "default")
    fields["events"] = cs.typed_dict_field(cs.list_schema(_event_data_schema()))
    return cs.typed_dict_schema(fields, extra_behavior="forbid")


def _validators() -> tuple[Callable[..., Any], Callable[..., Any]]:
    """(whole trace, one event) validators; the models' own if this pydantic builds its
    schemas some other way (correct, only slower: a test insists on the fast ones)."""
    try:
        return (SchemaValidator(_trace_schema()).validate_json,
                SchemaValidator(_event_schema()).validate_json)
    except (TypeError, KeyError, SchemaError):
        return (Trace.__pydantic_validator__.validate_json,
                Event.__pydantic_validator__.validate_json)


_validate_json, validate_event_json = _validators()
"""`validate_event_json`: one event line (JSON) to an `Event`, `seq`/`turn` not filled;
raises ValidationError for anything `Event.model_validate` would refuse (and maybe more)."""


def parse_trace_json(text: str | bytes) -> Trace | None:
    """The trace in `text` (one JSON object), validated and filled; None if not accepted."""
    try:
        trace: Trace = _validate_json(text)
        fill_positions(trace.events)
    except (ValidationError, ValueError):
        return None
    return trace


def _data_validators() -> tuple[Callable[..., Any], Callable[..., Any]] | None:
    """(whole trace, one event) validators to dicts; None if this pydantic builds its
    schemas some other way (then the model validators serve, and `vars()` of each event)."""
    try:
        return (SchemaValidator(_trace_data_schema()).validate_json,
                SchemaValidator(_event_data_schema()).validate_json)
    except (TypeError, KeyError, SchemaError):
        return None


_data = _data_validators()


def parse_trace_data(text: str | bytes) -> tuple[TraceHeader, list[EventData]] | None:
    """`parse_trace_json` with each event a dict (`EventData`): the header and events."""
    if _data is None:
        trace = parse_trace_json(text)
        if trace is None:
            return None
        return header_of(trace), [cast(EventData, vars(ev)) for ev in trace.events]
    try:
        found: dict[str, Any] = _data[0](text)
        events = found.pop("events")
        fill_data_positions(events)
    except (ValidationError, ValueError):
        return None
    return TraceHeader.model_construct(**found), events


def _event_data_fallback(text: str | bytes) -> EventData:
    return cast(EventData, vars(validate_event_json(text)))


validate_event_data_json: Callable[[str | bytes], EventData] = (
    _data[1] if _data is not None else _event_data_fallback)
"""`validate_event_json` to a dict: the fields given (`seq`/`turn` not filled)."""


def header_of(trace: Trace) -> TraceHeader:
    """The header of a validated trace (its fields are valid already)."""
    return TraceHeader.model_construct(trace_id=trace.trace_id, scenario=trace.scenario,
                                       candidate=trace.candidate, metadata=trace.metadata)
