"""Span trees to traces: the part of the OpenTelemetry and LangSmith importers that does not
depend on the format.

Each format's reader turns its spans (or runs) into `SpanRecord`s: ids, times, a kind (an LLM
call, a tool execution, an agent or chain step) and what the kind needs (the call's input and
output messages; the tool's name, call id, arguments and result). `spans_to_traces` then:

1. **spills** every record to a temporary SQLite file as it is read (memory stays flat
   however large the export) and keeps a few facts per trace (model, agent, root input);
2. **replays** each trace in time order — a span's *start* (an LLM call's new input
   messages, a tool's call) and its *end* (the LLM's output, the tool's result) are moments,
   and the moments are visited in time order — through a `Conversation`, which makes each
   message an event once however many LLM spans repeat it.

One trace per trace id, in the order the ids first appear. Every event's metadata names its
source: `source_span_id`, `source_trace_id`, and `source_parent_span_id` (so an annotation on
a step span finds the events of the LLM and tool spans inside it).

LLM spans nested inside another LLM span (a framework's wrapper around the SDK's calls, the
Vercel AI SDK's `ai.generateText` around its `doGenerate` steps) are the same calls: the
innermost ones that carry messages count, the wrapper does not (its output is the last
step's). A span id seen twice in a trace is one span when both copies are the same (a
re-export), and two (noted) when they differ. Inside a smolagents CodeAgent (a span named
`CodeAgent.*` or below it, until another agent's span), a model output that holds a code
block is a `python_interpreter` call whose args carry the code, the tools the code calls are
calls of their own, and the step span's output (the observations) is the interpreter's result.
"""

from __future__ import annotations

import contextlib
import heapq
import json
import os
import re
import sqlite3
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import orjson

from judge.errors import InputError
from judge.importers.conversation import Conversation
from judge.importers.imported import ImportedTrace
from judge.importers.messages import CODE_TOOL, Msg, ToolCall, printable, with_code_action
from judge.importers.report import ImportLog

Kind = Literal["llm", "tool", "agent", "chain", "other"]
_OTHER_AGENT = re.compile(r"\w*Agent\.(run|__call__)\b")


@dataclass
class ToolUse:
    name: str
    call_id: str | None = None
    args: dict[str, Any] = field(default_factory=dict)
    result: Any = None
    error: str | None = None
    has_result: bool = False


@dataclass
class SpanRecord:
    """One span (or run), reduced to what a trace needs."""

    trace_id: str | None  # None: the parent's (or wrapping document's), resolved on spilling
    span_id: str
    parent_id: str | None  # None: the span that held it, if any, resolved on spilling
    name: str
    start: int | None  # unix nanoseconds
    end: int | None
    ordinal: int  # position in the file (pre-order for nested spans): breaks ties
    parent_ordinal: int | None = None  # the object that held it in the file
    wrapper: bool = False  # a document wrapping spans (only its trace id counts)
    kind: Kind = "other"
    inputs: list[Msg] | None = None
    outputs: list[Msg] | None = None
    tool: ToolUse | None = None
    error: str | None = None
    in_value: Any = None
    out_value: Any = None
    model: str | None = None
    agent: str | None = None
    task_id: str | None = None  # the dataset example a root run was made for

    def to_json(self) -> bytes:
        try:  # orjson serializes dataclasses itself, without asdict's deep copy
            return orjson.dumps(self, default=str)
        except (TypeError, orjson.JSONEncodeError):
            return dump_blob(asdict(self))

    @classmethod
    def from_json(cls, data: bytes) -> SpanRecord:
        d = load_blob(data)
        for name in ("inputs", "outputs"):
            if d[name] is not None:
                d[name] = [_msg(m) for m in d[name]]
        if d["tool"] is not None:
            d["tool"] = ToolUse(**d["tool"])
        return cls(**d)


def dump_blob(value: Any) -> bytes:
    """JSON bytes of a record (orjson; Python's json for what orjson refuses: integers
    wider than 64 bits, lone surrogates, which the writer repairs and notes later)."""
    try:
        return orjson.dumps(value, default=str)
    except (TypeError, orjson.JSONEncodeError):
        return json.dumps(value, default=str).encode()


def load_blob(data: bytes) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data)


def _msg(d: dict[str, Any]) -> Msg:
    d["calls"] = [ToolCall(**c) for c in d["calls"]]
    return Msg(**d)


@dataclass
class _TraceFacts:
    first: int
    n: int = 0
    model: str | None = None
    agent: str | None = None
    has_user: bool = False
    root: Any = None  # the input value of the earliest root span
    root_id: str | None = None  # that span's id
    task_id: str | None = None  # the task (dataset example) the root names, if any


class _Spill:
    """Span records on disk (a temporary SQLite file): ids inherited through nesting are
    resolved there, and traces are read back one at a time in time order."""

    def __init__(self, file: str, log: ImportLog) -> None:
        self.file = file
        self.log = log
        fd, self.path = tempfile.mkstemp(prefix="judge-spans-", suffix=".sqlite")
        os.close(fd)
        self.db = sqlite3.connect(self.path)
        self.db.executescript(
            "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA cache_size=-4096;"
            "CREATE TABLE s (o INTEGER PRIMARY KEY, po INTEGER, w INTEGER, t TEXT, sid TEXT,"
            " ps TEXT, k INTEGER, model TEXT, agent TEXT, user INTEGER, kd TEXT,"
            " msgs INTEGER, b BLOB);")
        self._rows: list[tuple[Any, ...]] = []

    def add(self, rec: SpanRecord) -> None:
        has_user = rec.kind == "llm" and bool(rec.inputs) and any(
            m.role == "user" for m in rec.inputs or [])
        self._rows.append((
            rec.ordinal, rec.parent_ordinal, int(rec.wrapper), rec.trace_id,
            None if rec.wrapper else rec.span_id, rec.parent_id,
            rec.start if rec.start is not None else -1,
            rec.model if rec.kind == "llm" else None, rec.agent, int(has_user), rec.kind,
            int(bool(rec.inputs or rec.outputs)), None if rec.wrapper else rec.to_json()))
        if len(self._rows) >= 500:
            self.flush()

    def flush(self) -> None:
        try:
            self.db.executemany("INSERT INTO s VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)", self._rows)
        except sqlite3.IntegrityError:
            raise InputError("the same position read twice (internal)", file=self.file) \
                from None
        self._rows = []

    def resolve(self) -> dict[str, _TraceFacts]:
        """Inherit trace ids and parent span ids through nesting; leave out (noted) spans
        without a trace id; one span for identical copies of a span id; the facts of each
        trace."""
        self.flush()
        db = self.db
        while db.execute(
                "UPDATE s SET t = (SELECT p.t FROM s p WHERE p.o = s.po) WHERE t IS NULL"
                " AND po IS NOT NULL AND (SELECT p.t FROM s p WHERE p.o = s.po) IS NOT NULL"
                ).rowcount:
            pass
        db.execute("UPDATE s SET ps = (SELECT p.sid FROM s p WHERE p.o = s.po AND p.w = 0)"
                   " WHERE ps IS NULL AND po IS NOT NULL AND w = 0")
        for (sid,) in db.execute("SELECT sid FROM s WHERE w = 0 AND t IS NULL").fetchall():
            self.log.problem("the span has no trace id (nor a parent or document that has "
                             "one)", where=f"span {printable(sid)}", fld="traceId")
        db.execute("DELETE FROM s WHERE w = 0 AND t IS NULL")
        db.execute("CREATE INDEX s_tko ON s (t, k, o) WHERE w = 0")
        for t, sid in db.execute("SELECT t, sid FROM s WHERE w = 0 GROUP BY t, sid"
                                 " HAVING COUNT(*) > 1").fetchall():
            rows = db.execute("SELECT o, b FROM s WHERE w = 0 AND t = ? AND sid = ?"
                              " ORDER BY o", (t, sid)).fetchall()
            seen: set[bytes] = set()
            for o, blob in rows:
                body = _without_position(blob)
                if body in seen:
                    db.execute("DELETE FROM s WHERE o = ?", (o,))
                seen.add(body)
            if len(seen) > 1:
                self.log.note(f"span id used {len(rows)} times in trace {printable(t)} with "
                              f"different content: {len(seen)} spans kept",
                              where=f"span {printable(sid)}", fld="spanId", action="kept")
            elif len(rows) > 1:
                self.log.omit("repeated copies of a span", len(rows) - 1)
        facts: dict[str, _TraceFacts] = {}
        for t, first, n in db.execute("SELECT t, MIN(o), COUNT(*) FROM s WHERE w = 0"
                                      " GROUP BY t ORDER BY MIN(o)"):
            facts[t] = _TraceFacts(first=first, n=n)
        return facts

    def facts(self, trace_id: str, f: _TraceFacts) -> _TraceFacts:
        q = self.db.execute
        row = q("SELECT model FROM s WHERE w = 0 AND t = ? AND model IS NOT NULL"
                " ORDER BY k, o LIMIT 1", (trace_id,)).fetchone()
        f.model = row[0] if row else None
        row = q("SELECT agent FROM s WHERE w = 0 AND t = ? AND agent IS NOT NULL"
                " ORDER BY k, o LIMIT 1", (trace_id,)).fetchone()
        f.agent = row[0] if row else None
        f.has_user = q("SELECT 1 FROM s WHERE w = 0 AND t = ? AND user = 1 LIMIT 1",
                       (trace_id,)).fetchone() is not None
        row = q("SELECT b FROM s WHERE w = 0 AND t = ? AND ps IS NULL ORDER BY k, o LIMIT 1",
                (trace_id,)).fetchone()
        root = load_blob(row[0]) if row else {}
        f.root = root.get("in_value")
        f.root_id = root.get("span_id")
        f.task_id = root.get("task_id")
        return f

    def wrappers(self, trace_id: str) -> set[str]:
        """The LLM spans of a trace that hold an LLM span with messages (see the module
        docstring): their own messages are the inner calls' again."""
        parent: dict[str, str | None] = {}
        inner: list[str] = []
        llm: set[str] = set()
        for sid, ps, kd, msgs in self.db.execute(
                "SELECT sid, ps, kd, msgs FROM s WHERE w = 0 AND t = ?", (trace_id,)):
            parent[sid] = ps
            if kd == "llm":
                llm.add(sid)
                if msgs:
                    inner.append(sid)
        out: set[str] = set()
        for sid in inner:
            seen = {sid}
            p = parent.get(sid)
            while p is not None and p not in seen:
                seen.add(p)
                if p in llm:
                    out.add(p)
                p = parent.get(p)
        return out

    def trace(self, trace_id: str) -> Iterator[SpanRecord]:
        cur = self.db.execute("SELECT b, ps FROM s WHERE w = 0 AND t = ? ORDER BY k, o",
                              (trace_id,))
        for blob, parent in cur:
            rec = SpanRecord.from_json(blob)
            rec.trace_id = trace_id
            rec.parent_id = parent
            yield rec

    def close(self) -> None:
        self.db.close()
        with contextlib.suppress(OSError):
            os.unlink(self.path)


def _without_position(blob: bytes) -> bytes:
    """A record's content without where it was in the file (two copies of one span)."""
    d = load_blob(blob)
    for key in ("ordinal", "parent_ordinal"):
        d.pop(key, None)
    return json.dumps(d, sort_keys=True, default=str).encode()


def value_text(value: Any) -> str | None:
    """The text of a root span's input: a string, or the task/input/question of an object."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        for key in ("task", "input", "question", "query", "prompt", "content", "text"):
            if isinstance(value.get(key), str) and value[key].strip():
                return str(value[key])
        for key in ("messages", "inputs"):
            if isinstance(value.get(key), list | dict):
                return None  # a message list: the LLM spans carry it
    return None


class _Replay:
    """The events of one trace, moment by moment."""

    def __init__(self, trace_id: str, facts: _TraceFacts, wrappers: set[str]) -> None:
        self.trace_id = trace_id
        self.facts = facts
        self.wrappers = wrappers
        self.conv = Conversation()
        self.in_code: dict[str, bool] = {}
        self.code_calls: dict[str, str] = {}  # step span id -> its python_interpreter call id

    def source(self, rec: SpanRecord) -> dict[str, Any]:
        md: dict[str, Any] = {"source_span_id": rec.span_id, "source_trace_id": self.trace_id}
        if rec.parent_id is not None:
            md["source_parent_span_id"] = rec.parent_id
        return md

    def _counts(self, rec: SpanRecord) -> bool:
        return rec.kind == "llm" and rec.span_id not in self.wrappers

    def start(self, rec: SpanRecord) -> list[dict[str, Any]]:
        p = rec.parent_id
        code = self.in_code.get(p, False) if p is not None else False
        if "CodeAgent" in rec.name:
            code = True
        elif _OTHER_AGENT.match(rec.name):
            code = False
        self.in_code[rec.span_id] = code
        if self._counts(rec) and rec.inputs:
            msgs = [with_code_action(m, None) for m in rec.inputs] if code else rec.inputs
            return self.conv.inputs(msgs, self.source(rec), call=rec.span_id)
        if rec.kind == "tool" and rec.tool is not None:
            t = rec.tool
            return self.conv.tool_call(t.name, t.call_id, t.args, self.source(rec),
                                       key=rec.span_id)
        return []

    def end(self, rec: SpanRecord) -> list[dict[str, Any]]:
        p = rec.parent_id
        if rec.kind == "llm":
            if not self._counts(rec) or not rec.outputs:
                return []
            msgs = rec.outputs
            if self.in_code.get(rec.span_id):
                call_id = f"code-{rec.span_id}"
                msgs = [with_code_action(m, call_id) for m in msgs]
                if p is not None and any(c.call_id == call_id for m in msgs for c in m.calls):
                    self.code_calls[p] = call_id
            return self.conv.outputs(msgs, self.source(rec), call=rec.span_id)
        if rec.kind == "tool" and rec.tool is not None:
            t = rec.tool
            if not t.has_result and t.error is None and rec.error is None:
                return []
            return self.conv.tool_result(t.name, t.call_id, t.result, t.error or rec.error,
                                         self.source(rec), key=rec.span_id)
        code_id = self.code_calls.pop(rec.span_id, None)
        if code_id is not None:
            return self.conv.tool_result(CODE_TOOL, code_id, rec.out_value, rec.error,
                                         self.source(rec))
        return []

    def events(self, spans: Iterator[SpanRecord]) -> Iterator[dict[str, Any]]:
        text = value_text(self.facts.root) if not self.facts.has_user else None
        if text:
            yield {"kind": "user", "text": text,
                   "metadata": {"source_span_id": self.facts.root_id or "(root)",
                                "source_trace_id": self.trace_id}}
        pending: list[tuple[int, int, int, int, SpanRecord]] = []
        for n, rec in enumerate(spans):
            at = rec.start if rec.start is not None else -1
            while pending and pending[0][0] <= at:
                yield from self.end(heapq.heappop(pending)[4])
            yield from self.start(rec)
            end = rec.end if rec.end is not None else at
            # equal end times: the span that started later (the inner one) ends first
            heapq.heappush(pending, (end, -at, -rec.ordinal, n, rec))
        while pending:
            yield from self.end(heapq.heappop(pending)[4])


def spans_to_traces(records: Iterable[SpanRecord], *, file: str, source: str,
                    scenario: str | None = None,
                    header_extra: dict[str, Any] | None = None,
                    log: ImportLog | None = None) -> Iterator[ImportedTrace]:
    """One ImportedTrace per trace id of `records`, in first-appearance order.

    All records are read (and spilled) before the first trace is yielded: a trace's spans
    may be anywhere in a file. Exhaust each trace's events before asking for the next.
    """
    log = log if log is not None else ImportLog(file)
    spill = _Spill(file, log)
    try:
        for rec in records:
            spill.add(rec)
            log.source[f"spans ({rec.kind})" if not rec.wrapper else "documents"] += 1
        facts = spill.resolve()
        if not facts:
            if log.notes:
                from judge.importers.imported import nothing_imported
                raise nothing_imported(log)
            raise InputError("no spans found (expected OTLP/JSON resourceSpans, or span "
                             "objects with span and trace ids)", file=file)
        for trace_id, f in facts.items():
            spill.facts(trace_id, f)
            replay = _Replay(trace_id, f, spill.wrappers(trace_id))
            candidate: dict[str, Any] = {}
            if f.model:
                candidate["model"] = f.model
            if f.agent:
                candidate["agent"] = f.agent
            metadata: dict[str, Any] = {"source": source, "source_trace_id": trace_id,
                                        "spans": f.n}
            root_text = value_text(f.root)
            if root_text:
                metadata["task"] = {"instruction": root_text}
            if f.task_id:
                metadata["task_id"] = f.task_id
            if header_extra:
                metadata.update(header_extra)
            # System prompts are kept out of the events: their fingerprints are listed here
            # as the events stream (the writer dumps the header after them).
            metadata["system_prompts"] = replay.conv.systems
            header = {"trace_id": trace_id, "scenario": scenario, "candidate": candidate,
                      "metadata": metadata}
            yield ImportedTrace(header, replay.events(spill.trace(trace_id)), file)
    finally:
        spill.close()
