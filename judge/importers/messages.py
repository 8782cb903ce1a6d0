"""Chat messages of every shape importers meet, and the conversation they add up to.

`parse_messages` reads one message in any of the shapes agent telemetry and logs use:
OpenAI chat (`role`, `content`, `tool_calls`, `tool_call_id`), the OpenTelemetry GenAI
conventions (`role`, `parts` of type text / tool_call / tool_call_response), OpenInference
(`{"message": {"role", "content", "contents", "tool_calls": [{"tool_call": ...}]}}`),
Anthropic Messages (`tool_use` / `tool_result` content blocks), LangChain (serialized
constructors and `{"type": "human"|"ai"|"tool"}` dicts), inspect_ai (`tool_calls` whose
`function` is the name) and smolagents' `tool-call`/`tool-response` roles. Out come `Msg`
records: role system/user/assistant/tool, text, tool calls, and for tool messages the call
they answer.

`Conversation` turns a stream of model calls (each call's input messages, which repeat the
whole history, and its output messages) and tool executions into trace events **once each**:
an input message becomes an event only the first time it is seen (counted, so a second
"yes" later in the history is a new event), an output is always new, a tool execution pairs
with the call the model made. Every event carries its source in `metadata`.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from judge.errors import InputError

#: the role names of every convention, folded to the four a trace distinguishes
ROLES: dict[str, str] = {
    "system": "system", "developer": "system",
    "user": "user", "human": "user",
    "assistant": "assistant", "ai": "assistant", "model": "assistant", "bot": "assistant",
    "tool": "tool", "function": "tool", "ipython": "tool", "tool-response": "tool",
    "tool_response": "tool",
    "tool-call": "tool-call", "tool_call": "tool-call",
}
#: LangChain message class names (serialized constructor ids) and `type` values
_LC_TYPES = {"HumanMessage": "user", "AIMessage": "assistant", "ToolMessage": "tool",
             "SystemMessage": "system", "FunctionMessage": "tool", "ChatMessage": "",
             "HumanMessageChunk": "user", "AIMessageChunk": "assistant"}
#: smolagents prefixes a tool-response message with these; the rest is the observation
_SMOL_PREFIX = re.compile(r"\A(?:Call id: *\S+\s*\n)?(?:(Observation|Error):\s*\n)?")
_CODE_BLOCKS = (re.compile(r"```(?:py|python)?[ \t]*\n(.*?)\n?```", re.S),
                re.compile(r"<code>\n?(.*?)\n?</code>", re.S))
#: the tool smolagents' CodeAgent runs its code actions with
CODE_TOOL = "python_interpreter"


class ShapeError(ValueError):
    """A field of a message or span has the wrong shape; `field` names it."""

    def __init__(self, message: str, fld: str) -> None:
        super().__init__(message)
        self.field = fld


@dataclass
class ToolCall:
    name: str
    args: dict[str, Any]
    call_id: str | None = None


@dataclass
class Msg:
    """One message: `tool` messages answer `call_id` with `result` or `error`."""

    role: str
    text: str | None = None
    calls: list[ToolCall] = field(default_factory=list)
    call_id: str | None = None
    tool: str | None = None
    result: Any = None
    error: str | None = None


def decode_json(value: Any) -> Any:
    """A string that holds a JSON object or array, decoded; anything else as it is."""
    if isinstance(value, str):
        s = value.strip()
        if s[:1] in ("{", "[") and s[-1:] in ("}", "]"):
            try:
                return json.loads(s)
            except (ValueError, RecursionError):
                return value
    return value


def as_args(value: Any) -> dict[str, Any]:
    """Tool-call arguments as an object: a JSON string is decoded; a value that is not an
    object (a bare string, a list, or JSON a model got wrong) is kept under `input`."""
    value = decode_json(value)
    if value is None or value == "":
        return {}
    if isinstance(value, dict):
        return value
    return {"input": value}


def _text(content: Any, fld: str) -> str | None:
    """Message content as text: a string, or the text parts of a list of parts."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, int | float) and not isinstance(content, bool):
        return str(content)
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        raise ShapeError("expected text or a list of content parts", fld)
    parts: list[str] = []
    for part in content:
        if isinstance(part, str):
            parts.append(part)
        elif isinstance(part, dict):
            if "message_content" in part and isinstance(part["message_content"], dict):
                part = part["message_content"]  # OpenInference
            kind = part.get("type")
            if kind in ("reasoning", "thinking", "redacted_thinking"):
                continue  # the model's private reasoning is not a step of the agent
            if kind in ("image", "image_url", "input_image", "blob", "uri", "file"):
                parts.append(f"[{kind}]")
                continue
            text = part.get("text", part.get("content"))
            if isinstance(text, str):
                parts.append(text)
    return "\n".join(parts) if len(parts) > 1 else (parts[0] if parts else "")


def _str(value: Any, fld: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise ShapeError("expected a string", fld)


def _call(raw: Any, fld: str) -> ToolCall:
    """One tool call in OpenAI, OpenInference, GenAI, LangChain or inspect_ai shape."""
    if not isinstance(raw, dict):
        raise ShapeError("expected a tool call object", fld)
    if isinstance(raw.get("tool_call"), dict):  # OpenInference
        raw = raw["tool_call"]
    fn = raw.get("function")
    if isinstance(fn, dict):  # OpenAI / OpenInference: {"function": {"name", "arguments"}}
        name, args = fn.get("name"), fn.get("arguments")
    elif isinstance(fn, str):  # inspect_ai: {"function": "name", "arguments": {...}}
        name, args = fn, raw.get("arguments")
    else:  # GenAI part / LangChain: {"name", "arguments"|"args"|"input"}
        name = raw.get("name")
        args = raw.get("arguments", raw.get("args", raw.get("input")))
    if not isinstance(name, str) or not name:
        raise ShapeError("tool call without a name", fld)
    return ToolCall(name=name, args=as_args(args), call_id=_str(raw.get("id"), f"{fld}.id"))


def _calls(raw: Any, fld: str) -> list[ToolCall]:
    if raw is None:
        return []
    if isinstance(raw, dict):  # an indexed list that came back as a mapping
        raw = [raw[k] for k in sorted(raw, key=lambda k: (len(str(k)), str(k)))]
    if not isinstance(raw, list):
        raise ShapeError("expected a list of tool calls", fld)
    return [_call(c, f"{fld}[{i}]") for i, c in enumerate(raw)]


def _lc_role(d: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
    """LangChain: a serialized constructor, or a `{"type": ..., "data": {...}}` dict."""
    ident = d.get("id")
    if d.get("lc") is not None and isinstance(ident, list) and ident:
        kwargs = d.get("kwargs")
        if not isinstance(kwargs, dict):
            kwargs = {}
        role = _LC_TYPES.get(str(ident[-1]))
        if role == "":
            role = kwargs.get("role")
        return (role if isinstance(role, str) else None), kwargs
    if "role" not in d and isinstance(d.get("type"), str):
        body = d.get("data")
        return str(d["type"]), body if isinstance(body, dict) else d
    return None, d


def parse_messages(raw: Any, fld: str = "message") -> list[Msg]:
    """One message in any supported shape, as Msg records (an Anthropic user message with
    tool_result blocks gives one tool message per block, then its text, if any)."""
    if isinstance(raw, str):
        return [Msg("user", raw)]
    if not isinstance(raw, dict):
        raise ShapeError("expected a message object", fld)
    if isinstance(raw.get("message"), dict) and "role" not in raw:  # OpenInference
        raw = raw["message"]
    role_raw, d = _lc_role(raw)
    if role_raw is None:
        role_raw = raw.get("role")
        d = raw
    if not isinstance(role_raw, str):
        raise ShapeError("expected the message's role (a string)", f"{fld}.role")
    role = ROLES.get(role_raw.lower())
    if role is None:
        raise ShapeError(f"unknown role {role_raw!r}", f"{fld}.role")
    if role == "tool-call":
        return []  # smolagents restates the action it just took; the output had it
    content = d.get("content")
    if content is None and "contents" in d:
        content = d["contents"]
    parts = d.get("parts")
    calls = _calls(d.get("tool_calls"), f"{fld}.tool_calls")
    if not calls and isinstance(d.get("additional_kwargs"), dict):
        calls = _calls(d["additional_kwargs"].get("tool_calls"), f"{fld}.tool_calls")
    if isinstance(d.get("function_call_name"), str):  # OpenInference's legacy function call
        calls.append(ToolCall(d["function_call_name"],
                              as_args(d.get("function_call_arguments_json"))))
    elif isinstance(d.get("function_call"), dict) and role == "assistant":
        calls.append(_call({"function": d["function_call"]}, f"{fld}.function_call"))
    out: list[Msg] = []
    texts: list[str] = []
    blocks = parts if isinstance(parts, list) else content if isinstance(content, list) else None
    if blocks is not None:
        for j, block in enumerate(blocks):
            bfld = f"{fld}.{'parts' if parts is not None else 'content'}[{j}]"
            kind = block.get("type") if isinstance(block, dict) else None
            if kind in ("tool_call", "tool_use", "server_tool_use", "function_call"):
                calls.append(_call(block, bfld))
            elif kind in ("tool_call_response", "tool_result", "function_call_output"):
                assert isinstance(block, dict)
                res = block.get("response", block.get("content", block.get("output")))
                is_error = block.get("is_error") is True
                rtext = _text(res, f"{bfld}.content") if isinstance(res, list) else None
                out.append(Msg("tool", call_id=_str(block.get("id", block.get("tool_use_id",
                                                    block.get("call_id"))), f"{bfld}.id"),
                               result=None if is_error else decode_json(
                                   rtext if rtext is not None else res),
                               error=(rtext if rtext is not None else str(res)) if is_error
                               else None))
            else:
                t = _text([block], bfld)
                if t:
                    texts.append(t)
        text: str | None = "\n".join(texts) if texts else None
    else:
        text = _text(content, f"{fld}.content")
    if role == "tool":
        call_id = _str(d.get("tool_call_id", d.get("tool_use_id")), f"{fld}.tool_call_id")
        name = d.get("name") if isinstance(d.get("name"), str) else None
        name = name or (d.get("function") if isinstance(d.get("function"), str) else None)
        body = text or ""
        err = d.get("error")
        error: str | None = None
        if isinstance(err, dict):  # inspect_ai: {"type", "message"}
            error = str(err.get("message") or err.get("type") or "error")
        elif isinstance(err, str) and err:
            error = err
        m = _SMOL_PREFIX.match(body) if role_raw.lower() in ("tool-response",
                                                             "tool_response") else None
        if m is not None and m.end():
            body = body[m.end():]
            if m.group(1) == "Error":
                error = body
        if d.get("status") == "error" and error is None:  # LangChain ToolMessage
            error = body
        if out:  # parts already held the responses
            for msg in out:
                msg.tool = msg.tool or name
            return out
        return [Msg("tool", call_id=call_id, tool=name, result=None if error else
                    decode_json(body), error=error)]
    if out:  # Anthropic: tool results travel in a user message
        if text:
            out.append(Msg(role, text))
        return out
    return [Msg(role, text, calls)]


def split_code_action(text: str) -> tuple[str, str] | None:
    """(thought, code) when a CodeAgent's output holds a code action, else None."""
    for pattern in _CODE_BLOCKS:
        blocks = pattern.findall(text)
        if blocks:
            first = pattern.search(text)
            assert first is not None
            thought = text[:first.start()].strip()
            if thought.endswith("Code:"):
                thought = thought[:-len("Code:")].rstrip()
            return thought, "\n\n".join(b.strip("\n") for b in blocks)
    return None


def with_code_action(msg: Msg, call_id: str | None) -> Msg:
    """An assistant message whose text holds code: the code becomes a python_interpreter
    call (args `{"code": ...}`) and the rest its text."""
    if msg.role != "assistant" or msg.calls or not msg.text:
        return msg
    split = split_code_action(msg.text)
    if split is None:
        return msg
    thought, code = split
    return Msg("assistant", thought, [ToolCall(CODE_TOOL, {"code": code}, call_id)])


def _norm(text: str | None) -> str:
    return " ".join((text or "").split())


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def fingerprint(msg: Msg) -> tuple[str, ...]:
    """What makes two renderings of a message the same message (ids left out: frameworks
    renumber them; arguments compared as canonical JSON)."""
    if msg.role == "tool":
        body = msg.error if msg.error is not None else (
            msg.result if isinstance(msg.result, str) else _canon(msg.result))
        return ("tool", _norm(body))
    calls = tuple(f"{c.name}:{_canon(c.args)}" for c in msg.calls)
    return (msg.role, _norm(msg.text), *calls)


def system_fingerprint(text: str) -> dict[str, Any]:
    """What is kept of a system prompt: its sha256 and its length, never its text."""
    return {"sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(), "chars": len(text)}


class Conversation:
    """Events of one trace, each message once, in the order the calls are fed in.

    `source` is the metadata every event of a call carries (e.g. its span id).
    """

    def __init__(self) -> None:
        self._seen: Counter[tuple[str, ...]] = Counter()
        self._names: dict[str, str] = {}          # call id -> tool name
        self._open: list[tuple[str, str]] = []    # calls without a result: (name, id)
        self._answered: set[str] = set()          # call ids whose result is an event
        self._called: set[str] = set()            # call ids whose call is an event
        self.systems: list[dict[str, Any]] = []
        self._system_seen: set[str] = set()
        self.last_tool: str | None = None

    # -- model calls -------------------------------------------------------------------------
    def inputs(self, msgs: Iterable[Msg], source: dict[str, Any]) -> list[dict[str, Any]]:
        """The events for the messages of a model call's input not seen before."""
        out: list[dict[str, Any]] = []
        here: Counter[tuple[str, ...]] = Counter()
        for msg in msgs:
            if msg.role == "system":
                self.system(msg.text or "")
                continue
            if msg.role == "tool" and msg.call_id and msg.call_id in self._answered:
                continue
            fp = fingerprint(msg)
            here[fp] += 1
            if here[fp] <= self._seen[fp]:
                continue
            self._seen[fp] = here[fp]
            out.extend(self._events(msg, source))
        return out

    def outputs(self, msgs: Iterable[Msg], source: dict[str, Any]) -> list[dict[str, Any]]:
        """The events for a model call's output (always new)."""
        out: list[dict[str, Any]] = []
        for msg in msgs:
            if msg.role == "system":
                continue
            self._seen[fingerprint(msg)] += 1
            out.extend(self._events(msg, source))
        return out

    def system(self, text: str) -> None:
        fp = system_fingerprint(text)
        if fp["sha256"] not in self._system_seen:
            self._system_seen.add(fp["sha256"])
            self.systems.append(fp)

    # -- tool executions ----------------------------------------------------------------------
    def pair(self, name: str, call_id: str | None) -> str | None:
        """The id of the model's call a tool execution answers: its own id, else the oldest
        open call of the same tool."""
        if call_id:
            return call_id
        for n, cid in self._open:
            if n == name:
                return cid
        return None

    def tool_call(self, name: str, call_id: str | None, args: dict[str, Any],
                  source: dict[str, Any]) -> list[dict[str, Any]]:
        """A tool execution's call: an event unless the model's output already made it."""
        call_id = self.pair(name, call_id)
        if call_id and call_id in self._called:
            return []
        return self._events(Msg("assistant", None, [ToolCall(name, args, call_id)]), source,
                            count=True)

    def tool_result(self, name: str, call_id: str | None, result: Any, error: str | None,
                    source: dict[str, Any]) -> list[dict[str, Any]]:
        """A tool execution's result (once per call id)."""
        call_id = self.pair(name, call_id)
        if call_id and call_id in self._answered:
            return []
        msg = Msg("tool", call_id=call_id, tool=name, result=result, error=error)
        self._seen[fingerprint(msg)] += 1
        return self._events(msg, source)

    # -- events --------------------------------------------------------------------------------
    def _events(self, msg: Msg, source: dict[str, Any],
                count: bool = False) -> list[dict[str, Any]]:
        if count:
            self._seen[fingerprint(msg)] += 1
        md = dict(source)
        if msg.role == "user":
            return [{"kind": "user", "text": msg.text or "", "metadata": md}]
        if msg.role == "assistant":
            out: list[dict[str, Any]] = []
            if msg.text:
                amd = {**md, "with_tool_calls": True} if msg.calls else md
                out.append({"kind": "assistant", "text": msg.text, "metadata": amd})
            elif not msg.calls:
                out.append({"kind": "assistant", "text": "", "metadata": md})
            for call in msg.calls:
                ev: dict[str, Any] = {"kind": "tool_call", "tool": call.name,
                                      "args": call.args, "metadata": md}
                if call.call_id:
                    ev["call_id"] = call.call_id
                    self._names[call.call_id] = call.name
                    self._called.add(call.call_id)
                    self._open.append((call.name, call.call_id))
                self.last_tool = call.name
                out.append(ev)
            return out
        # a tool message
        name = msg.tool or (self._names.get(msg.call_id) if msg.call_id else None)
        name = name or self.last_tool or "(unknown tool)"
        ev = {"kind": "tool_result", "tool": name, "metadata": md}
        if msg.call_id:
            ev["call_id"] = msg.call_id
            self._answered.add(msg.call_id)
            self._open = [(n, c) for n, c in self._open if c != msg.call_id]
        if msg.error is not None:
            ev["error"] = msg.error
        else:
            ev["result"] = msg.result
        return [ev]


def printable(text: str) -> str:
    """Hostile text for an error message: unprintable characters (ESC, line breaks, bidi
    controls) written as their Python escapes."""
    return text if text.isprintable() else "".join(
        c if c.isprintable() else repr(c)[1:-1] for c in text)


def shape_error(exc: ShapeError, file: str, line: int | None, where: str | None,
                prefix: str = "") -> InputError:
    """A ShapeError as the InputError the CLI prints (file, line, span/record, field)."""
    fld = f"{prefix}{exc.field}" if prefix else exc.field
    return InputError(str(exc), file=file, line=line, path=where, field=fld)
