"""Import OpenTelemetry traces of agents: OTLP/JSON exports and span-list JSON.

Input (see `judge.importers.spanfile` for the containers): OTLP/JSON
(`resourceSpans[].scopeSpans[].spans[]`, attributes as `[{key, value: {stringValue |
intValue | doubleValue | boolValue | arrayValue | kvlistValue | bytesValue}}]`, ids in hex —
the OTLP/JSON rule — or base64, times in `startTimeUnixNano`), or span objects as Phoenix,
Langfuse, TRAIL or the SDK's console exporter write them (`context.span_id`, `span_id`,
`parent_id`, `parentSpanId`, `span_attributes`, ISO times, attributes flat or nested), nested
under `children`/`child_spans` or flat with parent ids. A `.jsonl` file holds one document per
line (the collector's file exporter).

Attributes, either convention:

- **GenAI semantic conventions**: `gen_ai.operation.name` (chat / text_completion /
  generate_content are model calls, `execute_tool` a tool, `invoke_agent` an agent),
  `gen_ai.input.messages` / `gen_ai.output.messages` (role + parts: text, tool_call,
  tool_call_response), `gen_ai.system_instructions`, the older `gen_ai.prompt.N.*` /
  `gen_ai.completion.N.*` (with `tool_calls.M.*`), `gen_ai.tool.name`,
  `gen_ai.tool.call.id|arguments|result`, `gen_ai.request.model`, `gen_ai.agent.name`.
- **OpenInference**: `openinference.span.kind` (LLM / TOOL / AGENT / CHAIN / ...),
  `llm.input_messages.N.message.role|content|contents|tool_calls.M.tool_call.*`,
  `llm.output_messages...`, `llm.model_name`, `tool.name`, `tool_call.id`, `input.value`,
  `output.value`.
- OpenLLMetry's `traceloop.span.kind` = tool with `traceloop.entity.name|input|output`.

A trace is one trace id. How spans become events: `judge.importers.spans`.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from judge.errors import InputError
from judge.importers.imported import ImportedTrace
from judge.importers.messages import (
    Msg,
    ShapeError,
    as_args,
    decode_json,
    parse_messages,
    printable,
)
from judge.importers.spanfile import RawSpan, ids_of, iter_raw
from judge.importers.spans import Kind, SpanRecord, ToolUse, spans_to_traces

_OI_KINDS: dict[str, Kind] = {"LLM": "llm", "TOOL": "tool", "AGENT": "agent", "CHAIN": "chain"}
_OTHER_OI = frozenset({"RETRIEVER", "EMBEDDING", "RERANKER", "GUARDRAIL", "EVALUATOR",
                       "PROMPT", "UNKNOWN"})
_GENAI_LLM = frozenset({"chat", "text_completion", "generate_content", "completion",
                        "responses"})
_GENAI_AGENT = frozenset({"invoke_agent", "create_agent", "invoke_workflow"})
_ERROR_CODES = frozenset({2, "2", "STATUS_CODE_ERROR", "ERROR", "Error", "error"})
_ISO_DURATION = re.compile(r"^P(?:T(?:(\d+(?:\.\d+)?)H)?(?:(\d+(?:\.\d+)?)M)?"
                           r"(?:(\d+(?:\.\d+)?)S)?)?$")
_HEX = re.compile(r"^[0-9a-fA-F]+$")


# -- values ------------------------------------------------------------------------------------
def any_value(v: Any, fld: str) -> Any:
    """An OTLP AnyValue (`{"stringValue": ...}` etc., camel or snake case) as a plain value."""
    if not isinstance(v, dict):
        return v
    if not v:
        return None
    (key, val), *_ = v.items()
    key = key.replace("_", "").lower()
    if key == "stringvalue" or key == "bytesvalue":
        return val
    if key == "boolvalue":
        return bool(val)
    if key == "intvalue":
        try:
            return int(val)
        except (TypeError, ValueError):
            raise ShapeError("expected an integer", fld) from None
    if key == "doublevalue":
        try:
            return float(val)
        except (TypeError, ValueError):
            raise ShapeError("expected a number", fld) from None
    if key == "arrayvalue":
        values = val.get("values", []) if isinstance(val, dict) else None
        if not isinstance(values, list):
            raise ShapeError("expected {values: [...]}", fld)
        return [any_value(x, f"{fld}.values[{i}]") for i, x in enumerate(values)]
    if key == "kvlistvalue":
        values = val.get("values", []) if isinstance(val, dict) else None
        if not isinstance(values, list):
            raise ShapeError("expected {values: [...]}", fld)
        return attributes(values, f"{fld}.values", flat=False)
    return v  # a plain object that is not an AnyValue


def flatten(d: dict[str, Any], prefix: str = "", out: dict[str, Any] | None = None,
            ) -> dict[str, Any]:
    """Nested objects as dotted keys (lists stay values)."""
    out = {} if out is None else out
    for k, v in d.items():
        key = f"{prefix}.{k}" if prefix else str(k)
        if isinstance(v, dict) and v:
            flatten(v, key, out)
        else:
            out[key] = v
    return out


def attributes(value: Any, fld: str, flat: bool = True) -> dict[str, Any]:
    """Span attributes as one dict of dotted keys: an OTLP KeyValue list or an object."""
    if value is None:
        return {}
    if isinstance(value, list):
        out: dict[str, Any] = {}
        for i, kv in enumerate(value):
            if not isinstance(kv, dict) or not isinstance(kv.get("key"), str):
                raise ShapeError("expected {key, value}", f"{fld}[{i}]")
            out[kv["key"]] = any_value(kv.get("value"), f"{fld}[{i}].value")
        return flatten(out) if flat else out
    if isinstance(value, dict):
        return flatten(value) if flat else value
    raise ShapeError("expected an attribute list or object", fld)


def unflatten(flat: dict[str, Any]) -> Any:
    """Dotted keys back into objects; all-numeric keys become lists (in index order)."""
    root: dict[str, Any] = {}
    for key, value in flat.items():
        parts = key.split(".")
        node = root
        for part in parts[:-1]:
            nxt = node.get(part)
            if not isinstance(nxt, dict):
                if nxt is not None:
                    break  # a leaf and a branch of one name: keep the leaf
                nxt = node[part] = {}
            node = nxt
        else:
            node.setdefault(parts[-1], value)
    return _lists(root)


def _lists(node: Any) -> Any:
    if not isinstance(node, dict):
        return node
    conv = {k: _lists(v) for k, v in node.items()}
    if conv and all(k.isdigit() for k in conv):
        return [conv[k] for k in sorted(conv, key=int)]
    return conv


def subtree(attrs: dict[str, Any], prefix: str) -> Any:
    """The value under `prefix`: one attribute (JSON text decoded), or the attributes below
    it put back together."""
    if prefix in attrs:
        return decode_json(attrs[prefix])
    dot = prefix + "."
    sub = {k[len(dot):]: v for k, v in attrs.items() if k.startswith(dot)}
    return unflatten(sub) if sub else None


# -- ids and times -----------------------------------------------------------------------------
def norm_id(value: Any, fld: str, size: int | None = None) -> str | None:
    """A trace/span id as lowercase hex: hex as written (OTLP/JSON), `0x…`, or base64 (the
    protobuf JSON mapping); other non-empty strings (uuids, Langfuse ids) are kept."""
    if value is None or value == "":
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return format(value, "x").zfill(size * 2 if size else 0)
    if not isinstance(value, str):
        raise ShapeError("expected an id (a string)", fld)
    s = value.strip()
    if s.lower().startswith("0x"):
        s = s[2:]
    if _HEX.match(s) and len(s) in (16, 32):
        return None if set(s) == {"0"} else s.lower()
    if len(s) in (12, 24) or s.endswith("="):
        try:
            raw = base64.b64decode(s, validate=True)
        except (binascii.Error, ValueError):
            raw = b""
        if len(raw) in (8, 16):
            return None if not any(raw) else raw.hex()
    if not s:
        raise ShapeError("expected an id", fld)
    return s


def _nanos_number(x: float) -> int:
    """A number of seconds, milliseconds, microseconds or nanoseconds since the epoch."""
    ax = abs(x)
    if ax >= 1e17:
        return int(x)
    if ax >= 1e14:
        return int(x * 1_000)
    if ax >= 1e11:
        return int(x * 1_000_000)
    return int(x * 1_000_000_000)


def to_nanos(value: Any, fld: str, *, unix_nano: bool = False) -> int | None:
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise ShapeError("expected a time", fld)
    if isinstance(value, int | float):
        return int(value) if unix_nano else _nanos_number(value)
    if isinstance(value, str):
        s = value.strip()
        try:
            return int(s) if unix_nano else _nanos_number(float(s))
        except ValueError:
            pass
        try:
            dt = datetime.fromisoformat(s.replace("Z", "+00:00").replace(" ", "T", 1))
        except ValueError:
            raise ShapeError(f"expected a time, not {value[:40]!r}", fld) from None
        if dt.tzinfo is None:
            from datetime import UTC
            dt = dt.replace(tzinfo=UTC)
        return int(dt.timestamp()) * 1_000_000_000 + dt.microsecond * 1000
    raise ShapeError("expected a time", fld)


def _duration_nanos(value: Any) -> int | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return _nanos_number(value) if value > 1e11 else int(value * 1e9) if isinstance(
            value, float) else int(value)
    if isinstance(value, str):
        m = _ISO_DURATION.match(value.strip())
        if m:
            h, mi, s = (float(g) if g else 0.0 for g in m.groups())
            return int(((h * 60 + mi) * 60 + s) * 1e9)
    return None


def _first(obj: dict[str, Any], keys: tuple[str, ...]) -> tuple[str, Any]:
    for k in keys:
        if obj.get(k) is not None:
            return k, obj[k]
    return keys[0], None


# -- spans -------------------------------------------------------------------------------------
def span_kind(attrs: dict[str, Any], obj: dict[str, Any]) -> Kind:
    oi = attrs.get("openinference.span.kind") or obj.get("span_kind") or obj.get("spanKind")
    if isinstance(oi, str):
        if oi.upper() in _OI_KINDS:
            return _OI_KINDS[oi.upper()]
        if oi.upper() in _OTHER_OI:
            return "other"
    op = attrs.get("gen_ai.operation.name")
    if op in _GENAI_LLM:
        return "llm"
    if op == "execute_tool":
        return "tool"
    if op in _GENAI_AGENT:
        return "agent"
    tl = attrs.get("traceloop.span.kind")
    if tl == "tool":
        return "tool"
    if tl == "agent":
        return "agent"
    if tl in ("workflow", "task"):
        return "chain"
    if any(k.startswith(("llm.input_messages", "gen_ai.input.messages", "gen_ai.prompt.",
                         "gen_ai.completion.", "llm.output_messages",
                         "gen_ai.output.messages")) for k in attrs):
        return "llm"
    return "other"


def _msg_list(value: Any, fld: str, default_role: str) -> list[Msg]:
    if value is None:
        return []
    if isinstance(value, str):
        return [Msg(default_role, value)]
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list):
        raise ShapeError("expected a list of messages", fld)
    out: list[Msg] = []
    for i, m in enumerate(value):
        if isinstance(m, dict) and "role" not in m and "message" not in m \
                and "type" not in m and "lc" not in m:
            m = {**m, "role": default_role}
        out.extend(parse_messages(m, f"{fld}[{i}]"))
    return out


def llm_messages(attrs: dict[str, Any], output: bool) -> list[Msg] | None:
    """A model call's input or output messages, whichever convention recorded them."""
    role = "assistant" if output else "user"
    for key in (("llm.output_messages", "gen_ai.output.messages", "gen_ai.completion")
                if output else ("llm.input_messages", "gen_ai.input.messages",
                                "gen_ai.prompt")):
        value = subtree(attrs, key)
        if value is not None:
            msgs = _msg_list(value, key, role)
            if not output:
                system = subtree(attrs, "gen_ai.system_instructions")
                if system is not None:
                    text = system if isinstance(system, str) else "\n".join(
                        str(p.get("content", p.get("text", ""))) if isinstance(p, dict)
                        else str(p) for p in (system if isinstance(system, list)
                                              else [system]))
                    msgs.insert(0, Msg("system", text))
            return msgs
    # OpenInference without message attributes: the request/response bodies
    body = decode_json(attrs.get("output.value" if output else "input.value"))
    if isinstance(body, dict):
        if not output and isinstance(body.get("messages"), list):
            return _msg_list(body["messages"], "input.value.messages", role)
        if output and isinstance(body.get("choices"), list) and body["choices"]:
            first = body["choices"][0]
            if isinstance(first, dict) and isinstance(first.get("message"), dict):
                return _msg_list([first["message"]], "output.value.choices", role)
    return None


def _unwrap_args(value: Any) -> dict[str, Any]:
    """Tool arguments; smolagents' and OpenLLMetry's `{"args": [...], "kwargs": {...}}`
    wrappers of a Python call are opened."""
    value = decode_json(value)
    if isinstance(value, dict) and ("kwargs" in value or "args" in value) and set(value) <= {
            "args", "kwargs", "sanitize_inputs_outputs"}:
        kw = value.get("kwargs")
        kwargs: dict[str, Any] = kw if isinstance(kw, dict) else {}
        ar = value.get("args")
        args: list[Any] = ar if isinstance(ar, list) else []
        if not kwargs and len(args) == 1 and isinstance(args[0], dict):
            return dict(args[0])
        return {**({"args": args} if args else {}), **kwargs}
    return as_args(value)


def _tool(attrs: dict[str, Any], name: str) -> ToolUse:
    tool_name = (attrs.get("gen_ai.tool.name") or attrs.get("tool.name")
                 or attrs.get("tool_call.function.name") or attrs.get("traceloop.entity.name"))
    if not isinstance(tool_name, str) or not tool_name:
        tool_name = name[len("execute_tool "):] if name.startswith("execute_tool ") else name
    call_id = attrs.get("gen_ai.tool.call.id") or attrs.get("tool_call.id")
    _, args = _first(attrs, ("gen_ai.tool.call.arguments", "tool_call.function.arguments",
                             "input.value", "traceloop.entity.input"))
    _, result = _first(attrs, ("gen_ai.tool.call.result", "output.value",
                                  "traceloop.entity.output"))
    return ToolUse(name=tool_name or "(unnamed tool)",
                   call_id=str(call_id) if call_id is not None else None,
                   args=_unwrap_args(args), result=decode_json(result),
                   has_result=result is not None)


def _status_error(obj: dict[str, Any], attrs: dict[str, Any]) -> str | None:
    status = obj.get("status")
    code: Any = None
    message: Any = None
    if isinstance(status, dict):
        code = status.get("code", status.get("status_code"))
        message = status.get("message", status.get("description"))
    code = obj.get("status_code", obj.get("statusCode", code))
    message = obj.get("status_message", obj.get("statusMessage", message))
    if code not in _ERROR_CODES:
        return None
    if not message:
        for ev in _span_events(obj):
            if isinstance(ev, dict) and ev.get("name") == "exception":
                try:
                    ev_attrs = attributes(ev.get("attributes"), "events.attributes")
                except ShapeError:
                    ev_attrs = {}
                message = ev_attrs.get("exception.message") or ev_attrs.get("exception.type")
                break
    return str(message or attrs.get("exception.message") or "error")


def _span_events(obj: dict[str, Any]) -> list[Any]:
    """A span's `events` (a list, or nothing); ShapeError for anything else."""
    events = obj.get("events")
    if events is None:
        return []
    if not isinstance(events, list):
        raise ShapeError("expected a list of span events", "events")
    return events


def _merge_detail_events(obj: dict[str, Any], attrs: dict[str, Any]) -> None:
    """GenAI content recorded on a `gen_ai.client.inference.operation.details` event."""
    for ev in _span_events(obj):
        if isinstance(ev, dict) and ev.get("name") == "gen_ai.client.inference.operation.details":
            for k, v in attributes(ev.get("attributes"), "events.attributes").items():
                attrs.setdefault(k, v)


def to_record(raw: RawSpan) -> SpanRecord:
    """One raw span as a SpanRecord; ShapeError names the field."""
    obj = raw.obj
    span_raw, trace_raw = ids_of(obj)
    if raw.wrapper:
        return SpanRecord(trace_id=norm_id(trace_raw, "trace_id"), span_id="",
                          parent_id=None, name="", start=None, end=None,
                          ordinal=raw.ordinal, parent_ordinal=raw.parent, wrapper=True)
    span_id = norm_id(span_raw, "spanId")
    if span_id is None:
        raise ShapeError("the span has no id", "spanId")
    trace_id = norm_id(trace_raw, "traceId")
    pkey, parent = _first(obj, ("parentSpanId", "parent_span_id", "parent_id", "parentId",
                                "parentObservationId", "parent_run_id"))
    if isinstance(parent, dict):
        parent = parent.get("span_id", parent.get("spanId"))
    parent_id = norm_id(parent, pkey)
    akey, attrs_raw = _first(obj, ("attributes", "span_attributes", "spanAttributes",
                                   "attrs"))
    attrs = attributes(attrs_raw, akey)
    _merge_detail_events(obj, attrs)
    nkey, name = _first(obj, ("name", "span_name", "spanName", "operationName"))
    if name is not None and not isinstance(name, str):
        raise ShapeError("expected a string", nkey)
    name = name or ""
    skey, s = _first(obj, ("startTimeUnixNano", "start_time_unix_nano"))
    start = to_nanos(s, skey, unix_nano=True)
    if start is None:
        skey, s = _first(obj, ("start_time", "startTime", "timestamp", "start"))
        start = to_nanos(s, skey)
    ekey, e = _first(obj, ("endTimeUnixNano", "end_time_unix_nano"))
    end = to_nanos(e, ekey, unix_nano=True)
    if end is None:
        ekey, e = _first(obj, ("end_time", "endTime", "end"))
        end = to_nanos(e, ekey)
    if end is None and start is not None and obj.get("duration") is not None:
        d = _duration_nanos(obj["duration"])
        end = start + d if d is not None else None
    kind = span_kind(attrs, obj)
    rec = SpanRecord(trace_id=trace_id, span_id=span_id, parent_id=parent_id, name=name,
                     start=start, end=end, ordinal=raw.ordinal, parent_ordinal=raw.parent,
                     kind=kind, error=_status_error(obj, attrs))
    model = attrs.get("gen_ai.request.model") or attrs.get("gen_ai.response.model") \
        or attrs.get("llm.model_name")
    rec.model = str(model) if model else None
    agent = attrs.get("gen_ai.agent.name")
    if not agent:
        res_obj = raw.context.get("resource") or obj.get("resource")
        res_attrs = res_obj.get("attributes") if isinstance(res_obj, dict) else None
        res = attributes(res_attrs if res_attrs is not None else obj.get("resource_attributes"),
                         "resource.attributes")
        agent = res.get("service.name")
    rec.agent = str(agent) if agent else None
    if kind == "llm":
        rec.inputs = llm_messages(attrs, output=False)
        rec.outputs = llm_messages(attrs, output=True)
    elif kind == "tool":
        rec.tool = _tool(attrs, name)
        if rec.error is not None:
            rec.tool.error = rec.error
    _, rec.in_value = _first(attrs, ("input.value", "traceloop.entity.input"))
    rec.in_value = decode_json(rec.in_value)
    _, out = _first(attrs, ("output.value", "traceloop.entity.output"))
    rec.out_value = decode_json(out)
    return rec


def iter_records(path: str | Path, *, stream: bool | None = None) -> Iterator[SpanRecord]:
    """Every span of an OpenTelemetry file as a SpanRecord; InputError names the file, the
    line (JSONL), the span id and the field."""
    file = str(path)
    for raw in iter_raw(path, stream=stream):
        try:
            yield to_record(raw)
        except ShapeError as exc:
            span_id, _ = ids_of(raw.obj)
            where = f"span {printable(str(span_id))}" if isinstance(span_id, str | int) \
                else f"span #{raw.ordinal}"
            raise InputError(str(exc), file=file, line=raw.line, path=where,
                             field=exc.field) from None


def iter_otel(path: str | Path, *, scenario: str | None = None,
              stream: bool | None = None) -> Iterator[ImportedTrace]:
    """One trace per OTel trace id of the file (see the module docstring)."""
    return spans_to_traces(iter_records(path, stream=stream), file=str(path), source="otel",
                           scenario=scenario)
