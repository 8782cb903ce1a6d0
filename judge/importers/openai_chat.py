"""Import OpenAI chat-completion message lists as traces (formats §1).

Accepted input shapes:

- a `.json` file holding one message list, an object with `"messages"`, or a list of such
  objects (several conversations);
- a `.jsonl` file with one message list or one object with `"messages"` per line.

Mapping: `user` → user event; `assistant` → an assistant event for its text (marked
`metadata.with_tool_calls` when the same message also calls tools), then one `tool_call`
event per entry of `tool_calls` (JSON-string `arguments` decoded to an object);
`tool` → `tool_result` (the tool name comes from the matching call, its `content` is decoded
as JSON when it is JSON, a content starting with "Error" becomes the event's `error`).
`system`/`developer` messages are kept OUT of the events (a judge must not see the policy as
conversation); their sha256 and length go to `metadata.system_prompts`. Image, audio and file
content parts become placeholders (`[image]`, `[audio: wav]`); a refusal part is its text;
a tool message may name its call in SWE-agent's `tool_call_ids` list.

`log` (a `judge.importers.report.ImportLog`): a message that cannot be read is left out and
noted, the rest kept; without one (or strict) it is the file's InputError, as before. Other
OpenAI shapes (request/response records, `chat.completion` and Responses API objects,
SWE-agent and mini-swe-agent trajectories) are read by `judge.importers.openai_logs`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from judge.errors import InputError
from judge.importers.messages import placeholder
from judge.importers.report import ImportLog
from judge.trace.loader import validation_error
from judge.trace.model import Trace

SYSTEM_ROLES = frozenset({"system", "developer"})
_OBJECT_FIELDS = frozenset({"trace_id", "id", "scenario", "candidate", "metadata", "model"})


class _Where:
    """Where an error happened: file, JSONL line, and a path prefix inside the document."""

    def __init__(self, file: str, line: int | None, prefix: str) -> None:
        self.file = file
        self.line = line
        self.prefix = prefix

    def error(self, message: str, path: str = "", fld: str | None = None) -> InputError:
        full = self.prefix + path
        if full.startswith("."):
            full = full[1:]
        return InputError(message, file=self.file, line=self.line, path=full or None,
                          field=fld)


def system_fingerprint(text: str) -> dict[str, Any]:
    """What is kept of a system prompt: its sha256 and its length, never its text (a lone
    surrogate in it is hashed as it is: the fingerprint is of what the source said)."""
    return {"sha256": hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest(),
            "chars": len(text)}


_MEDIA_PARTS = {"image_url": "image", "input_image": "image", "image": "image",
                "input_audio": "audio", "audio": "audio", "output_audio": "audio",
                "file": "file", "input_file": "file", "video": "video"}


def _text_of(content: Any, where: _Where, path: str) -> str | None:
    """Message content as text: a string, null, or a list of parts (text parts; media parts
    as placeholders; a refusal as its text)."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for j, part in enumerate(content):
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            elif isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and part.get("type") in _MEDIA_PARTS:
                parts.append(placeholder(part, _MEDIA_PARTS[str(part["type"])]))
            elif isinstance(part, dict) and isinstance(part.get("refusal"), str):
                parts.append(part["refusal"])
            else:
                raise where.error("expected a text, image, audio or file content part",
                                  f"{path}.content[{j}]")
        return "".join(parts)
    raise where.error("expected a string, null or a list of text parts", f"{path}.content")


def _decode_result(content: str) -> tuple[Any, str | None]:
    """A tool message's content as (result, error)."""
    if content.lstrip().startswith("Error"):
        return None, content
    try:
        return json.loads(content), None
    except (json.JSONDecodeError, RecursionError):
        return content, None


def _tool_call_events(msg: dict[str, Any], where: _Where, path: str,
                      names: dict[str, str]) -> Iterator[dict[str, Any]]:
    calls = msg.get("tool_calls")
    if not isinstance(calls, list):
        raise where.error("expected a list", f"{path}.tool_calls")
    for j, call in enumerate(calls):
        cpath = f"{path}.tool_calls[{j}]"
        if not isinstance(call, dict):
            raise where.error("expected a tool call object", cpath)
        fn = call.get("function")
        if not isinstance(fn, dict):
            raise where.error("expected an object with name and arguments", cpath, "function")
        name = fn.get("name")
        if not isinstance(name, str) or not name:
            raise where.error("expected the tool name (a string)", f"{cpath}.function", "name")
        raw = fn.get("arguments", "{}")
        if isinstance(raw, str):
            try:
                args = json.loads(raw) if raw.strip() else {}
            except (json.JSONDecodeError, RecursionError) as exc:
                msg_ = exc.msg if isinstance(exc, json.JSONDecodeError) else "too deep"
                raise where.error(f"arguments are not valid JSON ({msg_})",
                                  f"{cpath}.function", "arguments") from None
        else:
            args = raw
        if not isinstance(args, dict):
            raise where.error("arguments must decode to a JSON object", f"{cpath}.function",
                              "arguments")
        call_id = call.get("id")
        if call_id is not None and not isinstance(call_id, str):
            raise where.error("expected a string", cpath, "id")
        event: dict[str, Any] = {"kind": "tool_call", "tool": name, "args": args}
        if call_id:
            event["call_id"] = call_id
            names[call_id] = name
        yield event


def messages_to_events(messages: Any, where: _Where, path: str = "",
                       log: ImportLog | None = None,
                       ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Convert one message list to (trace events, system prompt fingerprints). A message
    that cannot be read is noted in `log` and left out (no log, or strict: raised)."""
    if not isinstance(messages, list):
        raise where.error("expected a list of chat messages", path)
    events: list[dict[str, Any]] = []
    systems: list[dict[str, Any]] = []
    names: dict[str, str] = {}  # call id -> tool name
    state: dict[str, str | None] = {"last_tool": None}
    for i, msg in enumerate(messages):
        mpath = f"{path}[{i}]"
        before = len(events)
        try:
            _one_message(msg, where, mpath, events, systems, names, state)
        except InputError as exc:
            del events[before:]
            if log is None:
                raise
            log.error(exc)
    for seq, ev in enumerate(events, start=1):
        ev["seq"] = seq
    return events, systems


def _one_message(msg: Any, where: _Where, mpath: str, events: list[dict[str, Any]],
                 systems: list[dict[str, Any]], names: dict[str, str],
                 state: dict[str, str | None]) -> None:
    """The events of one message, appended to `events`."""
    last_tool = state["last_tool"]
    if not isinstance(msg, dict):
        raise where.error("expected a chat message object", mpath)
    role = msg.get("role")
    if role in SYSTEM_ROLES:
        systems.append(system_fingerprint(_text_of(msg.get("content"), where, mpath) or ""))
    elif role == "user":
        text = _text_of(msg.get("content"), where, mpath)
        events.append({"kind": "user", "text": text or ""})
    elif role == "assistant":
        text = _text_of(msg.get("content"), where, mpath)
        if text and msg.get("tool_calls"):
            # Text sent in the same message as tool calls: kept, and marked, since the
            # user could not answer it before the calls ran.
            events.append({"kind": "assistant", "text": text,
                           "metadata": {"with_tool_calls": True}})
        elif text:
            events.append({"kind": "assistant", "text": text})
        if msg.get("tool_calls"):
            for ev in _tool_call_events(msg, where, mpath, names):
                state["last_tool"] = ev["tool"]
                events.append(ev)
        elif not text:
            events.append({"kind": "assistant", "text": ""})
    elif role in ("tool", "function"):
        call_id = msg.get("tool_call_id")
        ids = msg.get("tool_call_ids")
        if call_id is None and isinstance(ids, list) and ids and isinstance(ids[0], str):
            call_id = ids[0]  # SWE-agent: the calls a tool message answers
        if call_id is not None and not isinstance(call_id, str):
            raise where.error("expected a string", mpath, "tool_call_id")
        name = names.get(call_id) if call_id else None
        name = name or msg.get("name") or last_tool
        if not isinstance(name, str) or not name:
            raise where.error("tool message names no tool and answers no known call",
                              mpath, "tool_call_id")
        content = _text_of(msg.get("content"), where, mpath) or ""
        result, error = _decode_result(content)
        event: dict[str, Any] = {"kind": "tool_result", "tool": name}
        if call_id:
            event["call_id"] = call_id
        if error is not None:
            event["error"] = error
        else:
            event["result"] = result
        events.append(event)
    else:
        raise where.error(f"unknown role {role!r} (want system, user, assistant or tool)",
                          mpath, "role")


def build_trace(header: dict[str, Any], events: list[dict[str, Any]], where: _Where) -> Trace:
    """Validate the converted trace against the trace format."""
    try:
        return Trace.model_validate({**header, "events": events})
    except ValidationError as exc:
        err = validation_error(exc, where.file, where.line, where.prefix.lstrip("."))
        raise err from None


def conversation_parts(obj: Any, where: _Where, default_id: str, scenario: str | None,
                       log: ImportLog | None = None,
                       ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(header, events) of one conversation: a message list or an object with `messages`."""
    header: dict[str, Any] = {"trace_id": default_id, "scenario": scenario,
                              "candidate": {}, "metadata": {"source": "openai-chat"}}
    if isinstance(obj, dict):
        if "messages" not in obj:
            raise where.error("expected a message list or an object with 'messages'",
                              fld="messages")
        for name in ("trace_id", "id", "scenario"):
            if name in obj and not isinstance(obj[name], str):
                raise where.error("expected a string", fld=name)
        header["trace_id"] = obj.get("trace_id") or obj.get("id") or default_id
        header["scenario"] = obj.get("scenario", scenario)
        for name in ("candidate", "metadata"):
            if name in obj and not isinstance(obj[name], dict):
                raise where.error("expected an object", fld=name)
        header["candidate"] = dict(obj.get("candidate") or {})
        if isinstance(obj.get("model"), str):
            header["candidate"].setdefault("model", obj["model"])
        header["metadata"].update(obj.get("metadata") or {})
        extra = {k: v for k, v in obj.items() if k not in _OBJECT_FIELDS and k != "messages"}
        if extra:
            header["metadata"]["request"] = extra
        events, systems = messages_to_events(obj["messages"], where, ".messages", log)
    else:
        events, systems = messages_to_events(obj, where, "", log)
    if systems:
        header["metadata"]["system_prompts"] = systems
    return header, events


def _conversation(obj: Any, where: _Where, default_id: str,
                  scenario: str | None) -> Trace:
    header, events = conversation_parts(obj, where, default_id, scenario)
    return build_trace(header, events, where)


def is_message_list(obj: Any) -> bool:
    return isinstance(obj, list) and (not obj or (isinstance(obj[0], dict)
                                                  and "role" in obj[0]))


def iter_openai_chat(path: str | Path, *, prefix: str | None = None,
                     scenario: str | None = None) -> Iterator[Trace]:
    """Yield one trace per conversation of an OpenAI chat file (`.json` or `.jsonl`).

    Trace ids are the conversation's own `trace_id`/`id`, else `<prefix>/<n>` (n from 1;
    prefix defaults to the file's stem). Raises InputError naming file, line/path and field.
    """
    from judge.importers import jsonio
    from judge.trace.document import check_document

    p = Path(path)
    file = str(path)
    stem = prefix or p.stem
    if jsonio.is_jsonl(p):
        for n, (lineno, raw) in enumerate(jsonio.iter_lines(p), start=1):
            obj = jsonio.loads(raw, file, lineno)
            check_document(obj, file, lineno)
            yield _conversation(obj, _Where(file, lineno, ""), f"{stem}/{n}", scenario)
        return
    doc = jsonio.load_file(p)
    check_document(doc, file, None)
    if isinstance(doc, list) and doc and not is_message_list(doc):
        for n, obj in enumerate(doc, start=1):
            yield _conversation(obj, _Where(file, None, f"[{n - 1}]"), f"{stem}/{n}",
                                scenario)
    else:
        yield _conversation(doc, _Where(file, None, ""), f"{stem}/1", scenario)
