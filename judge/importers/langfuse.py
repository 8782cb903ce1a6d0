"""Import Langfuse traces: the UI's and SDK's trace exports and the public API's trace JSON.

A file holds `{"trace": {...}, "observations": [...]}` (an export), a trace object with its
`observations` inline (`GET /api/public/traces/{id}`), a list of either, `{"data": [...]}`
(a page of the API's trace list), or one of them a line (JSONL). An observation has `id`,
`traceId`, `parentObservationId`, `type`, `name`, `startTime`, `endTime`, `input`, `output`
(objects, or JSON text), `model`, `level` / `statusMessage`, `metadata` (often the original
OpenTelemetry `attributes`), and for generations `toolCalls` / `toolCallNames`.

- `GENERATION` → a model call: `input` the messages sent (OpenAI, Anthropic, GenAI-parts or
  LangChain shapes, a Responses API item list, or a prompt string), `output` what came back
  (a message, a message list, a `chat.completion`, a Responses API `response`, the Vercel AI
  SDK's tool-call list, or text); where they hold nothing readable the observation's
  OpenTelemetry attributes are read instead (`judge.importers.otel`);
- `TOOL` → a tool execution: its name, `input` the arguments, `output` the result, the call
  id from its attributes when they have one (else it answers the model's open call of that
  tool);
- `level: ERROR` → the observation's error (`statusMessage`);
- `SPAN`, `AGENT`, `CHAIN`, `EVENT`, … → structure only; the earliest root's input is the
  task when no model call shows the user's message.

A trace is one trace id; events keep the observation id as `metadata.source_span_id`, and
the trace's `scores` go to the trace's metadata (`langfuse_scores`).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from judge.importers import jsonio
from judge.importers.imported import ImportedTrace
from judge.importers.messages import Msg, ShapeError, ToolCall, as_args, decode_json
from judge.importers.otel import (
    Problems,
    _msg_list,
    _time,
    _unwrap_args,
    llm_messages,
    norm_id,
    records,
    span_kind,
    tool_use,
)
from judge.importers.report import ImportLog
from judge.importers.spanfile import RawSpan, _Counter
from judge.importers.spans import Kind, SpanRecord, ToolUse, spans_to_traces

_KINDS: dict[str, Kind] = {"GENERATION": "llm", "TOOL": "tool", "AGENT": "agent",
                           "CHAIN": "chain"}


def is_langfuse(doc: Any) -> bool:
    """Whether a document is a Langfuse export (by its shape)."""
    if isinstance(doc, list):
        return bool(doc) and is_langfuse(doc[0])
    if not isinstance(doc, dict):
        return False
    if isinstance(doc.get("data"), list) and doc["data"]:
        return is_langfuse(doc["data"][0])
    obs = doc.get("observations")
    if not isinstance(obs, list):
        trace = doc.get("trace")
        obs = trace.get("observations") if isinstance(trace, dict) else None
    return isinstance(obs, list) and any(
        isinstance(o, dict) and ("parentObservationId" in o or o.get("type") in _KINDS
                                 or ("traceId" in o and "type" in o)) for o in obs[:5])


def _attributes(obs: dict[str, Any]) -> dict[str, Any]:
    from judge.importers.otel import attributes
    md = decode_json(obs.get("metadata"))
    if not isinstance(md, dict):
        return {}
    attrs = md.get("attributes")
    attrs = decode_json(attrs)
    try:
        return attributes(attrs, "metadata.attributes") if isinstance(attrs, dict | list) \
            else {}
    except ShapeError:
        return {}


def _vercel_calls(value: list[Any]) -> list[Msg] | None:
    if value and all(isinstance(c, dict) and "toolName" in c for c in value):
        return [Msg("assistant", None, [
            ToolCall(str(c["toolName"]), as_args(c.get("input", c.get("args"))),
                     str(c["toolCallId"]) if c.get("toolCallId") is not None else None)
            for c in value])]
    return None


def messages(value: Any, role: str, fld: str, problems: Problems) -> list[Msg] | None:
    """The messages of an observation's input or output (None: nothing readable)."""
    value = decode_json(value)
    if value is None or value == "":
        return None
    if isinstance(value, str):
        return [Msg(role, value)]
    if isinstance(value, list):
        if not value:
            return None
        return _vercel_calls(value) or _msg_list(value, fld, role, problems)
    if not isinstance(value, dict):
        return [Msg(role, str(value))]
    if isinstance(value.get("contents"), list):  # a Gemini request
        msgs = _msg_list(value["contents"], f"{fld}.contents", role, problems)
        raw_config = value.get("config")
        config: dict[str, Any] = raw_config if isinstance(raw_config, dict) else value
        system = config.get("system_instruction", config.get("systemInstruction"))
        if isinstance(system, str) and system:
            msgs.insert(0, Msg("system", system))
        return msgs
    if isinstance(value.get("content"), dict) and "parts" in value["content"]:
        return _msg_list([value["content"]], f"{fld}.content", role, problems)  # Gemini
    if isinstance(value.get("message"), dict):
        return _msg_list([{"role": role, **value["message"]}], f"{fld}.message", role,
                         problems)
    if isinstance(value.get("args"), list) and value["args"] and isinstance(
            value["args"][0], str):
        return [Msg(role, value["args"][0])]  # a Python call's arguments: the prompt
    if value.get("object") == "response" or isinstance(value.get("output"), list):
        return _msg_list(value.get("output") or [], f"{fld}.output", "assistant", problems)
    if isinstance(value.get("choices"), list) and value["choices"]:
        first = value["choices"][0]
        msg = first.get("message") if isinstance(first, dict) else None
        return _msg_list([{"role": "assistant", **msg}] if isinstance(msg, dict) else [],
                         f"{fld}.choices[0].message", "assistant", problems)
    if isinstance(value.get("messages"), list):
        return _msg_list(value["messages"], f"{fld}.messages", role, problems)
    if "role" in value or "content" in value or "parts" in value or "lc" in value:
        return _msg_list([value], fld, role, problems)
    for key in ("prompt", "input", "query", "question", "text", "completion"):
        if isinstance(value.get(key), str):
            return [Msg(role, value[key])]
    return None


def _tool_calls(obs: dict[str, Any]) -> list[ToolCall]:
    """A generation's `toolCalls` / `toolCallNames` (Langfuse's own record of them)."""
    calls = obs.get("toolCalls")
    names = obs.get("toolCallNames")
    if not isinstance(calls, list) or not isinstance(names, list):
        return []
    out: list[ToolCall] = []
    for raw, name in zip(calls, names, strict=False):
        call = decode_json(raw)
        if not isinstance(call, dict) or not isinstance(name, str):
            continue
        out.append(ToolCall(name, as_args(call.get("arguments", call.get("input"))),
                            str(call["id"]) if call.get("id") is not None else None))
    return out


def to_record(raw: RawSpan, problems: Problems | None = None) -> SpanRecord:
    problems = problems if problems is not None else []
    obs = raw.obj
    span_id = norm_id(obs.get("id"), "id")
    if span_id is None:
        raise ShapeError("the observation has no id", "id")
    trace_id = norm_id(obs.get("traceId"), "traceId")
    parent = norm_id(obs.get("parentObservationId"), "parentObservationId")
    raw_name = obs.get("name")
    name = raw_name if isinstance(raw_name, str) else ""
    typ = obs.get("type")
    attrs = _attributes(obs)
    kind: Kind = _KINDS.get(typ, "other") if isinstance(typ, str) else "other"
    if kind == "other" and attrs:
        kind = span_kind(attrs, {})
    start = _time(obs, (), ("startTime", "start_time", "timestamp"), problems)
    end = _time(obs, (), ("endTime", "end_time"), problems)
    error = None
    if obs.get("level") == "ERROR":
        error = str(obs.get("statusMessage") or "error")
    rec = SpanRecord(trace_id=trace_id, span_id=span_id, parent_id=parent, name=name,
                     start=start, end=end, ordinal=raw.ordinal, parent_ordinal=raw.parent,
                     kind=kind, error=error)
    model = obs.get("model") or attrs.get("gen_ai.request.model")
    rec.model = str(model) if model else None
    if kind == "llm":
        rec.inputs = messages(obs.get("input"), "user", "input", problems)
        if rec.inputs is None and attrs:
            rec.inputs = llm_messages(attrs, False, None, problems)
        rec.outputs = messages(obs.get("output"), "assistant", "output", problems)
        if rec.outputs is None and attrs:
            rec.outputs = llm_messages(attrs, True, None, problems)
        calls = _tool_calls(obs)
        if calls and not any(m.calls for m in rec.outputs or []):
            rec.outputs = [*(rec.outputs or []), Msg("assistant", None, calls)]
    elif kind == "tool":
        args = decode_json(obs.get("input"))
        if isinstance(args, dict) and set(args) == {"input"}:
            args = args["input"]
        call_id = attrs.get("gen_ai.tool.call.id") or attrs.get("tool_call.id")
        tool_name = attrs.get("gen_ai.tool.name") or attrs.get("tool.name") or name
        if isinstance(tool_name, str) and tool_name.startswith("running tool: "):
            tool_name = tool_name[len("running tool: "):]
        output = obs.get("output")
        result = decode_json(output)
        if result in (None, "", {}) and attrs:  # an empty output: the span's own record
            from_attrs = tool_use(attrs, str(tool_name or ""))
            if from_attrs.has_result and from_attrs.result not in (None, "", {}):
                result, output = from_attrs.result, from_attrs.result
        rec.tool = ToolUse(name=str(tool_name or "(unnamed tool)"),
                           call_id=str(call_id) if call_id is not None else None,
                           args=_unwrap_args(args), result=result,
                           has_result=output is not None, error=error)
    rec.in_value = decode_json(obs.get("input"))
    rec.out_value = decode_json(obs.get("output"))
    return rec


def _traces(doc: Any) -> Iterator[tuple[dict[str, Any], list[Any]]]:
    """(trace, observations) of each trace a document holds."""
    if isinstance(doc, list):
        for item in doc:
            yield from _traces(item)
        return
    if not isinstance(doc, dict):
        return
    if isinstance(doc.get("data"), list):
        yield from _traces(doc["data"])
        return
    raw_trace = doc.get("trace")
    trace: dict[str, Any] = raw_trace if isinstance(raw_trace, dict) else doc
    obs = doc.get("observations")
    if not isinstance(obs, list):
        obs = trace.get("observations")
    # a hostile file may put anything there (`"observations": true`): only a list is read
    yield trace, [o for o in obs if isinstance(o, dict)] if isinstance(obs, list) else []


def _raw(doc: Any, count: _Counter, line: int | None,
         scores: dict[str, Any]) -> Iterator[RawSpan]:
    for trace, observations in _traces(doc):
        tid = trace.get("id")
        if isinstance(trace.get("scores"), list) and isinstance(tid, str):
            scores[tid] = [{k: s.get(k) for k in ("name", "value", "comment")}
                           for s in trace["scores"] if isinstance(s, dict)]
        for obs in observations:
            if obs.get("traceId") is None and tid is not None:
                obs = {**obs, "traceId": tid}
            yield RawSpan(obs, count.next(), None, {}, line)


def iter_langfuse(path: str | Path, *, scenario: str | None = None,
                  log: ImportLog | None = None) -> Iterator[ImportedTrace]:
    """One trace per Langfuse trace of the file (see the module docstring)."""
    p = Path(path)
    file = str(path)
    log = log if log is not None else ImportLog(file)
    count = _Counter()
    scores: dict[str, Any] = {}

    def raws() -> Iterator[RawSpan]:
        if jsonio.is_jsonl(p):
            for lineno, raw in jsonio.iter_lines(p):
                yield from _raw(jsonio.loads(raw, file, lineno), count, lineno, scores)
        else:
            yield from _raw(jsonio.load_file(p), count, None, scores)

    for t in spans_to_traces(records(raws(), to_record, log, noun="observation"),
                             file=file, source="langfuse", scenario=scenario, log=log):
        tid = t.header.get("trace_id")
        if isinstance(tid, str) and tid in scores:
            t.header["metadata"]["langfuse_scores"] = scores[tid]
        yield t
