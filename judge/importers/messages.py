"""Chat messages of every shape importers meet, read into one record (`Msg`).

`parse_messages` reads one message in any of the shapes agent telemetry and logs use:
OpenAI chat (`role`, `content`, `tool_calls`, `tool_call_id` or SWE-agent's
`tool_call_ids`), the OpenAI Responses API's input/output items (`message`,
`function_call`, `function_call_output`, built-in tool calls), the OpenTelemetry GenAI
conventions (`role`, `parts` of type text / tool_call / tool_call_response), OpenInference
(`{"message": {"role", "content", "contents", "tool_calls": [{"tool_call": ...}]}}`),
Anthropic Messages (`tool_use` / `tool_result` blocks, and server-side tools:
`server_tool_use` / `mcp_tool_use` followed by their `*_tool_result` block in the same
assistant message), the Vercel AI SDK (`tool-call` / `tool-result` parts), LangChain
(serialized constructors and `{"type": "human"|"ai"|"tool"}` dicts), inspect_ai
(`tool_calls` whose `function` is the name; `tool_use` content for server-side tools) and
smolagents' `tool-call`/`tool-response` roles.

Out come `Msg` records, in the order the source has them: role system/user/assistant/tool,
text, tool calls, and for tool messages the call they answer. An assistant message whose
blocks interleave text, server-side tool calls and their results gives one record per
stretch (text and the calls after it; each result), so "searching…", the search, its
result and the answer keep their order. Images, audio and files become placeholders
(`[image]`, `[audio: wav]`); the model's private reasoning (`thinking`, `reasoning`) is
left out and counted by the caller (`Msg.omitted`).
"""

from __future__ import annotations

import hashlib
import json
import re
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
#: content parts that are the model's private reasoning, not a step of the agent
REASONING_PARTS = frozenset({"reasoning", "thinking", "redacted_thinking", "reasoning_text"})
#: content parts kept as a placeholder: their kind (and format, when the part says)
_MEDIA = {"image": "image", "image_url": "image", "input_image": "image", "blob": "blob",
          "uri": "uri", "file": "file", "input_file": "file", "document": "document",
          "audio": "audio", "input_audio": "audio", "output_audio": "audio", "video": "video",
          "container_upload": "file"}
#: content parts that call a tool
_CALL_PARTS = frozenset({"tool_call", "tool_use", "server_tool_use", "function_call",
                         "mcp_tool_use", "tool-call"})
#: content parts that hold a tool's result
_RESULT_PARTS = frozenset({"tool_call_response", "tool_result", "function_call_output",
                           "tool-result", "mcp_tool_result"})
#: OpenAI Responses API items that are calls of a built-in tool (name = the item type)
_BUILTIN_CALLS = frozenset({"web_search_call", "file_search_call", "computer_call",
                            "code_interpreter_call", "image_generation_call", "mcp_call",
                            "local_shell_call", "custom_tool_call", "shell_call",
                            "apply_patch_call", "tool_search_call"})
_OPAQUE_KEYS = frozenset({"encrypted_content", "encrypted_index", "signature"})


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
    """One message: `tool` messages answer `call_id` with `result` or `error`. `omitted`
    counts what the source message held that no event carries (reasoning)."""

    role: str
    text: str | None = None
    calls: list[ToolCall] = field(default_factory=list)
    call_id: str | None = None
    tool: str | None = None
    result: Any = None
    error: str | None = None
    omitted: int = 0
    meta: dict[str, Any] | None = None  # extra event metadata (e.g. parsed from text)


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


def without_opaque(value: Any) -> Any:
    """A tool result with its opaque blobs (encrypted content, signatures) shown as their
    size: they mean nothing to a reader and would swamp a judge's context."""
    if isinstance(value, dict):
        return {k: (f"[{k}: {len(v)} chars]" if k in _OPAQUE_KEYS and isinstance(v, str)
                    else without_opaque(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [without_opaque(v) for v in value]
    return value


def placeholder(part: dict[str, Any], kind: str) -> str:
    """`[image]`, `[audio: wav]`, `[file: report.pdf]`: what a media part was."""
    detail: Any = None
    for key in ("format", "mime_type", "mimeType", "media_type", "filename", "name"):
        if isinstance(part.get(key), str) and part[key]:
            detail = part[key]
            break
    inner = part.get(kind) if isinstance(part.get(kind), dict) else part.get("input_audio")
    if detail is None and isinstance(inner, dict):
        detail = next((inner[k] for k in ("format", "mime_type", "filename")
                       if isinstance(inner.get(k), str)), None)
    return f"[{kind}: {detail}]" if detail else f"[{kind}]"


def _part_text(part: dict[str, Any], counter: list[int]) -> str | None:
    if "message_content" in part and isinstance(part["message_content"], dict):
        part = part["message_content"]  # OpenInference
    kind = part.get("type")
    if kind in REASONING_PARTS:
        counter[0] += 1
        return None
    if isinstance(kind, str) and kind in _MEDIA:
        return placeholder(part, _MEDIA[kind])
    if kind == "refusal" and isinstance(part.get("refusal"), str):
        return str(part["refusal"])
    text = part.get("text", part.get("content"))
    if isinstance(text, str):
        return text
    if kind in ("json", "output_json") and "value" in part:
        return json.dumps(part["value"], ensure_ascii=False, default=str)
    return None


def _text(content: Any, fld: str, counter: list[int] | None = None) -> str | None:
    """Message content as text: a string, or the text parts of a list of parts."""
    counter = counter if counter is not None else [0]
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
            t = _part_text(part, counter)
            if t is not None:
                parts.append(t)
    return "\n".join(parts) if len(parts) > 1 else (parts[0] if parts else "")


def _str(value: Any, fld: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise ShapeError("expected a string", fld)


def _call(raw: Any, fld: str) -> ToolCall:
    """One tool call in OpenAI, OpenInference, GenAI, Anthropic, Vercel, LangChain or
    inspect_ai shape."""
    if not isinstance(raw, dict):
        raise ShapeError("expected a tool call object", fld)
    if isinstance(raw.get("tool_call"), dict):  # OpenInference
        raw = raw["tool_call"]
    fn = raw.get("function")
    if isinstance(fn, dict):  # OpenAI / OpenInference: {"function": {"name", "arguments"}}
        name, args = fn.get("name"), fn.get("arguments", fn.get("args"))
    elif isinstance(fn, str):  # inspect_ai: {"function": "name", "arguments": {...}}
        name, args = fn, raw.get("arguments")
    else:  # GenAI part / Anthropic / Vercel / LangChain: {"name", "arguments"|"args"|"input"}
        name = raw.get("name", raw.get("toolName"))
        args = raw.get("arguments", raw.get("args", raw.get("input")))
    if not isinstance(name, str) or not name:
        raise ShapeError("tool call without a name", fld)
    call_id = raw.get("id", raw.get("toolCallId", raw.get("call_id")))
    if raw.get("type") == "function_call" and raw.get("call_id") is not None:
        call_id = raw["call_id"]  # Responses API: `id` is the item's, `call_id` the call's
    return ToolCall(name=name, args=as_args(args), call_id=_str(call_id, f"{fld}.id"))


def _calls(raw: Any, fld: str) -> list[ToolCall]:
    if raw is None:
        return []
    raw = decode_json(raw)
    if isinstance(raw, dict):  # an indexed list that came back as a mapping
        raw = [raw[k] for k in sorted(raw, key=lambda k: (len(str(k)), str(k)))]
    if not isinstance(raw, list):
        raise ShapeError("expected a list of tool calls", fld)
    return [_call(c, f"{fld}[{i}]") for i, c in enumerate(raw) if c is not None]


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
    if "role" not in d and isinstance(d.get("type"), str) and d["type"].lower() in ROLES:
        body = d.get("data")
        return str(d["type"]), body if isinstance(body, dict) else d
    return None, d


def _result_value(block: dict[str, Any], fld: str) -> tuple[Any, str | None]:
    """(result, error) of a tool-result block or part of any convention."""
    res = block.get("response", block.get("content", block.get("output",
                                                                block.get("result"))))
    if isinstance(res, dict) and set(res) <= {"type", "value"} and "value" in res:
        res = res["value"]  # Vercel AI SDK v5: {"type": "text" | "json", "value": ...}
    if isinstance(block.get("error"), str) and block["error"]:
        return None, str(block["error"])
    is_error = block.get("is_error") is True or block.get("isError") is True or (
        isinstance(res, dict) and str(res.get("type", "")).endswith("_error"))
    rtext = _text(res, f"{fld}.content") if isinstance(res, list) and all(
        isinstance(p, dict) and p.get("type") in ("text", *_MEDIA) for p in res) else None
    value = rtext if rtext is not None else without_opaque(res)
    if is_error:
        if isinstance(res, dict):
            return None, str(res.get("error_code") or res.get("message") or res)
        return None, value if isinstance(value, str) else json.dumps(value, default=str)
    return decode_json(value), None


def _result_msg(block: dict[str, Any], fld: str) -> Msg:
    result, error = _result_value(block, fld)
    cid = block.get("tool_use_id", block.get("toolCallId", block.get("call_id",
                                                                     block.get("id"))))
    name = block.get("toolName", block.get("name"))
    return Msg("tool", call_id=_str(cid, f"{fld}.id"),
               tool=name if isinstance(name, str) else None, result=result, error=error)


def _responses_item(d: dict[str, Any], fld: str) -> list[Msg] | None:
    """An OpenAI Responses API item that is not a `message` (None: not one)."""
    kind = d.get("type")
    if kind == "function_call":
        return [Msg("assistant", None, [_call(d, fld)])]
    if kind in ("function_call_output", "custom_tool_call_output", "computer_call_output",
                "local_shell_call_output", "shell_call_output", "apply_patch_call_output"):
        output = d.get("output")
        return [Msg("tool", call_id=_str(d.get("call_id"), f"{fld}.call_id"),
                    result=decode_json(output if not isinstance(output, list)
                                       else _text(output, f"{fld}.output")))]
    if kind == "reasoning":
        return [Msg("assistant", None, omitted=1)]
    if isinstance(kind, str) and kind in _BUILTIN_CALLS:
        args = {k: v for k, v in d.items() if k not in ("type", "id", "status", "call_id",
                                                          "output", "results", "result")}
        cid = _str(d.get("call_id", d.get("id")), f"{fld}.id")
        out: list[Msg] = [Msg("assistant", None, [ToolCall(kind, as_args(args), cid)])]
        result = next((d[k] for k in ("output", "results", "result") if k in d), None)
        if result is not None or d.get("status") in ("completed", "failed"):
            err = d.get("error") if d.get("status") == "failed" else None
            out.append(Msg("tool", call_id=cid, tool=kind, result=without_opaque(result),
                           error=str(err or "failed") if d.get("status") == "failed"
                           else None))
        return out
    return None


def parse_messages(raw: Any, fld: str = "message", default_role: str | None = None,
                   ) -> list[Msg]:
    """One message in any supported shape, as Msg records (an Anthropic user message with
    tool_result blocks gives one tool message per block, then its text, if any).
    `default_role`: the role of a message that names none (e.g. an exporter stripped it)."""
    if isinstance(raw, str):
        return [Msg(default_role or "user", raw)]
    if not isinstance(raw, dict):
        raise ShapeError("expected a message object", fld)
    if isinstance(raw.get("message"), dict) and "role" not in raw:  # OpenInference
        raw = raw["message"]
    if "role" not in raw:
        item = _responses_item(raw, fld)
        if item is not None:
            return item
    role_raw, d = _lc_role(raw)
    if role_raw is None:
        role_raw = raw.get("role")
        d = raw
        if role_raw is None and default_role is not None:
            role_raw = default_role
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
    blocks = parts if isinstance(parts, list) else content if isinstance(content, list) else None
    if blocks is None:
        if role == "tool" and _tool_definition(content):
            return [Msg("system", json.dumps(decode_json(content), sort_keys=True))]
        reasoning = [0]
        text = _text(content, f"{fld}.content", reasoning)
        in_text = calls_in_text(text) if role in ("assistant", "tool") and not calls else None
        if in_text is not None:
            return [Msg("assistant", None, in_text)]
        if role == "tool":
            return [_tool_message(d, role_raw, text, fld)]
        return [Msg(role, text, calls, omitted=reasoning[0])]
    return _blocks(d, role, role_raw, blocks, calls, fld, "parts" if parts is not None
                   else "content")


def _blocks(d: dict[str, Any], role: str, role_raw: str, blocks: list[Any],
            calls: list[ToolCall], fld: str, key: str) -> list[Msg]:
    """A message whose content is a list of blocks, read in block order."""
    out: list[Msg] = []
    texts: list[str] = []
    seg_calls: list[ToolCall] = []
    reasoning = [0]
    results: list[Msg] = []  # tool results a user (or tool) message carries

    def flush() -> None:
        nonlocal texts, seg_calls
        if texts or seg_calls:
            out.append(Msg(role, "\n".join(texts) if texts else None, seg_calls))
        texts, seg_calls = [], []

    for j, block in enumerate(blocks):
        bfld = f"{fld}.{key}[{j}]"
        if block is None:
            continue
        if isinstance(block, dict) and "type" not in block:
            block = _gemini_part(block)
        kind = block.get("type") if isinstance(block, dict) else None
        if kind in _CALL_PARTS:
            assert isinstance(block, dict)
            seg_calls.append(_call(block, bfld))
            if "result" in block and role == "assistant":  # inspect's server-side tool use
                flush()
                out.append(_result_msg({**block, "tool_use_id": block.get("id")}, bfld))
        elif isinstance(block, dict) and (kind in _RESULT_PARTS or (
                isinstance(kind, str) and kind.endswith("_tool_result"))):
            msg = _result_msg(block, bfld)
            if role == "assistant":  # a server-side tool's result, in the model's turn
                flush()
                out.append(msg)
            else:
                results.append(msg)
        else:
            if seg_calls and role == "assistant":
                flush()  # text after a call: a new stretch of the model's turn
            t = _text([block], bfld, reasoning)
            if t:
                texts.append(t)
    if role == "tool":
        body = "\n".join(texts) if texts else ""
        if results:
            name = d.get("name") if isinstance(d.get("name"), str) else None
            for msg in results:
                msg.tool = msg.tool or name
            return results
        return [_tool_message(d, role_raw, body, fld)]
    if results:  # Anthropic: tool results travel in a user message
        if texts:
            results.append(Msg(role, "\n".join(texts)))
        return results
    if calls:  # calls given beside the content (OpenAI `tool_calls` with content parts)
        seg_calls = calls + seg_calls
    flush()
    if not out:
        out.append(Msg(role, "", []))
    out[0].omitted = reasoning[0]
    return out


def _gemini_part(part: dict[str, Any]) -> dict[str, Any]:
    """A Gemini content part (`text`, `function_call`, `function_response`, `inline_data`,
    `thought`) in the shape of the other conventions' parts."""
    for key in ("function_call", "functionCall"):
        if isinstance(part.get(key), dict):
            fc = part[key]
            return {"type": "tool_call", "name": fc.get("name"), "arguments": fc.get("args"),
                    "id": fc.get("id")}
    for key in ("function_response", "functionResponse"):
        if isinstance(part.get(key), dict):
            fr = part[key]
            return {"type": "tool_call_response", "id": fr.get("id"), "name": fr.get("name"),
                    "response": fr.get("response")}
    if part.get("thought") is True:
        return {"type": "thinking"}
    for key, kind in (("inline_data", "blob"), ("inlineData", "blob"), ("file_data", "file"),
                      ("fileData", "file")):
        if isinstance(part.get(key), dict):
            return {"type": kind, "mime_type": part[key].get("mime_type",
                                                              part[key].get("mimeType"))}
    return part


def calls_in_text(text: Any) -> list[ToolCall] | None:
    """OpenAI tool calls written as a message's text (`[{"function": {...}, "id", "type":
    "function"}]`, as some instrumentations log them), or None."""
    if not isinstance(text, str) or not text.lstrip().startswith("[{"):
        return None
    value = decode_json(text)
    if isinstance(value, list) and value and all(
            isinstance(c, dict) and isinstance(c.get("function"), dict)
            and isinstance(c["function"].get("name"), str) for c in value):
        return [_call(c, "content") for c in value]
    return None


def _tool_definition(content: Any) -> bool:
    """A tool's definition (name, description, parameters) where a message belongs."""
    value = decode_json(content)
    fn = value.get("function") if isinstance(value, dict) else None
    return isinstance(fn, dict) and "parameters" in fn and value.get("type") == "function"


def _tool_message(d: dict[str, Any], role_raw: str, text: str | None, fld: str) -> Msg:
    call_id = _str(d.get("tool_call_id", d.get("tool_use_id")), f"{fld}.tool_call_id")
    ids = d.get("tool_call_ids")
    meta: dict[str, Any] | None = None
    if call_id is None and isinstance(ids, list) and ids:  # SWE-agent
        call_id = _str(ids[0], f"{fld}.tool_call_ids[0]")
        if len(ids) > 1:
            meta = {"tool_call_ids": [str(i) for i in ids]}
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
    return Msg("tool", call_id=call_id, tool=name, result=None if error else
               decode_json(body), error=error, meta=meta)


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
    return Msg("assistant", thought, [ToolCall(CODE_TOOL, {"code": code}, call_id)],
               omitted=msg.omitted)


def system_fingerprint(text: str) -> dict[str, Any]:
    """What is kept of a system prompt: its sha256 and its length, never its text."""
    return {"sha256": hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest(),
            "chars": len(text)}


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
