"""The calls of a trace as the differ sees them: tool, arguments, whether the tool only reads,
and whether its result reported an error."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any

from judge.diff.normalise import canonical, normalise
from judge.trace import Trace
from judge.trace.model import EventKind

#: first words of tool names taken as read-only when no scenario or --mutating says otherwise
READ_VERBS = frozenset({
    "get", "list", "search", "find", "lookup", "look", "read", "fetch", "query", "check",
    "view", "show", "describe", "count", "calculate", "think", "retrieve", "load", "browse",
    "inspect", "verify", "validate", "preview", "estimate"})

_WORD = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")


def first_word(tool: str) -> str:
    """`get_order`, `getOrder`, `orders.get`'s leading word, lower case (`get`, `get`, `orders`)."""
    m = _WORD.search(tool)
    return m.group(0).lower() if m else ""


@dataclass(frozen=True)
class ReadOnlyPolicy:
    """Which tools only read. Precedence: a tool matching `read_tools` reads; else, when
    `mutating_tools` is given, a tool matching none of them reads; else (no list given) a
    tool reads when its name starts with a read verb (READ_VERBS)."""

    mutating_tools: tuple[str, ...] = ()
    read_tools: tuple[str, ...] = ()

    def reads(self, tool: str) -> bool:
        if any(fnmatchcase(tool, p) for p in self.read_tools):
            return True
        if self.mutating_tools:
            return not any(fnmatchcase(tool, p) for p in self.mutating_tools)
        return first_word(tool) in READ_VERBS


@dataclass(frozen=True)
class Call:
    """One tool call of a trace, with what its result said."""

    index: int  # position among the trace's calls (0-based)
    seq: int
    turn: int
    tool: str
    args: dict[str, Any]
    read_only: bool
    error: str | None = None  # its result's error, if it failed
    result_seq: int | None = None
    key: str = field(default="", compare=False)  # the normalised args, as one string

    def label(self) -> str:
        return f"{self.tool} (seq {self.seq})"


def calls_of(trace: Trace, policy: ReadOnlyPolicy) -> list[Call]:
    """The trace's tool calls in order. A result belongs to the call with its `call_id`, else
    to the earliest call of the same tool still waiting for one."""
    pending: list[dict[str, Any]] = []
    raw: list[dict[str, Any]] = []
    for ev in trace.events:
        if ev.kind is EventKind.TOOL_CALL:
            rec: dict[str, Any] = {"ev": ev, "error": None, "result_seq": None}
            raw.append(rec)
            pending.append(rec)
        elif ev.kind is EventKind.TOOL_RESULT:
            match = next((r for r in pending if ev.call_id is not None
                          and r["ev"].call_id == ev.call_id), None)
            if match is None:
                match = next((r for r in pending if r["ev"].tool == ev.tool), None)
            if match is not None:
                pending.remove(match)
                match["error"] = ev.error
                match["result_seq"] = ev.seq
    out: list[Call] = []
    for i, r in enumerate(raw):
        ev = r["ev"]
        tool = str(ev.tool)
        args = dict(ev.args or {})
        out.append(Call(i, int(ev.seq or 0), int(ev.turn or 0), tool, args,
                        policy.reads(tool), r["error"], r["result_seq"],
                        canonical(normalise(args))))
    return out


def writes(calls: Sequence[Call]) -> list[Call]:
    """The calls that may change state and did not report an error."""
    return [c for c in calls if not c.read_only and c.error is None]
