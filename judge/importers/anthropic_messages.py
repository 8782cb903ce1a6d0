"""Import Anthropic Messages logs as traces.

Accepted shapes (`.json`, or `.jsonl` with one of them a line):

- a message list: `[{"role": "user"|"assistant", "content": str | [blocks]}]`;
- a request: `{"model", "system", "messages", ...}`, optionally with its `response`;
- exchanges: a list of `{"request": {...}, "response": {...}}` records — the successive calls
  of one agent run, each request repeating the history. Each message becomes an event once
  (see `judge.importers.messages.Conversation`). Records that carry a `trace_id`,
  `conversation_id` or `session_id` are grouped by it; otherwise a file's exchanges are one
  trace.

Blocks: `text`; `tool_use` (`id`, `name`, `input`) → a tool call; `tool_result`
(`tool_use_id`, `content`, `is_error`) → a tool result; `thinking` is left out (the model's
private reasoning is not an agent step); images become `[image]`. `system` (string or text
blocks) is kept out of the events: its sha256 and length go to `metadata.system_prompts`.
Events keep their source: `metadata.source_record` (the record's index or line) and, for a
response, `metadata.source_message_id` (the response's `msg_…` id).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from judge.errors import InputError
from judge.importers.imported import ImportedTrace
from judge.importers.messages import Conversation, Msg, ShapeError, parse_messages

_GROUP_KEYS = ("trace_id", "conversation_id", "session_id")


def _system(value: Any, fld: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(b.get("text", "") for b in value if isinstance(b, dict))
    raise ShapeError("expected a string or a list of text blocks", fld)


def _msgs(messages: Any, fld: str) -> list[Msg]:
    if not isinstance(messages, list):
        raise ShapeError("expected a list of messages", fld)
    out: list[Msg] = []
    for i, m in enumerate(messages):
        out.extend(parse_messages(m, f"{fld}[{i}]"))
    return out


def _is_exchange(obj: Any) -> bool:
    return isinstance(obj, dict) and "request" in obj and ("response" in obj or "error" in obj)


class _Trace:
    """The events of one trace, fed record by record."""

    def __init__(self, trace_id: str) -> None:
        self.trace_id = trace_id
        self.conv = Conversation()
        self.events: list[dict[str, Any]] = []
        self.model: str | None = None

    def request(self, req: Any, where: str, source: dict[str, Any]) -> None:
        if not isinstance(req, dict):
            raise ShapeError("expected a request object", where)
        if "messages" not in req:
            raise ShapeError("a request needs its messages", f"{where}.messages")
        system = _system(req.get("system"), f"{where}.system")
        if system:
            self.conv.system(system)
        if isinstance(req.get("model"), str) and self.model is None:
            self.model = req["model"]
        self.events.extend(self.conv.inputs(_msgs(req["messages"], f"{where}.messages"),
                                            source))

    def response(self, resp: Any, where: str, source: dict[str, Any]) -> None:
        if resp is None:
            return
        if not isinstance(resp, dict):
            raise ShapeError("expected a response (message) object", where)
        if resp.get("type") == "error":
            return
        msg = {"role": resp.get("role", "assistant"), "content": resp.get("content", [])}
        src = dict(source)
        if isinstance(resp.get("id"), str):
            src["source_message_id"] = resp["id"]
        if isinstance(resp.get("model"), str):
            self.model = self.model or resp["model"]
        self.events.extend(self.conv.outputs(parse_messages(msg, where), src))

    def imported(self, file: str, scenario: str | None,
                 extra: dict[str, Any]) -> ImportedTrace:
        md: dict[str, Any] = {"source": "anthropic", **extra}
        if self.conv.systems:
            md["system_prompts"] = self.conv.systems
        header = {"trace_id": self.trace_id, "scenario": scenario,
                  "candidate": {"model": self.model} if self.model else {}, "metadata": md}
        return ImportedTrace(header, iter(self.events), file)


def _conversation(obj: Any, trace_id: str, where: str, record: int) -> _Trace:
    t = _Trace(trace_id)
    source = {"source_record": record}
    if isinstance(obj, list):
        t.request({"messages": obj}, where, source)
    elif isinstance(obj, dict) and "messages" in obj:
        t.request(obj, where, source)
        if "response" in obj:
            t.response(obj["response"], f"{where}.response", source)
    else:
        raise ShapeError("expected a message list, a request with 'messages', or "
                         "request/response records", where or "messages")
    return t


def _group_of(rec: dict[str, Any], default: str) -> str:
    for key in _GROUP_KEYS:
        value = rec.get(key)
        if isinstance(value, str) and value:
            return value
    return default


def _fail(exc: ShapeError, file: str, line: int | None) -> InputError:
    path, _, fld = exc.field.rpartition(".")
    return InputError(str(exc), file=file, line=line, path=path or None, field=fld)


def iter_anthropic(path: str | Path, *, scenario: str | None = None,
                   prefix: str | None = None) -> Iterator[ImportedTrace]:
    """One trace per conversation (or per group of exchanges) of an Anthropic log."""
    p = Path(path)
    file = str(path)
    stem = prefix or p.stem
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read ({exc.strerror})", file=file) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text ({exc.reason})", file=file) from None
    records: list[tuple[int | None, str, Any]] = []  # (line, where, object)
    if p.suffix == ".jsonl":
        for lineno, raw in enumerate(text.splitlines(), start=1):
            if raw.strip():
                try:
                    records.append((lineno, "", json.loads(raw)))
                except (ValueError, RecursionError) as exc:
                    raise InputError(f"malformed JSON ({' '.join(str(exc).split())[:80]})",
                                     file=file, line=lineno) from None
    else:
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"malformed JSON ({exc.msg} at column {exc.colno})", file=file,
                             line=exc.lineno) from None
        except RecursionError:
            raise InputError("malformed JSON (nested too deeply)", file=file) from None
        if isinstance(doc, list) and doc and all(_is_exchange(r) or (isinstance(r, dict) and
                                                 "messages" in r) for r in doc):
            records = [(None, f"[{i}]", r) for i, r in enumerate(doc)]
        else:
            records = [(None, "", doc)]
    groups: dict[str, _Trace] = {}
    n = 0
    for k, (line, where, rec) in enumerate(records):
        record = line if line is not None else k
        try:
            if _is_exchange(rec):
                assert isinstance(rec, dict)
                gid = _group_of(rec, stem)
                t = groups.get(gid)
                if t is None:
                    t = groups[gid] = _Trace(gid)
                source = {"source_record": record}
                t.request(rec["request"], f"{where}.request".lstrip("."), source)
                t.response(rec.get("response"), f"{where}.response".lstrip("."), source)
                continue
            n += 1
            tid = f"{stem}/{n}"
            if isinstance(rec, dict):  # a conversation's own id, as openai-chat reads it
                tid = next((rec[k] for k in ("trace_id", "id", *_GROUP_KEYS[1:])
                            if isinstance(rec.get(k), str) and rec[k]), tid)
            t = _conversation(rec, tid, where, record)
        except ShapeError as exc:
            raise _fail(exc, file, line) from None
        yield t.imported(file, scenario, {})
    for t in groups.values():
        yield t.imported(file, scenario, {})
