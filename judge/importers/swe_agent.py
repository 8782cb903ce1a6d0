"""SWE-agent `.traj` files and mini-swe-agent trajectories as traces.

**SWE-agent** (`{"history": [...], "trajectory": [...], "info": {...}, "environment",
"replay_config"}`): `history` is what the model was sent and said — `role`
system / user / assistant / tool, assistant messages with `thought` and `action` (the
command; thought-action mode) or `tool_calls` (function calling), tool messages answering
`tool_call_ids`, demonstrations marked `is_demo` (part of the prompt: kept out, counted).
An assistant action without tool calls is a `tool_call` of the command (`args.command`; the
tool named by its fenced block's language, else `--action-tool`, default bash) and the
observation that follows it (the next user message) its `tool_result`, both marked
`metadata.action_from_text`. A file with only `trajectory` (steps of `thought`, `action`,
`observation`) gives the same events from its steps. Metadata: `info.exit_status`, the
submission's length, `task_id` (the instance id the file is named for).

**mini-swe-agent** (`{"info", "messages": [...], "trajectory_format": "mini-swe-agent-…"}`,
or the bare message list its tests write): an OpenAI message list whose actions are fenced
blocks (`mswea_bash_command`, `bash`) and whose observations are user messages
(`<returncode>…<output>…`): read with text actions on (`judge.importers.text_actions`).
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from judge.importers.conversation import Conversation
from judge.importers.imported import ImportedTrace
from judge.importers.messages import Msg, ShapeError, ToolCall, parse_messages
from judge.importers.report import ImportLog
from judge.importers.text_actions import DEFAULT_TOOL, MARK, split_action, tool_name


def is_swe_agent(doc: Any) -> bool:
    return isinstance(doc, dict) and (isinstance(doc.get("history"), list) or (
        isinstance(doc.get("trajectory"), list) and bool(doc["trajectory"]) and isinstance(
            doc["trajectory"][0], dict) and "action" in doc["trajectory"][0]))


def is_mini_swe_agent(doc: Any) -> bool:
    if isinstance(doc, dict) and str(doc.get("trajectory_format", "")).startswith(
            "mini-swe-agent"):
        return True
    msgs = doc.get("messages") if isinstance(doc, dict) else doc
    if not isinstance(msgs, list):
        return False
    texts = [m.get("content") for m in msgs[:8] if isinstance(m, dict)]
    return any(isinstance(t, str) and ("```mswea_bash_command" in t or
                                       t.startswith("<returncode>")) for t in texts)


def _listish(value: Any) -> Any:
    """SWE-agent writes some fields as Python reprs of lists (`"['call_1']"`)."""
    if isinstance(value, str) and value[:1] == "[":
        try:
            return json.loads(value)
        except ValueError:
            try:
                return ast.literal_eval(value)
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                return value
    return value


def _action_call(text: str | None, action: str, n: int, default_tool: str) -> ToolCall:
    split = split_action(text or "")
    language = split[1] if split is not None and split[2].strip() == action.strip() else ""
    return ToolCall(tool_name(language, default_tool), {"command": action.rstrip("\n")},
                    f"action-{n}")


def _history(history: list[Any], log: ImportLog, default_tool: str,
             conv: Conversation) -> Iterator[dict[str, Any]]:
    pending: str | None = None  # the call id of an action waiting for its observation
    n = 0
    for i, raw in enumerate(history):
        source: dict[str, Any] = {"source_message": i}
        if not isinstance(raw, dict):
            log.problem("expected a message object: left out", where=f"history[{i}]")
            continue
        if raw.get("is_demo") in (True, "True", "true"):
            log.omit("demonstrations (prompt)")
            continue
        m = {k: _listish(v) if k in ("tool_calls", "tool_call_ids") else v
             for k, v in raw.items() if k not in ("agent", "message_type", "is_demo",
                                                  "thought", "action", "cache_control")}
        try:
            msgs = parse_messages(m, f"history[{i}]")
        except ShapeError as exc:
            log.problem(f"{exc}: the message is left out", where=f"history[{i}]",
                        fld=exc.field)
            continue
        role = msgs[0].role if msgs else None
        action = raw.get("action")
        if role == "assistant" and isinstance(action, str) and action.strip() and \
                not any(x.calls for x in msgs):
            n += 1
            thought = raw.get("thought") if isinstance(raw.get("thought"), str) else None
            call = _action_call(raw.get("content") if isinstance(raw.get("content"), str)
                                else None, action, n, default_tool)
            text = (thought if thought is not None else msgs[0].text or "").rstrip()
            msgs = [Msg("assistant", text or None, [call], meta={MARK: True})]
            pending = call.call_id
        elif role == "user" and pending is not None:
            msgs = [Msg("tool", call_id=pending, result=msgs[0].text or "",
                        meta={MARK: True})]
            pending = None
        elif role in ("assistant", "tool"):
            pending = None
        yield from conv.messages(msgs, source)


def _trajectory(steps: list[Any], log: ImportLog, default_tool: str,
                conv: Conversation) -> Iterator[dict[str, Any]]:
    for i, step in enumerate(steps):
        if not isinstance(step, dict):
            log.problem("expected a step object: left out", where=f"trajectory[{i}]")
            continue
        source: dict[str, Any] = {"source_step": i}
        action = step.get("action")
        thought = step.get("thought") if isinstance(step.get("thought"), str) else None
        if not isinstance(action, str) or not action.strip():
            if thought:
                yield from conv.messages([Msg("assistant", thought)], source)
            continue
        call = _action_call(step.get("response") if isinstance(step.get("response"), str)
                            else None, action, i + 1, default_tool)
        msgs = [Msg("assistant", (thought or "").rstrip() or None, [call],
                    meta={MARK: True})]
        obs = step.get("observation")
        if obs is not None:
            msgs.append(Msg("tool", call_id=call.call_id, result=obs, meta={MARK: True}))
        yield from conv.messages(msgs, source)


def swe_agent_trace(doc: dict[str, Any], *, file: str, trace_id: str,
                    scenario: str | None, log: ImportLog,
                    default_tool: str = DEFAULT_TOOL) -> ImportedTrace:
    """One `.traj` file as a trace (see the module docstring)."""
    conv = Conversation()
    if isinstance(doc.get("history"), list) and doc["history"]:
        log.source["history messages"] += len(doc["history"])
        events: Iterator[dict[str, Any]] = _history(doc["history"], log, default_tool, conv)
    else:
        raw_steps = doc.get("trajectory")
        steps: list[Any] = raw_steps if isinstance(raw_steps, list) else []
        log.source["trajectory steps"] += len(steps)
        events = _trajectory(steps, log, default_tool, conv)
    raw_info = doc.get("info")
    info: dict[str, Any] = raw_info if isinstance(raw_info, dict) else {}
    metadata: dict[str, Any] = {"source": "swe-agent", "task_id": trace_id.rsplit("/", 1)[-1]}
    if isinstance(info.get("exit_status"), str):
        metadata["exit_status"] = info["exit_status"]
    if isinstance(info.get("submission"), str):
        metadata["submission_chars"] = len(info["submission"])
    if isinstance(doc.get("environment"), str):
        metadata["environment"] = doc["environment"]

    def stream() -> Iterator[dict[str, Any]]:
        yield from events
        if conv.systems:
            metadata["system_prompts"] = conv.systems

    header = {"trace_id": trace_id, "scenario": scenario, "candidate": {},
              "metadata": metadata}
    return ImportedTrace(header, stream(), file, conv.omitted)


def trace_id_of(path: Path) -> str:
    """The instance id a `.traj` file is named for (`pydicom__pydicom-1458.traj`)."""
    name = path.name
    for suffix in (".traj.json", ".traj", ".json"):
        if name.endswith(suffix):
            return name[:-len(suffix)]
    return path.stem
