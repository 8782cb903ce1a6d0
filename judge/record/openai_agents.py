"""OpenAI Agents SDK adapter: a tracing processor that writes one judge trace per agent run.

    from agents import add_trace_processor
    from judge.record.openai_agents import JudgeTracingProcessor

    add_trace_processor(JudgeTracingProcessor("traces/", scenario="refund-once"))
    result = await Runner.run(agent, "Hi, order-17 arrived broken.")   # traces/….json

An SDK trace is one `Runner.run`, or everything inside `with trace("…"):` (a conversation of
several runs): it becomes one judge trace, saved when the SDK trace ends, as
`<out_dir>/<trace id>.json` (the id made safe as a file name). What each span gives:

- a model call (`generation` span of the Chat Completions model, `response` span of the
  Responses model, the SDK's default): the user's new messages (the trailing user messages of
  its input, judge.record.conversation) and the agent's reply text;
- a function tool (`function` span): a `tool_call` with the arguments the model gave, and a
  `tool_result` with the tool's exact return value, or `error` when the tool raised (the
  SDK's own error message; `result` is then what the model was shown);
- the agent span: the agent's name (`candidate.agent`, first one); the model's name
  (`candidate.model`) comes from the first model call; handoffs are listed in
  `metadata.handoffs`.

The SDK must trace sensitive data (the default: `RunConfig(trace_include_sensitive_data=
True)`, env `OPENAI_AGENTS_TRACE_INCLUDE_SENSITIVE_DATA`): without it spans carry no inputs
or outputs, and the trace says so (`metadata.sensitive_data_missing`). A processor never
raises into the agent: a problem is logged (logger `judge.record`) and kept in `.errors`.
`add_trace_processor` keeps the SDK's own exporter; `set_trace_processors([processor])`
replaces it (nothing is sent to OpenAI's trace backend).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judge.record.conversation import UserTurns, text_of
from judge.record.recorder import Recorder, file_name

try:
    from agents.tracing import (
        AgentSpanData,
        FunctionSpanData,
        GenerationSpanData,
        HandoffSpanData,
        ResponseSpanData,
        Span,
        Trace,
        TracingProcessor,
    )
except ModuleNotFoundError as exc:  # pragma: no cover - exercised without the extra
    raise ModuleNotFoundError(
        "judge.record.openai_agents needs the OpenAI Agents SDK: "
        "pip install 'judge[openai-agents]' (or openai-agents)", name=exc.name) from exc

log = logging.getLogger("judge.record")

__all__ = ["JudgeTracingProcessor"]


@dataclass
class _Run:
    recorder: Recorder
    users: UserTurns = field(default_factory=UserTurns)


class JudgeTracingProcessor(TracingProcessor):
    """Writes one judge trace per SDK trace into `out_dir` (see the module doc).

    `scenario`: the scenario id every trace is for, or a function of the SDK trace (`None`:
    traces name none). `trace_id`: a function of the SDK trace giving the judge trace id
    (default `<workflow name>/<SDK trace id>`). `on_saved(path, recorder)` is called after
    each save."""

    def __init__(self, out_dir: str | Path, *,
                 scenario: str | Callable[[Trace], str | None] | None = None,
                 trace_id: Callable[[Trace], str] | None = None,
                 on_saved: Callable[[Path, Recorder], None] | None = None) -> None:
        self.out_dir = Path(out_dir)
        self.scenario = scenario
        self.trace_id = trace_id
        self.on_saved = on_saved
        self.saved: list[Path] = []
        self.errors: list[str] = []
        self._runs: dict[str, _Run] = {}
        self._lock = threading.Lock()

    # -- TracingProcessor -----------------------------------------------------------------
    def on_trace_start(self, trace: Trace) -> None:
        self._guard("trace start", self._start, trace)

    def on_trace_end(self, trace: Trace) -> None:
        self._guard("trace end", self._end, trace.trace_id)

    def on_span_start(self, span: Span[Any]) -> None:
        return None

    def on_span_end(self, span: Span[Any]) -> None:
        self._guard("span end", self._span, span)

    def shutdown(self) -> None:
        """Save the traces still open (their SDK trace never ended), marked interrupted."""
        with self._lock:
            open_ids = list(self._runs)
        for sdk_id in open_ids:
            run = self._runs.get(sdk_id)
            if run is not None:
                run.recorder.end("interrupted", error="the SDK trace had not ended at shutdown")
            self._guard("shutdown", self._end, sdk_id)

    def force_flush(self) -> None:
        return None

    # -- the work ---------------------------------------------------------------------------
    def _guard(self, what: str, fn: Callable[..., None], *args: Any) -> None:
        try:
            fn(*args)
        except Exception as exc:  # never break the agent for a trace
            message = f"judge tracing processor, {what}: {type(exc).__name__}: {exc}"
            self.errors.append(message)
            log.warning("%s", message)

    def _start(self, trace: Trace) -> None:
        tid = self.trace_id(trace) if self.trace_id else f"{trace.name}/{trace.trace_id}"
        scenario = self.scenario(trace) if callable(self.scenario) else self.scenario
        meta: dict[str, Any] = {"source": "openai-agents", "sdk_trace_id": trace.trace_id,
                                "workflow": trace.name}
        group = getattr(trace, "group_id", None)
        if group:
            meta["group_id"] = group
        extra = getattr(trace, "metadata", None)
        if isinstance(extra, Mapping) and extra:
            meta["sdk_metadata"] = dict(extra)
        rec = Recorder(tid, scenario, metadata=meta)
        with self._lock:
            self._runs[trace.trace_id] = _Run(rec)

    def _end(self, sdk_id: str) -> None:
        with self._lock:
            run = self._runs.pop(sdk_id, None)
        if run is None:
            return
        path = run.recorder.save(self.out_dir / f"{file_name(run.recorder.trace_id)}.json")
        self.saved.append(path)
        if self.on_saved is not None:
            self.on_saved(path, run.recorder)

    def _span(self, span: Span[Any]) -> None:
        run = self._runs.get(span.trace_id)
        if run is None:
            return
        data = span.span_data
        rec = run.recorder
        if isinstance(data, AgentSpanData):
            rec.candidate.setdefault("agent", data.name)
        elif isinstance(data, GenerationSpanData):
            if data.model:
                rec.candidate.setdefault("model", data.model)
            self._chat(run, data.input, data.output)
        elif isinstance(data, ResponseSpanData):
            self._responses(run, data)
        elif isinstance(data, FunctionSpanData):
            self._function(run, data, span.error)
        elif isinstance(data, HandoffSpanData):
            rec.metadata.setdefault("handoffs", []).append(
                {"from": data.from_agent, "to": data.to_agent})

    def _missing(self, rec: Recorder) -> None:
        rec.metadata["sensitive_data_missing"] = True

    def _users(self, run: _Run, messages: list[tuple[bool, str]]) -> None:
        for text in run.users.new(messages, len(run.recorder)):
            run.recorder.user(text)

    def _chat(self, run: _Run, sent: Any, got: Any) -> None:
        """A Chat Completions call: `sent` the messages, `got` [the reply message]."""
        if sent is None and got is None:
            self._missing(run.recorder)
            return
        messages = [(m.get("role") == "user", text_of(m.get("content")))
                    for m in sent or [] if isinstance(m, Mapping)
                    and m.get("role") not in ("system", "developer")]
        self._users(run, messages)
        for m in got or []:
            if isinstance(m, Mapping) and m.get("role") == "assistant":
                text = text_of(m.get("content"))
                if text.strip():
                    run.recorder.assistant(text)

    def _responses(self, run: _Run, data: ResponseSpanData) -> None:
        """A Responses API call: its input items and the response's output items."""
        response = data.response
        if response is None and data.input is None:
            self._missing(run.recorder)
            return
        if response is not None and getattr(response, "model", None):
            run.recorder.candidate.setdefault("model", str(response.model))
        items = [data.input] if isinstance(data.input, str) else list(data.input or [])
        messages: list[tuple[bool, str]] = []
        for item in items:
            if isinstance(item, str):
                messages.append((True, item))
                continue
            item = item if isinstance(item, Mapping) else _dump(item)
            role = item.get("role")
            if role in ("system", "developer"):
                continue
            messages.append((role == "user", text_of(item.get("content"))))
        self._users(run, messages)
        for out in getattr(response, "output", None) or []:
            if getattr(out, "type", None) == "message":
                text = text_of([_dump(part) for part in getattr(out, "content", []) or []])
                if text.strip():
                    run.recorder.assistant(text)

    def _function(self, run: _Run, data: FunctionSpanData, error: Mapping[str, Any] | None
                  ) -> None:
        rec = run.recorder
        meta: dict[str, Any] | None = None
        args: dict[str, Any]
        if data.input is None:
            args, meta = {}, {"arguments_missing": True}
            self._missing(rec)
        else:
            try:
                parsed = json.loads(data.input) if data.input.strip() else {}
            except ValueError:
                parsed = None
            args = parsed if isinstance(parsed, dict) else {"input": data.input}
        if data.mcp_data:
            meta = {**(meta or {}), "mcp": data.mcp_data}
        call_id = rec.tool_call(data.name, args, metadata=meta)
        if error:
            detail = error.get("data") if isinstance(error.get("data"), Mapping) else {}
            said = str(error.get("message") or "tool error")
            why = detail.get("error") if isinstance(detail, Mapping) else None
            rec.tool_result(call_id, data.output,
                            error=f"{said}: {why}" if why else said)
        else:
            rec.tool_result(call_id, data.output)


def _dump(obj: Any) -> dict[str, Any]:
    """An SDK (pydantic) object as a dict; {} for anything else."""
    dump = getattr(obj, "model_dump", None)
    if callable(dump):
        try:
            found = dump()
        except Exception:
            return {}
        return found if isinstance(found, dict) else {}
    return obj if isinstance(obj, dict) else {}
