"""LangChain / LangGraph adapter: a callback handler that records a judge trace.

    from judge.record.langchain import JudgeCallbackHandler

    handler = JudgeCallbackHandler(trace_id="refund-once/lg-1", scenario="refund-once")
    state = graph.invoke({"messages": [("user", "Hi, order-17 arrived broken.")]},
                         config={"callbacks": [handler]})
    ...                                    # more turns with the same handler
    handler.save("traces/lg-1.json")

One handler records one judge trace, across as many `invoke`/`ainvoke` calls (turns) as it is
passed to. What each callback gives:

- a chat model starting (`on_chat_model_start`): the user's new messages (the trailing human
  messages of what the model is sent: judge.record.conversation) and the model's name
  (`candidate.model`);
- a chat model ending (`on_llm_end`): the reply's text, as an `assistant` event (a reply that
  only calls tools adds none: the calls come from the tools themselves);
- a tool starting, ending or raising (`on_tool_start`, `on_tool_end`, `on_tool_error`): a
  `tool_call` with the arguments the tool got (call id: the model's tool call id), then a
  `tool_result`. LangChain hands a tool's return value back as the text of a `ToolMessage`
  (JSON for a dict or list): text that is a JSON object or array is decoded back to it, other
  text is kept as text. A `ToolMessage` with `status: error`, or a tool that raised, is an
  `error` result.

Only chat models are read (`on_llm_start` of a completion model is not a conversation). The
handler runs inline (`run_inline`), so events keep the order they happened in under
`ainvoke` too; LangChain logs, and does not raise, anything a handler fails at.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from uuid import UUID

from judge.record.conversation import UserTurns, text_of
from judge.record.recorder import Recorder, error_text

try:
    from langchain_core.callbacks import BaseCallbackHandler
    from langchain_core.messages import BaseMessage
    from langchain_core.outputs import ChatGeneration, LLMResult
except ModuleNotFoundError as exc:  # pragma: no cover - exercised without the extra
    raise ModuleNotFoundError(
        "judge.record.langchain needs langchain-core: pip install 'judge[langchain]' "
        "(or langchain-core)", name=exc.name) from exc

__all__ = ["JudgeCallbackHandler"]


def _decoded(content: Any) -> Any:
    """A tool message's content as the tool returned it, where LangChain made it JSON."""
    if isinstance(content, str):
        stripped = content.strip()
        if stripped[:1] in ("{", "[") and stripped[-1:] in ("}", "]"):
            try:
                found = json.loads(stripped)
            except ValueError:
                return content
            if isinstance(found, dict | list):
                return found
    return content


class JudgeCallbackHandler(BaseCallbackHandler):
    """Records one judge trace from LangChain callbacks (see the module doc). Give a
    `Recorder`, or the options to make one (`trace_id`, default `langchain/<uuid>`;
    `scenario`; any other `Recorder` option)."""

    run_inline = True
    raise_error = False

    def __init__(self, recorder: Recorder | None = None, *, trace_id: str | None = None,
                 scenario: str | None = None, **recorder_options: Any) -> None:
        super().__init__()
        if recorder is None:
            meta = {"source": "langchain", **dict(recorder_options.pop("metadata", {}) or {})}
            recorder = Recorder(trace_id or f"langchain/{uuid.uuid4()}", scenario,
                                metadata=meta, **recorder_options)
        self.recorder = recorder
        self._users = UserTurns()
        self._calls: dict[UUID, str] = {}
        self._lock = threading.Lock()

    def save(self, path: str | Path | None = None) -> Path:
        """Save the trace (atomically; see `Recorder.save`)."""
        return self.recorder.save(path)

    # -- model calls ------------------------------------------------------------------------
    def on_chat_model_start(self, serialized: dict[str, Any],
                            messages: list[list[BaseMessage]], *, run_id: UUID,
                            parent_run_id: UUID | None = None,
                            metadata: dict[str, Any] | None = None, **kwargs: Any) -> None:
        params = kwargs.get("invocation_params") or {}
        model = (params.get("model") or params.get("model_name")
                 or (metadata or {}).get("ls_model_name"))
        if isinstance(model, str) and model:
            self.recorder.candidate.setdefault("model", model)
        sent = messages[0] if messages else []
        seen = [(m.type == "human", text_of(m.content)) for m in sent
                if m.type not in ("system", "developer")]
        with self._lock:
            for text in self._users.new(seen, len(self.recorder)):
                self.recorder.user(text)

    def on_llm_end(self, response: LLMResult, *, run_id: UUID,
                   parent_run_id: UUID | None = None, **kwargs: Any) -> None:
        for generations in response.generations[:1]:
            for gen in generations[:1]:
                text = (text_of(gen.message.content) if isinstance(gen, ChatGeneration)
                        else gen.text)
                if text.strip():
                    self.recorder.assistant(text)

    # -- tools ------------------------------------------------------------------------------
    def on_tool_start(self, serialized: dict[str, Any], input_str: str, *, run_id: UUID,
                      parent_run_id: UUID | None = None,
                      inputs: dict[str, Any] | None = None, **kwargs: Any) -> None:
        name = kwargs.get("name") or (serialized or {}).get("name") or "tool"
        args: dict[str, Any]
        if isinstance(inputs, Mapping):
            args = dict(inputs)
        else:
            try:
                parsed = json.loads(input_str)
            except (TypeError, ValueError):
                parsed = None
            args = parsed if isinstance(parsed, dict) else {"input": input_str}
        call_id = kwargs.get("tool_call_id")
        with self._lock:
            wanted = call_id if isinstance(call_id, str) and call_id else None
            if wanted is not None and self.recorder.has_call(wanted):
                wanted = None  # a model that reuses an id: the recorder numbers this one
            self._calls[run_id] = self.recorder.tool_call(str(name), args, call_id=wanted)

    def on_tool_end(self, output: Any, *, run_id: UUID, parent_run_id: UUID | None = None,
                    **kwargs: Any) -> None:
        with self._lock:
            call_id = self._calls.pop(run_id, None)
        if call_id is None:
            return
        content = getattr(output, "content", output)
        if isinstance(content, Sequence) and not isinstance(content, str):
            text = text_of(list(content))
            content = text if text else list(content)
        result = _decoded(content)
        if getattr(output, "status", None) == "error":
            self.recorder.tool_result(call_id, result, error=str(text_of(content) or "error"))
        else:
            self.recorder.tool_result(call_id, result)

    def on_tool_error(self, error: BaseException, *, run_id: UUID,
                      parent_run_id: UUID | None = None, **kwargs: Any) -> None:
        with self._lock:
            call_id = self._calls.pop(run_id, None)
        if call_id is not None:
            self.recorder.tool_result(call_id, error=error_text(error))
