"""Claude managed-agent session logs (the `client.beta.sessions` API) as traces.

A log is the session's events, one per line or as a list: plain event objects (what
`events.list` / `events.stream` return: `{"id", "type", ...}`, or `{"data": [events]}`), or
the SDK calls a recorder wrote as `[method, payload]` pairs (`client.beta.sessions.create`
→ the session, `…events.stream` → one event, `…events.send` → `[session id, {"events":
[...]}]`, the events the client sent). One trace per session (its `sesn_…` id); events that
name no session belong to the session last created or sent to.

- `user.message` → a user turn; `agent.message` → the agent's text;
- `agent.tool_use`, `agent.mcp_tool_use`, `agent.custom_tool_use` → a tool call (its event
  id is the call id; an MCP call keeps its server in `metadata.mcp_server_name`);
- `agent.tool_result`, `agent.mcp_tool_result`, `user.custom_tool_result` → the result of
  the call whose id they name (`is_error` → the event's error);
- `agent.thinking`, `session.*` status events, `span.model_request_*` and
  `user.tool_confirmation` are not steps of the agent: counted under "kept out of the
  events". What the client sent (`events.send`) is echoed on the stream: only the stream's
  copy is used when the log has it.

The session's agent gives the candidate (`agent.name`, `agent.model.id`); its system prompt
is kept as a fingerprint (`metadata.system_prompts`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from judge.importers.conversation import Conversation
from judge.importers.imported import ImportedTrace
from judge.importers.messages import Msg, ShapeError, ToolCall, as_args, parse_messages
from judge.importers.report import ImportLog

_CALLS = {"agent.tool_use": "", "agent.mcp_tool_use": "mcp", "agent.custom_tool_use": ""}
_RESULTS = {"agent.tool_result": "tool_use_id", "agent.mcp_tool_result": "mcp_tool_use_id",
            "user.custom_tool_result": "custom_tool_use_id"}
_TEXT = {"user.message": "user", "agent.message": "assistant"}
_PREFIXES = ("user.", "agent.", "session.", "span.")


def _is_event(obj: Any) -> bool:
    return isinstance(obj, dict) and isinstance(obj.get("type"), str) and (
        obj["type"].startswith(_PREFIXES) or obj["type"] == "session")


def _pair(obj: Any) -> bool:
    return isinstance(obj, list) and len(obj) == 2 and isinstance(obj[0], str) \
        and obj[0].startswith("client.beta.sessions")


def _entries(obj: Any) -> Iterator[tuple[str, Any]]:
    """(method, payload) of one record: "" for a plain event or session; a list of
    records (one level: never deeper)."""
    if _pair(obj):
        yield obj[0], obj[1]
    elif isinstance(obj, dict) and isinstance(obj.get("data"), list):
        for ev in obj["data"]:
            yield "", ev
    elif isinstance(obj, list):
        for item in obj:
            yield (item[0], item[1]) if _pair(item) else ("", item)
    else:
        yield "", obj


def is_session_log(objs: list[Any]) -> bool:
    """Whether records are a managed-agent session log (by its first records)."""
    for obj in objs[:5]:
        for method, payload in _entries(obj):
            if method or _is_event(payload):
                return True
    return False


class _Session:
    def __init__(self, sid: str) -> None:
        self.sid = sid
        self.conv = Conversation()
        self.events: list[dict[str, Any]] = []
        self.candidate: dict[str, Any] = {}
        self.metadata: dict[str, Any] = {"source": "anthropic-session", "session_id": sid}

    def agent(self, session: dict[str, Any]) -> None:
        agent = session.get("agent")
        if not isinstance(agent, dict):
            return
        if isinstance(agent.get("name"), str):
            self.candidate["agent"] = agent["name"]
        model = agent.get("model")
        model = model.get("id") if isinstance(model, dict) else model
        if isinstance(model, str):
            self.candidate["model"] = model
        if isinstance(agent.get("system"), str) and agent["system"]:
            self.conv.system(agent["system"])

    def event(self, ev: dict[str, Any], record: int | None, log: ImportLog) -> None:
        kind = ev["type"]
        source: dict[str, Any] = {"source_record": record}
        if isinstance(ev.get("id"), str):
            source["source_event_id"] = ev["id"]
        msgs: list[Msg]
        if kind in _TEXT:
            msgs = parse_messages({"role": _TEXT[kind], "content": ev.get("content")},
                                  kind)
        elif kind in _CALLS:
            name = ev.get("name")
            if not isinstance(name, str) or not name:
                raise ShapeError("tool call without a name", "name")
            if isinstance(ev.get("mcp_server_name"), str):
                source["mcp_server_name"] = ev["mcp_server_name"]
            msgs = [Msg("assistant", None, [ToolCall(name, as_args(ev.get("input")),
                                                      source.get("source_event_id"))])]
        elif kind in _RESULTS:
            answered = ev.get(_RESULTS[kind])
            tool = parse_messages({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": answered, "content": ev.get("content"),
                 "is_error": ev.get("is_error") is True}]}, kind)
            msgs = tool
        else:
            what = ("the model's private reasoning" if kind == "agent.thinking" else
                    "tool confirmations" if kind == "user.tool_confirmation" else
                    "session and model-request status events")
            log.omit(what)
            return
        self.events.extend(self.conv.messages(msgs, source))

    def imported(self, file: str, scenario: str | None, prefix: str) -> ImportedTrace:
        if self.conv.systems:
            self.metadata["system_prompts"] = self.conv.systems
        header = {"trace_id": self.sid if self.sid != "(session)" else prefix,
                  "scenario": scenario, "candidate": self.candidate,
                  "metadata": self.metadata}
        return ImportedTrace(header, iter(self.events), file, self.conv.omitted)


def iter_sessions(records: list[tuple[int | None, str, Any]], *, file: str,
                  scenario: str | None, prefix: str,
                  log: ImportLog) -> Iterator[ImportedTrace]:
    """One trace per session of a session log's records (line, where, object)."""
    entries = [(line, line if line is not None else k, where, method, payload)
               for k, (line, where, obj) in enumerate(records)
               for method, payload in _entries(obj)]
    streamed_user = any(m.endswith("events.stream") and isinstance(p, dict) and
                        str(p.get("type", "")).startswith("user.")
                        for _, _, _, m, p in entries)
    sessions: dict[str, _Session] = {}
    current: _Session | None = None

    def session(sid: Any) -> _Session:
        nonlocal current
        key = sid if isinstance(sid, str) and sid else (current.sid if current else
                                                         "(session)")
        if key not in sessions:
            sessions[key] = _Session(key)
        current = sessions[key]
        return current

    for line, record, where, method, payload in entries:
        log.source["session log records"] += 1
        events: list[Any] = []
        if method.endswith("sessions.create") or (not method and isinstance(payload, dict)
                                                  and payload.get("type") == "session"):
            if isinstance(payload, dict):
                session(payload.get("id")).agent(payload)
            continue
        if method.endswith("events.send"):
            sid = payload[0] if isinstance(payload, list) and payload else None
            body = payload[1] if isinstance(payload, list) and len(payload) > 1 else None
            s = session(sid)
            if streamed_user:
                continue  # the stream echoes what was sent
            events = body.get("events", []) if isinstance(body, dict) else []
        else:
            s = session(payload.get("session_id") if isinstance(payload, dict) else None)
            events = [payload]
        for ev in events:
            if not _is_event(ev):
                log.problem("expected a session event (an object with a type)",
                            where=where or f"record {record}", line=line)
                continue
            try:
                s.event(ev, record, log)
            except ShapeError as exc:
                log.problem(f"{exc}: the event is left out", where=f"event {ev.get('id')}",
                            fld=exc.field, line=line)
    for s in sessions.values():
        yield s.imported(file, scenario, prefix)
