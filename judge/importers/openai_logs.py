"""`judge import openai-chat`: every OpenAI shape a log holds, as traces.

- message lists, objects with `messages`, lists of such (`judge.importers.openai_chat`);
- `{"request", "response"}` records: a chat request (`messages`) with its `chat.completion`,
  or a Responses API request (`input`, `instructions`) with its `response` — the calls of
  agent runs, one trace per conversation, each message once (`judge.importers.exchanges`);
- a `chat.completion` object alone (its choice's message), or a Responses API `response`
  object (its `output` items: messages, `function_call` / `function_call_output`, built-in
  tool calls with their results; reasoning left out and counted);
- SWE-agent `.traj` files and mini-swe-agent trajectories (`judge.importers.swe_agent`),
  whose actions are text: read with text actions (`judge.importers.text_actions`) unless
  `actions="none"`.

`actions="text"` turns fenced action blocks into tool calls for every shape.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from judge.errors import InputError
from judge.importers import jsonio
from judge.importers.exchanges import (
    Dialect,
    Dialogue,
    Exchanges,
    Request,
    Response,
    is_exchange,
    read_messages,
)
from judge.importers.imported import ImportedTrace
from judge.importers.messages import Msg, ShapeError, parse_messages
from judge.importers.openai_chat import _Where, conversation_parts, is_message_list
from judge.importers.report import ImportLog
from judge.importers.swe_agent import (
    is_mini_swe_agent,
    is_swe_agent,
    swe_agent_trace,
    trace_id_of,
)
from judge.importers.text_actions import DEFAULT_TOOL, with_text_actions


def is_completion(obj: Any) -> bool:
    return isinstance(obj, dict) and (obj.get("object") in ("chat.completion",
                                                            "chat.completion.chunk")
                                      or (isinstance(obj.get("choices"), list)
                                          and "messages" not in obj))


def is_response(obj: Any) -> bool:
    return isinstance(obj, dict) and (obj.get("object") == "response" or (
        isinstance(obj.get("output"), list) and "messages" not in obj
        and "role" not in obj))


def _items(raw: Any, fld: str, log: ImportLog) -> list[Msg]:
    """Responses API input or output: a string (one user message) or a list of items."""
    if isinstance(raw, str):
        return [Msg("user", raw)]
    return read_messages(raw, fld, log, parse_messages)


def _request(req: Any, where: str, log: ImportLog) -> Request:
    if not isinstance(req, dict):
        raise ShapeError("expected a request object", where)
    model = req["model"] if isinstance(req.get("model"), str) else None
    if "messages" in req:
        return Request(None, read_messages(req["messages"], f"{where}.messages", log,
                                           parse_messages), model)
    if "input" in req:
        system = req.get("instructions") if isinstance(req.get("instructions"), str) else None
        prev = req.get("previous_response_id")
        return Request(system, _items(req["input"], f"{where}.input", log), model,
                       prev if isinstance(prev, str) else None)
    raise ShapeError("a request needs its messages (or its input)", f"{where}.messages")


def _completion_messages(resp: dict[str, Any], where: str) -> list[Msg]:
    out: list[Msg] = []
    choices = resp.get("choices")
    if not isinstance(choices, list):
        raise ShapeError("expected a list of choices", f"{where}.choices")
    for i, choice in enumerate(choices[:1]):  # a trace follows the first choice
        if not isinstance(choice, dict):
            raise ShapeError("expected a choice object", f"{where}.choices[{i}]")
        msg = choice.get("message", choice.get("delta"))
        if isinstance(msg, dict):
            out.extend(parse_messages({"role": "assistant", **msg},
                                      f"{where}.choices[{i}].message"))
    return out


def _response(resp: Any, where: str) -> Response | None:
    if resp is None:
        return None
    if not isinstance(resp, dict):
        raise ShapeError("expected a response object", where)
    model = resp["model"] if isinstance(resp.get("model"), str) else None
    rid = resp["id"] if isinstance(resp.get("id"), str) else None
    if is_completion(resp):
        return Response(_completion_messages(resp, where), rid, model)
    if isinstance(resp.get("output"), list):
        msgs: list[Msg] = []
        for i, item in enumerate(resp["output"]):
            msgs.extend(parse_messages(item, f"{where}.output[{i}]"))
        return Response(msgs, rid, model)
    if resp.get("error") is not None:
        return None
    raise ShapeError("expected a chat.completion or a response object", where)


OPENAI = Dialect("openai-chat", _request, _response)


def pick_dialect(rec: dict[str, Any]) -> Dialect:
    """The dialect of one exchange of a log that may call several providers."""
    from judge.importers.anthropic_messages import ANTHROPIC
    from judge.importers.detect import exchange_format
    return OPENAI if exchange_format(rec) == "openai-chat" else ANTHROPIC


def read_records(p: Path, file: str) -> list[tuple[int | None, str, Any]]:
    """(line, where, object): each line (JSONL), each conversation of a list of them, or
    the document."""
    if jsonio.is_jsonl(p):
        return [(lineno, "", jsonio.loads(raw, file, lineno))
                for lineno, raw in jsonio.iter_lines(p)]
    doc = jsonio.load_file(p)
    if isinstance(doc, list) and doc and not is_message_list(doc):
        return [(None, f"[{i}]", r) for i, r in enumerate(doc)]
    return [(None, "", doc)]


def _one(rec: Any, where: str, line: int | None, default_id: str, file: str,
         scenario: str | None, log: ImportLog) -> ImportedTrace:
    """A record that is one trace by itself."""
    if is_completion(rec) or is_response(rec):
        d = Dialogue(default_id if not isinstance(rec.get("id"), str) else rec["id"])
        d.response(_response(rec, where or "response"), {"source_record": line or 0})
        return d.imported(file, scenario, "openai-chat")
    if isinstance(rec, dict) and "input" in rec and "messages" not in rec:
        d = Dialogue(default_id)
        d.request(_request(rec, where or "request", log), {"source_record": line or 0},
                  once=True)
        return d.imported(file, scenario, "openai-chat")
    header, events = conversation_parts(rec, _Where(file, line, where), default_id, scenario,
                                        log)
    for ev in events:
        ev.pop("seq", None)  # (positions are filled when written)
    return ImportedTrace(header, iter(events), file)


def iter_openai(path: str | Path, *, scenario: str | None = None, prefix: str | None = None,
                log: ImportLog | None = None, actions: str | None = None,
                action_tool: str = DEFAULT_TOOL) -> Iterator[ImportedTrace]:
    """The traces of an OpenAI log of any shape (see the module docstring). `actions`:
    "text" (fenced blocks are tool calls), "none", or None (the shape's default)."""
    p = Path(path)
    file = str(path)
    log = log if log is not None else ImportLog(file)
    stem = prefix or p.stem
    exchanges = Exchanges(OPENAI, stem, log, pick_dialect)
    n = 0
    for k, (line, where, rec) in enumerate(read_records(p, file)):
        record = line if line is not None else k
        log.source["records"] += 1
        text = actions == "text"
        try:
            if is_exchange(rec):
                assert isinstance(rec, dict)
                exchanges.add(rec, where, record)
                continue
            n += 1
            single = line is None and not where  # the file is this one record
            default_id = f"{stem}/{n}"
            if is_swe_agent(rec):
                assert isinstance(rec, dict)
                t = swe_agent_trace(rec, file=file,
                                    trace_id=trace_id_of(p) if single else default_id,
                                    scenario=scenario, log=log, default_tool=action_tool)
                text = False  # its actions are read from their own fields
            else:
                if is_mini_swe_agent(rec):
                    text = actions != "none"
                    default_id = trace_id_of(p) if single else default_id
                    if isinstance(rec, dict) and "trajectory_format" in rec:
                        rec = {"messages": rec.get("messages"),
                               "metadata": {"trajectory_format": rec["trajectory_format"]}}
                t = _one(rec, where, line, default_id, file, scenario, log)
        except ShapeError as exc:
            path_, _, fld = exc.field.rpartition(".")
            log.problem(f"{exc}: the record is left out", where=path_ or where or None,
                        fld=fld, line=line)
            continue
        except InputError as exc:
            if line is None and not where:
                raise
            log.error(exc)
            continue
        if text:
            t.events = with_text_actions(t.events, action_tool)
        yield t
    for t in exchanges.traces(file, scenario):
        if actions == "text":
            t.events = with_text_actions(t.events, action_tool)
        yield t
