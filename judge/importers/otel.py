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
import json
import math
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from judge.importers.imported import ImportedTrace
from judge.importers.messages import (
    Msg,
    ShapeError,
    ToolCall,
    as_args,
    decode_json,
    parse_messages,
    printable,
)
from judge.importers.report import ImportLog
from judge.importers.spanfile import RawSpan, ids_of, iter_raw, unflat_span
from judge.importers.spans import Kind, SpanRecord, ToolUse, spans_to_traces

#: what reading one span found wrong with a part of it: (field, message, action)
Problems = list[tuple[str, str, str]]

_OI_KINDS: dict[str, Kind] = {"LLM": "llm", "TOOL": "tool", "AGENT": "agent", "CHAIN": "chain"}
_OTHER_OI = frozenset({"RETRIEVER", "EMBEDDING", "RERANKER", "GUARDRAIL", "EVALUATOR",
                       "PROMPT", "UNKNOWN"})
_GENAI_LLM = frozenset({"chat", "text_completion", "generate_content", "completion",
                        "responses", "call_llm"})
#: the Vercel AI SDK's operations (`ai.operationId`): model calls and tool calls
_VERCEL_LLM = frozenset({"ai.generateText", "ai.streamText", "ai.generateObject",
                         "ai.streamObject", "ai.generateText.doGenerate",
                         "ai.streamText.doStream", "ai.generateObject.doGenerate",
                         "ai.streamObject.doStream"})
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
    """A trace/span id as lowercase hex: hex as written (OTLP/JSON), `0x…`, base64 (the
    protobuf JSON mapping) or an integer of any width (hex, zero-padded to `size` bytes);
    other non-empty strings (uuids, Langfuse ids) are kept."""
    if value is None or value == "":
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        if value == 0:
            return None
        return format(value, "x").zfill(size * 2 if size and value >= 0 else 0)
    if not isinstance(value, str):
        raise ShapeError("expected an id (a string or an integer)", fld)
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


_MAX_NANOS = 2**63 - 1


def _nanos_number(x: float, fld: str) -> int:
    """A number of seconds, milliseconds, microseconds or nanoseconds since the epoch."""
    if isinstance(x, float) and not math.isfinite(x):
        raise ShapeError(f"expected a time, not {x}", fld)
    ax = abs(x)
    if ax >= 1e17:
        n = int(x)
    elif ax >= 1e14:
        n = int(x * 1_000)
    elif ax >= 1e11:
        n = int(x * 1_000_000)
    else:
        n = int(x * 1_000_000_000)
    if abs(n) > _MAX_NANOS:
        raise ShapeError("expected a time (this one is out of range)", fld)
    return n


def to_nanos(value: Any, fld: str, *, unix_nano: bool = False) -> int | None:
    """A time as unix nanoseconds: a number (its unit told by its size, or nanoseconds for
    a `*UnixNano` field), a numeric string, an ISO 8601 string, or the JS SDK's hrtime
    `[seconds, nanoseconds]`. ShapeError (naming `fld`) for anything else, NaN included."""
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise ShapeError("expected a time", fld)
    if isinstance(value, list) and len(value) == 2 and all(
            isinstance(v, int) and not isinstance(v, bool) for v in value):
        n = value[0] * 1_000_000_000 + value[1]
        if abs(n) > _MAX_NANOS:
            raise ShapeError("expected a time (this one is out of range)", fld)
        return int(n)
    if isinstance(value, int | float):
        if unix_nano and isinstance(value, int):
            if abs(value) > _MAX_NANOS:
                raise ShapeError("expected a time (this one is out of range)", fld)
            return value
        return _nanos_number(value, fld)
    if isinstance(value, str):
        s = value.strip()
        if len(s) > 64:
            raise ShapeError(f"expected a time, not {printable(value[:40])!r}…", fld)
        try:
            if unix_nano and s.lstrip("-").isdigit():
                return to_nanos(int(s), fld, unix_nano=True)
            return _nanos_number(float(s), fld)
        except ValueError:
            pass
        try:
            dt = datetime.fromisoformat(s.replace("Z", "+00:00").replace(" ", "T", 1))
        except ValueError:
            raise ShapeError(f"expected a time, not {printable(value[:40])!r}", fld) \
                from None
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=UTC)
        try:
            return int(dt.timestamp()) * 1_000_000_000 + dt.microsecond * 1000
        except (OverflowError, ValueError, OSError):
            raise ShapeError("expected a time (this one is out of range)", fld) from None
    raise ShapeError("expected a time", fld)


def _duration_nanos(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, int | float):
        if abs(value) > 1e18:
            return None
        return _nanos_number(value, "duration") if value > 1e11 else int(value * 1e9) \
            if isinstance(value, float) else int(value)
    if isinstance(value, str):
        m = _ISO_DURATION.match(value.strip())
        if m:
            h, mi, s = (float(g) if g else 0.0 for g in m.groups())
            total = ((h * 60 + mi) * 60 + s) * 1e9
            return int(total) if math.isfinite(total) and total < 1e18 else None
    return None


def _first(obj: dict[str, Any], keys: tuple[str, ...]) -> tuple[str, Any]:
    for k in keys:
        if obj.get(k) is not None:
            return k, obj[k]
    return keys[0], None


def _time(obj: dict[str, Any], nano_keys: tuple[str, ...], keys: tuple[str, ...],
          problems: Problems) -> int | None:
    """A span's start or end time; a bad one is ignored (noted), the span kept."""
    for group, unix_nano in ((nano_keys, True), (keys, False)):
        if not group:
            continue
        k, v = _first(obj, group)
        try:
            t = to_nanos(v, k, unix_nano=unix_nano)
        except ShapeError as exc:
            problems.append((exc.field, f"{exc}: the time is ignored", "ignored"))
            continue
        if t is not None:
            return t
    return None


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
    vercel = attrs.get("ai.operationId")
    if vercel in _VERCEL_LLM:
        return "llm"
    if vercel == "ai.toolCall":
        return "tool"
    if isinstance(attrs.get("gen_ai.tool.name"), str) and not any(
            k.startswith(("llm.", "gen_ai.input", "gen_ai.output", "gen_ai.prompt"))
            for k in attrs):
        return "tool"
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


def _message_object(m: Any) -> Any:
    """A message as found: one whose keys are dotted paths (`message.role`) put back
    together (`{"message": {"role": ...}}`)."""
    if isinstance(m, dict) and m and any(isinstance(k, str) and "." in k for k in m):
        return unflatten({str(k): v for k, v in m.items()})
    return m


def _msg_list(value: Any, fld: str, default_role: str, problems: Problems) -> list[Msg]:
    """Messages of a list (or one message); a bad one is left out (noted), the rest kept."""
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
        if m is None:
            continue  # a sparse index the exporter left out
        m = _message_object(m)
        try:
            out.extend(parse_messages(m, f"{fld}[{i}]", default_role=default_role))
        except ShapeError as exc:
            answer = _answer_named(m, out)
            if answer is not None:
                out.append(answer)
                continue
            problems.append((exc.field, f"{exc}: the message is left out", "skipped"))
    return out


def _answer_named(m: Any, before: list[Msg]) -> Msg | None:
    """A message whose role is the name of a tool the model just called (LangChain.js's
    tool messages, as some exporters write them): that call's result."""
    if not isinstance(m, dict) or not isinstance(m.get("role"), str):
        return None
    for msg in reversed(before):
        for call in msg.calls:
            if call.name == m["role"]:
                content = m.get("content")
                return Msg("tool", call_id=call.call_id, tool=call.name,
                           result=decode_json(content))
        if msg.role == "user":
            break
    return None


def _system_text(system: Any) -> str:
    if isinstance(system, str):
        return system
    parts = system if isinstance(system, list) else [system]
    return "\n".join(str(p.get("content", p.get("text", ""))) if isinstance(p, dict)
                     else str(p) for p in parts)


def _vercel_messages(attrs: dict[str, Any], output: bool,
                     problems: Problems) -> list[Msg] | None:
    """The Vercel AI SDK's `ai.prompt.messages` / `ai.prompt` and `ai.response.*`."""
    if output:
        text = attrs.get("ai.response.text")
        obj = attrs.get("ai.response.object")
        calls_raw = decode_json(attrs.get("ai.response.toolCalls"))
        if text is None and obj is None and calls_raw is None:
            return None
        calls: list[ToolCall] = []
        if isinstance(calls_raw, list):
            for i, c in enumerate(calls_raw):
                if not isinstance(c, dict):
                    continue
                name = c.get("toolName", c.get("name"))
                if not isinstance(name, str) or not name:
                    problems.append((f"ai.response.toolCalls[{i}]", "tool call without a "
                                     "name: left out", "skipped"))
                    continue
                cid = c.get("toolCallId", c.get("id"))
                calls.append(ToolCall(name, as_args(c.get("args", c.get("input"))),
                                      str(cid) if cid is not None else None))
        body = text if isinstance(text, str) else (
            obj if isinstance(obj, str) else None)
        return [Msg("assistant", body or None, calls)] if body or calls else []
    prompt = decode_json(attrs.get("ai.prompt.messages"))
    if prompt is None:
        prompt = decode_json(attrs.get("ai.prompt"))
    if prompt is None:
        return None
    if isinstance(prompt, dict):
        msgs: list[Msg] = []
        if prompt.get("system"):
            msgs.append(Msg("system", _system_text(prompt["system"])))
        if isinstance(prompt.get("messages"), list):
            msgs += _msg_list(prompt["messages"], "ai.prompt.messages", "user", problems)
        elif prompt.get("prompt") is not None:
            msgs += _msg_list(prompt["prompt"], "ai.prompt.prompt", "user", problems)
        return msgs
    return _msg_list(prompt, "ai.prompt.messages", "user", problems)


def _any_agent_output(value: Any) -> list[Msg]:
    """any-agent's `gen_ai.output`: the calls a model asked for (`tool.name`,
    `tool.args`), or its text."""
    decoded = decode_json(value)
    if isinstance(decoded, list) and decoded and all(
            isinstance(c, dict) and "tool.name" in c for c in decoded):
        return [Msg("assistant", None, [ToolCall(str(c["tool.name"]),
                                                 as_args(c.get("tool.args")))
                                        for c in decoded])]
    if value is None:
        return []
    return [Msg("assistant", value if isinstance(value, str) else json.dumps(
        value, ensure_ascii=False, default=str))]


def _event_messages(obj: dict[str, Any], output: bool,
                    problems: Problems) -> list[Msg] | None:
    """Messages recorded as span events, as the older GenAI conventions log them
    (`gen_ai.user.message`, `gen_ai.assistant.message`, `gen_ai.tool.message`,
    `gen_ai.system.message`; `gen_ai.choice` for the output)."""
    try:
        events = _span_events(obj)
    except ShapeError:
        return None
    out: list[Msg] = []
    found = False
    for i, ev in enumerate(events):
        if not isinstance(ev, dict) or not isinstance(ev.get("name"), str):
            continue
        name = ev["name"]
        if not name.startswith("gen_ai.") or not (name.endswith(".message") or
                                                  name == "gen_ai.choice"):
            continue
        if (name == "gen_ai.choice") != output:
            continue
        found = True
        try:
            body = attributes(ev.get("attributes"), f"events[{i}].attributes", flat=False)
        except ShapeError as exc:
            problems.append((exc.field, f"{exc}: the event is left out", "skipped"))
            continue
        if isinstance(ev.get("body"), dict):
            body = {**ev["body"], **body}
        if isinstance(body.get("message"), dict | str):
            body = {**body, **(decode_json(body["message"]) if isinstance(
                decode_json(body["message"]), dict) else {"content": body["message"]})}
        role = name[len("gen_ai."):-len(".message")] if name != "gen_ai.choice" \
            else "assistant"
        msg = {k: v for k, v in body.items() if k in ("content", "tool_calls", "id",
                                                     "tool_call_id", "role", "name")}
        msg["tool_calls"] = decode_json(msg.get("tool_calls"))
        msg.setdefault("role", role)
        out += _msg_list([msg], f"events[{i}]", role, problems)
    return out if found else None


def llm_messages(attrs: dict[str, Any], output: bool, obj: dict[str, Any] | None = None,
                 problems: Problems | None = None) -> list[Msg] | None:
    """A model call's input or output messages, whichever convention recorded them."""
    problems = problems if problems is not None else []
    role = "assistant" if output else "user"
    for key in (("llm.output_messages", "gen_ai.output.messages", "gen_ai.completion")
                if output else ("llm.input_messages", "gen_ai.input.messages",
                                "gen_ai.prompt")):
        value = subtree(attrs, key)
        if value is not None:
            msgs = _msg_list(value, key, role, problems)
            if not output:
                system = subtree(attrs, "gen_ai.system_instructions")
                if system is not None:
                    msgs.insert(0, Msg("system", _system_text(system)))
            return msgs
    vercel = _vercel_messages(attrs, output, problems)
    if vercel is not None:
        return vercel
    if output and attrs.get("gen_ai.output") is not None:
        return _any_agent_output(attrs["gen_ai.output"])
    if obj is not None:
        from_events = _event_messages(obj, output, problems)
        if from_events is not None:
            return from_events
    # OpenInference without message attributes: the request/response bodies
    body = decode_json(attrs.get("output.value" if output else "input.value"))
    if isinstance(body, dict):
        if not output and isinstance(body.get("messages"), list):
            return _msg_list(body["messages"], "input.value.messages", role, problems)
        if output and isinstance(body.get("choices"), list) and body["choices"]:
            first = body["choices"][0]
            if isinstance(first, dict) and isinstance(first.get("message"), dict):
                return _msg_list([first["message"]], "output.value.choices", role, problems)
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


_TOOL_NAMES = ("gen_ai.tool.name", "tool.name", "tool_call.function.name",
               "ai.toolCall.name", "traceloop.entity.name")
_TOOL_IDS = ("gen_ai.tool.call.id", "tool_call.id", "tool.id", "ai.toolCall.id")
_TOOL_ARGS = ("gen_ai.tool.call.arguments", "gen_ai.tool.args", "gen_ai.tool.input",
              "tool_call.function.arguments", "ai.toolCall.args", "ai.toolCall.input",
              "input.value", "traceloop.entity.input")
_TOOL_RESULTS = ("gen_ai.tool.call.result", "gen_ai.tool.output", "gen_ai.output",
                 "gcp.vertex.agent.tool_response",
                 "ai.toolCall.result", "ai.toolCall.output", "output.value",
                 "traceloop.entity.output")


def tool_use(attrs: dict[str, Any], name: str) -> ToolUse:
    """A tool execution from its span's attributes (any convention)."""
    return _tool(attrs, name)


def _tool(attrs: dict[str, Any], name: str) -> ToolUse:
    tool_name = next((attrs[k] for k in _TOOL_NAMES if isinstance(attrs.get(k), str)
                      and attrs[k]), None)
    if tool_name is None:
        tool_name = name[len("execute_tool "):] if name.startswith("execute_tool ") else name
    call_id = next((attrs[k] for k in _TOOL_IDS if attrs.get(k) is not None), None)
    _, args = _first(attrs, _TOOL_ARGS)
    _, result = _first(attrs, _TOOL_RESULTS)
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


_PARENTS = ("parentSpanId", "parent_span_id", "parent_id", "parentId", "parentObservationId",
            "parent_run_id", "parent", "parentSpanContext")


def to_record(raw: RawSpan, problems: Problems | None = None) -> SpanRecord:
    """One raw span as a SpanRecord; ShapeError names the field of what makes the span
    unreadable; `problems` gets what is wrong with a part of it (the rest is kept)."""
    problems = problems if problems is not None else []
    obj = raw.obj = unflat_span(raw.obj)
    span_raw, trace_raw = ids_of(obj)
    if raw.wrapper:
        return SpanRecord(trace_id=norm_id(trace_raw, "trace_id", 16), span_id="",
                          parent_id=None, name="", start=None, end=None,
                          ordinal=raw.ordinal, parent_ordinal=raw.parent, wrapper=True)
    span_id = norm_id(span_raw, "spanId", 8)
    if span_id is None:
        raise ShapeError("the span has no id", "spanId")
    trace_id = norm_id(trace_raw, "traceId", 16)
    pkey, parent = _first(obj, _PARENTS)
    if isinstance(parent, dict):
        parent = parent.get("span_id", parent.get("spanId"))
    parent_id = norm_id(parent, pkey, 8)
    if parent_id == span_id:
        parent_id = None
    akey, attrs_raw = _first(obj, ("attributes", "span_attributes", "spanAttributes",
                                   "attrs"))
    attrs = attributes(attrs_raw, akey)
    _merge_detail_events(obj, attrs)
    nkey, name = _first(obj, ("name", "span_name", "spanName", "operationName"))
    if name is not None and not isinstance(name, str):
        raise ShapeError("expected a string", nkey)
    name = name or ""
    start = _time(obj, ("startTimeUnixNano", "start_time_unix_nano"),
                  ("start_time", "startTime", "timestamp", "start"), problems)
    end = _time(obj, ("endTimeUnixNano", "end_time_unix_nano"),
                ("end_time", "endTime", "end"), problems)
    if end is None and start is not None and obj.get("duration") is not None:
        d = _duration_nanos(obj["duration"])
        end = start + d if d is not None else None
    kind = span_kind(attrs, obj)
    rec = SpanRecord(trace_id=trace_id, span_id=span_id, parent_id=parent_id, name=name,
                     start=start, end=end, ordinal=raw.ordinal, parent_ordinal=raw.parent,
                     kind=kind, error=_status_error(obj, attrs))
    model = attrs.get("gen_ai.request.model") or attrs.get("gen_ai.response.model") \
        or attrs.get("llm.model_name") or attrs.get("ai.model.id")
    rec.model = str(model) if model else None
    agent = attrs.get("gen_ai.agent.name")
    if not agent:
        res_obj = raw.context.get("resource") or obj.get("resource")
        res_attrs = res_obj.get("attributes") if isinstance(res_obj, dict) else None
        res = attributes(res_attrs if res_attrs is not None else obj.get("resource_attributes"),
                         "resource.attributes")
        agent = res.get("service.name")
        if agent in ("unknown_service",) or (isinstance(agent, str) and
                                              agent.startswith("unknown_service:")):
            agent = None
    rec.agent = str(agent) if agent else None
    if kind == "llm":
        rec.inputs = llm_messages(attrs, False, obj, problems)
        rec.outputs = llm_messages(attrs, True, obj, problems)
    elif kind == "tool":
        rec.tool = _tool(attrs, name)
        if rec.error is not None:
            rec.tool.error = rec.error
    _, rec.in_value = _first(attrs, ("input.value", "traceloop.entity.input", "ai.prompt"))
    rec.in_value = decode_json(rec.in_value)
    _, out = _first(attrs, ("output.value", "traceloop.entity.output"))
    rec.out_value = decode_json(out)
    return rec


def span_where(raw: RawSpan, noun: str = "span") -> str:
    span_id, _ = ids_of(raw.obj)
    return f"{noun} {printable(str(span_id))}" if isinstance(span_id, str | int) \
        and not isinstance(span_id, bool) else f"{noun} #{raw.ordinal}"


def records(raws: Iterator[RawSpan], convert: Any, log: ImportLog,
            noun: str = "span") -> Iterator[SpanRecord]:
    """SpanRecords of raw spans (`convert(raw, problems)`); a span that cannot be read is
    left out and noted (strict: the file's error), as is each part of one that cannot."""
    for raw in raws:
        problems: Problems = []
        try:
            rec = convert(raw, problems)
        except ShapeError as exc:
            log.problem(f"{exc}: the {noun} is left out", where=span_where(raw, noun),
                        fld=exc.field, line=raw.line)
            continue
        for fld, message, action in problems:
            log.problem(message, where=span_where(raw, noun), fld=fld, line=raw.line,
                        action=action)
        yield rec


def iter_records(path: str | Path, *, stream: bool | None = None,
                 log: ImportLog | None = None) -> Iterator[SpanRecord]:
    """Every span of an OpenTelemetry file as a SpanRecord; a span that cannot be read is
    noted in `log` (strict, the default: InputError naming the file, the line (JSONL), the
    span id and the field)."""
    log = log if log is not None else ImportLog(str(path))
    return records(iter_raw(path, stream=stream), to_record, log)


def iter_otel(path: str | Path, *, scenario: str | None = None,
              stream: bool | None = None, log: ImportLog | None = None,
              ) -> Iterator[ImportedTrace]:
    """One trace per OTel trace id of the file (see the module docstring)."""
    log = log if log is not None else ImportLog(str(path))
    return spans_to_traces(iter_records(path, stream=stream, log=log), file=str(path),
                           source="otel", scenario=scenario, log=log)
