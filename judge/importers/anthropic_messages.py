"""Import Anthropic Messages logs as traces.

Accepted shapes (`.json`, or `.jsonl` with one of them a line):

- a message list: `[{"role": "user"|"assistant", "content": str | [blocks]}]`;
- a request: `{"model", "system", "messages", ...}`, optionally with its `response`;
- exchanges: a list of `{"request": {...}, "response": {...}}` records — the successive calls
  of agent runs, each request repeating its history: one trace per conversation, each
  message once (`judge.importers.exchanges`);
- a Claude managed-agent session log (`judge.importers.anthropic_sessions`).

Blocks, in the order the message has them: `text`; `tool_use` (`id`, `name`, `input`) → a
tool call; `tool_result` (`tool_use_id`, `content`, `is_error`) → a tool result; server-side
tools (`server_tool_use`, `mcp_tool_use`) → a call, and their result blocks in the same
assistant message (`web_search_tool_result`, `web_fetch_tool_result`,
`code_execution_tool_result`, `mcp_tool_result`, …) → its result, right after it and before
the text that answers from it; `thinking` is left out (the model's private reasoning is not
an agent step; counted); images and documents become `[image]`, `[document]`. `system`
(string or text blocks) is kept out of the events: its sha256 and length go to
`metadata.system_prompts`. Events keep their source: `metadata.source_record` (the record's
index or line) and, for a response, `metadata.source_message_id` (the response's `msg_…` id).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from judge.importers import jsonio
from judge.importers.exchanges import (
    GROUP_KEYS,
    Dialect,
    Dialogue,
    Exchanges,
    Request,
    Response,
    is_exchange,
    read_messages,
)
from judge.importers.imported import ImportedTrace
from judge.importers.messages import ShapeError, parse_messages
from judge.importers.report import ImportLog


def _system(value: Any, fld: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(b.get("text", "") for b in value if isinstance(b, dict))
    raise ShapeError("expected a string or a list of text blocks", fld)


def _request(req: Any, where: str, log: ImportLog) -> Request:
    if not isinstance(req, dict):
        raise ShapeError("expected a request object", where)
    if "messages" not in req:
        raise ShapeError("a request needs its messages", f"{where}.messages")
    msgs = read_messages(req["messages"], f"{where}.messages", log, parse_messages)
    model = req["model"] if isinstance(req.get("model"), str) else None
    return Request(_system(req.get("system"), f"{where}.system"), msgs, model)


def _response(resp: Any, where: str) -> Response | None:
    if resp is None:
        return None
    if not isinstance(resp, dict):
        raise ShapeError("expected a response (message) object", where)
    if resp.get("type") == "error":
        return None
    msg = {"role": resp.get("role", "assistant"), "content": resp.get("content", [])}
    return Response(parse_messages(msg, where),
                    resp["id"] if isinstance(resp.get("id"), str) else None,
                    resp["model"] if isinstance(resp.get("model"), str) else None)


ANTHROPIC = Dialect("anthropic", _request, _response)


def _conversation(obj: Any, trace_id: str, where: str, record: int,
                  log: ImportLog) -> Dialogue:
    d = Dialogue(trace_id)
    source = {"source_record": record}
    if isinstance(obj, list):
        d.request(_request({"messages": obj}, where, log), source, once=True)
    elif isinstance(obj, dict) and "messages" in obj:
        d.request(_request(obj, where, log), source, once=True)
        if "response" in obj:
            d.response(_response(obj["response"], f"{where}.response".lstrip(".")), source)
    else:
        raise ShapeError("expected a message list, a request with 'messages', or "
                         "request/response records", where or "messages")
    return d


def read_records(p: Path, file: str) -> list[tuple[int | None, str, Any]]:
    """(line, where, object) of every record of a log: its lines (JSONL), the items of a
    list of exchanges or requests, or the document."""
    if jsonio.is_jsonl(p):
        return [(lineno, "", jsonio.loads(raw, file, lineno))
                for lineno, raw in jsonio.iter_lines(p)]
    doc = jsonio.load_file(p)
    if isinstance(doc, list) and doc and all(is_exchange(r) or (isinstance(r, dict) and
                                             "messages" in r) for r in doc):
        return [(None, f"[{i}]", r) for i, r in enumerate(doc)]
    return [(None, "", doc)]


def record_error(exc: ShapeError, log: ImportLog, line: int | None) -> None:
    path, _, fld = exc.field.rpartition(".")
    log.problem(f"{exc}: the record is left out", where=path or None, fld=fld, line=line)


def iter_anthropic(path: str | Path, *, scenario: str | None = None,
                   prefix: str | None = None, log: ImportLog | None = None,
                   ) -> Iterator[ImportedTrace]:
    """One trace per conversation (or per group of exchanges) of an Anthropic log."""
    p = Path(path)
    file = str(path)
    log = log if log is not None else ImportLog(file)
    stem = prefix or p.stem
    records = read_records(p, file)
    from judge.importers.anthropic_sessions import is_session_log, iter_sessions
    if is_session_log([r for _, _, r in records]):
        yield from iter_sessions(records, file=file, scenario=scenario, prefix=stem, log=log)
        return
    from judge.importers.openai_logs import pick_dialect
    exchanges = Exchanges(ANTHROPIC, stem, log, pick_dialect)
    n = 0
    for k, (line, where, rec) in enumerate(records):
        record = line if line is not None else k
        log.source["records"] += 1
        try:
            if is_exchange(rec):
                assert isinstance(rec, dict)
                exchanges.add(rec, where, record)
                continue
            n += 1
            tid = f"{stem}/{n}"
            if isinstance(rec, dict):  # a conversation's own id, as openai-chat reads it
                tid = next((rec[key] for key in ("trace_id", "id", *GROUP_KEYS[1:])
                            if isinstance(rec.get(key), str) and rec[key]), tid)
            d = _conversation(rec, tid, where, record, log)
        except ShapeError as exc:
            record_error(exc, log, line)
            continue
        yield d.imported(file, scenario, "anthropic")
    yield from exchanges.traces(file, scenario)
