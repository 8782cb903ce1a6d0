"""Request/response logs: the successive model calls of agent runs, each request repeating
its conversation, as one trace per conversation.

Records that carry a `trace_id`, `conversation_id` or `session_id` are grouped by it.
Otherwise an exchange continues the conversation whose last response its request repeats
(the same first message, and that response among its messages) and starts one of its own
when none does: two runs logged to one file are two traces, however alike they start. Each
message becomes an event once (`judge.importers.conversation`: by ids, then by position).
A format gives how to read its requests and responses (`Dialect`); Anthropic Messages and
the OpenAI chat and Responses APIs share the rest.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from judge.importers.conversation import Conversation, fingerprint
from judge.importers.imported import ImportedTrace
from judge.importers.messages import Msg, ShapeError
from judge.importers.report import ImportLog

GROUP_KEYS = ("trace_id", "conversation_id", "session_id", "conversation")


@dataclass(frozen=True)
class Request:
    system: str | None
    messages: list[Msg]
    model: str | None
    continues: str | None = None  # the response it continues (`previous_response_id`)


@dataclass(frozen=True)
class Response:
    messages: list[Msg]
    message_id: str | None
    model: str | None


@dataclass(frozen=True)
class Dialect:
    """How one API's requests and responses read (each raises ShapeError naming a field;
    `messages(raw, fld, log)` notes and leaves out a bad message)."""

    source: str
    request: Callable[[Any, str, ImportLog], Request]
    response: Callable[[Any, str], Response | None]


def is_exchange(obj: Any) -> bool:
    return isinstance(obj, dict) and "request" in obj and ("response" in obj or "error" in obj)


def group_of(rec: dict[str, Any]) -> str | None:
    """The conversation a record names: its own key, or its request's (the Responses
    API's `conversation`, a string or `{"id"}`)."""
    raw = rec.get("request")
    req: dict[str, Any] = raw if isinstance(raw, dict) else {}
    for source in (rec, req):
        for key in GROUP_KEYS:
            value = source.get(key)
            if isinstance(value, dict):
                value = value.get("id")
            if isinstance(value, str) and value:
                return value
    return None


class Dialogue:
    """The events of one conversation, fed exchange by exchange (or once, whole)."""

    def __init__(self, trace_id: str) -> None:
        self.trace_id = trace_id
        self.conv = Conversation()
        self.events: list[dict[str, Any]] = []
        self.model: str | None = None
        self.first: Any = None  # the fingerprint of its first message
        self.last: Any = None  # the fingerprint of its last response's last message
        self.response_ids: set[str] = set()

    def request(self, req: Request, source: dict[str, Any], *, once: bool,
                call: Any = None) -> None:
        if req.system:
            self.conv.system(req.system)
        self.model = self.model or req.model
        if self.first is None and req.messages:
            self.first = fingerprint(req.messages[0])
        if once:
            self.events.extend(self.conv.messages(req.messages, source))
        else:
            self.events.extend(self.conv.inputs(req.messages, source, call=call))

    def response(self, resp: Response | None, source: dict[str, Any],
                 call: Any = None) -> None:
        if resp is None:
            return
        src = dict(source)
        if resp.message_id:
            src["source_message_id"] = resp.message_id
            self.response_ids.add(resp.message_id)
        self.model = self.model or resp.model
        if resp.messages:
            self.last = fingerprint(resp.messages[-1])
        self.events.extend(self.conv.outputs(resp.messages, src, call=call))

    def continued_by(self, req: Request) -> bool:
        if req.continues is not None:
            return req.continues in self.response_ids
        keys = [fingerprint(m) for m in req.messages]
        if not keys or keys[0] != self.first:
            return False
        return self.last is None or self.last in keys

    def imported(self, file: str, scenario: str | None, source: str,
                 extra: dict[str, Any] | None = None) -> ImportedTrace:
        md: dict[str, Any] = {"source": source, **(extra or {})}
        if self.conv.systems:
            md["system_prompts"] = self.conv.systems
        header = {"trace_id": self.trace_id, "scenario": scenario,
                  "candidate": {"model": self.model} if self.model else {}, "metadata": md}
        return ImportedTrace(header, iter(self.events), file, self.conv.omitted)


class Exchanges:
    """Exchanges grouped into conversations (see the module docstring)."""

    def __init__(self, dialect: Dialect, stem: str, log: ImportLog,
                 pick: Callable[[dict[str, Any]], Dialect] | None = None) -> None:
        self.dialect = dialect
        self.pick = pick
        self.stem = stem
        self.log = log
        self.groups: dict[str, Dialogue] = {}
        self.free: list[Dialogue] = []

    def add(self, rec: dict[str, Any], where: str, record: Any) -> None:
        """One `{request, response}` record (ShapeError: it cannot be read). `pick` chooses
        the dialect of each record (a log may hold calls to several providers)."""
        dialect = self.pick(rec) if self.pick is not None else self.dialect
        req = dialect.request(rec["request"], _join(where, "request"), self.log)
        resp = dialect.response(rec.get("response"), _join(where, "response"))
        gid = group_of(rec)
        if gid is not None:
            d = self.groups.get(gid)
            if d is None:
                d = self.groups[gid] = Dialogue(gid)
        else:
            d = next((c for c in reversed(self.free) if c.continued_by(req)), None)
            if d is None:
                d = Dialogue(f"{self.stem}/conversation-{len(self.free) + 1}")
                self.free.append(d)
        source = {"source_record": record}
        d.request(req, source, once=False, call=record)
        d.response(resp, source, call=record)

    def traces(self, file: str, scenario: str | None) -> list[ImportedTrace]:
        if len(self.free) == 1 and not self.groups:
            self.free[0].trace_id = self.stem  # one conversation: the file's name
        return [d.imported(file, scenario, self.dialect.source)
                for d in [*self.groups.values(), *self.free]]


def _join(where: str, path: str) -> str:
    return f"{where}.{path}".lstrip(".") if where else path


def read_messages(raw: Any, fld: str, log: ImportLog,
                  parse: Callable[[Any, str], list[Msg]]) -> list[Msg]:
    """The messages of a list; a bad one is noted and left out (strict: raised)."""
    if not isinstance(raw, list):
        raise ShapeError("expected a list of messages", fld)
    out: list[Msg] = []
    for i, m in enumerate(raw):
        try:
            out.extend(parse(m, f"{fld}[{i}]"))
        except ShapeError as exc:
            path, _, name = exc.field.rpartition(".")
            log.problem(f"{exc}: the message is left out", where=path or None, fld=name)
    return out
