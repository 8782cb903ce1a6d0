"""What a set of traces shows, gathered in one streaming pass for `judge init`.

Per tool: calls, results (successful, failed), a result that acknowledges a change, calls
made right after a user's yes, the largest number of successful calls in one trace. Per
id-carrying argument of a call (see `classify.id_args`): in how many calls it was present,
in how many its value had been returned by an earlier successful tool result of the same
trace (and by which tools) or said by the user, and the values it took. Per trace: its first
user message, tool calls, identical calls.

The lookup bookkeeping mirrors the `lookup_before_mutate` check (results' scalars and keys,
walked in the same order and with the same per-result limit; `"42"` and `42` are the same
id), so a lookup rule the draft writes as holding does hold on these traces. Memory is
bounded by the number of distinct tools, argument paths and ids kept (capped), not by the
length of the traces.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from judge.checks.context import MAX_LOOKUP_VALUES, MAX_SCALARS_PER_RESULT
from judge.checks.matching import any_regex
from judge.drafting.classify import acknowledgement, id_args, result_scalars
from judge.ledger.scenario import Confirmation
from judge.trace.model import Event, EventKind, TraceHeader

MAX_VALUES = 50  # distinct values kept per argument path
MAX_SOURCE_SETS = 1_000  # distinct sets of source tools kept per argument path
MAX_ENTITIES = 5_000  # distinct ids kept over all traces
MAX_SEEN = MAX_LOOKUP_VALUES  # result scalars remembered per trace, as the check does
MAX_USER_TEXT = 200_000  # characters of user text searched for ids per trace
MAX_ACK_TRIES = 50  # successful results of a tool searched for an acknowledgement
MAX_TRACE_IDS = 20


@dataclass
class PathStats:
    """One id-carrying argument path of one tool."""

    present: int = 0  # calls with an id at this path
    from_results: int = 0  # ... whose id an earlier successful result returned
    from_user: int = 0  # ... whose id the user had said
    sources: Counter[str] = field(default_factory=Counter)  # tools whose results returned it
    # per call whose id a result returned: the set of tools that had returned it
    source_sets: Counter[frozenset[str]] = field(default_factory=Counter)
    more_source_sets: bool = False  # more than MAX_SOURCE_SETS distinct sets
    values: Counter[str | int] = field(default_factory=Counter)
    more_values: bool = False  # more than MAX_VALUES distinct values


@dataclass
class ToolStats:
    name: str
    calls: int = 0
    traces: int = 0
    ok: int = 0  # successful results
    failed: int = 0
    ack: str | None = None  # the first acknowledgement of a change seen in a result
    confirmed: int = 0  # calls made after a user yes that followed the agent's last message
    max_ok_in_trace: int = 0  # the most successful results in one trace
    paths: dict[str, PathStats] = field(default_factory=dict)


@dataclass
class Entity:
    value: str | int
    uses: Counter[str] = field(default_factory=Counter)  # "tool arg" -> calls
    from_user: int = 0
    from_results: Counter[str] = field(default_factory=Counter)
    unexplained: int = 0  # used with no earlier user message or result carrying it


@dataclass
class _TraceState:
    seen: dict[Any, set[str]] = field(default_factory=dict)  # result scalar -> tools
    user_text: list[str] = field(default_factory=list)
    user_chars: int = 0
    confirmed: bool = False
    assistant_seen: bool = False
    calls: int = 0
    signatures: Counter[str] = field(default_factory=Counter)
    ok_by_tool: Counter[str] = field(default_factory=Counter)
    tools: set[str] = field(default_factory=set)


@dataclass
class Observation:
    traces: int = 0
    events: int = 0
    trace_ids: list[str] = field(default_factory=list)
    scenarios: Counter[str] = field(default_factory=Counter)
    first_user: tuple[str, str, int] | None = None  # (trace id, text, turn)
    first_users_differ: bool = False
    tools: dict[str, ToolStats] = field(default_factory=dict)  # in order of first call
    summaries: int = 0
    max_calls: int = 0  # tool calls in the longest trace
    max_identical: int = 0  # the most identical calls (same tool, same args) in one trace
    entities: dict[Any, Entity] = field(default_factory=dict)
    more_entities: bool = False

    def add(self, header: TraceHeader, events: Iterable[Event]) -> None:
        """Observe one trace (its events are consumed once)."""
        self.traces += 1
        if len(self.trace_ids) < MAX_TRACE_IDS:
            self.trace_ids.append(header.trace_id)
        if header.scenario is not None:
            self.scenarios[header.scenario] += 1
        st = _TraceState()
        yes = _yes_patterns()
        first_user: str | None = None
        for ev in events:
            self.events += 1
            kind = ev.kind
            if kind is EventKind.USER:
                text = ev.text or ""
                if first_user is None:
                    first_user = text
                    self._first_user(header.trace_id, text, ev.turn or 0)
                if st.user_chars < MAX_USER_TEXT:
                    st.user_text.append(text[: MAX_USER_TEXT - st.user_chars])
                    st.user_chars += len(st.user_text[-1])
                if not st.confirmed and st.assistant_seen and yes(text):
                    st.confirmed = True
            elif kind is EventKind.ASSISTANT:
                st.assistant_seen = True
                if not (ev.metadata and ev.metadata.get("with_tool_calls")):
                    st.confirmed = False
            elif kind is EventKind.TOOL_CALL:
                self._call(ev, st)
            elif kind is EventKind.TOOL_RESULT:
                self._result(ev, st)
            elif kind is EventKind.SUMMARY:
                self.summaries += 1
        if first_user is None and self.first_user is not None:
            self.first_users_differ = True
        self.max_calls = max(self.max_calls, st.calls)
        if st.signatures:
            self.max_identical = max(self.max_identical, max(st.signatures.values()))
        for name in st.tools:
            self.tools[name].traces += 1
        for name, n in st.ok_by_tool.items():
            t = self.tools[name]
            t.max_ok_in_trace = max(t.max_ok_in_trace, n)

    def _first_user(self, trace_id: str, text: str, turn: int) -> None:
        if self.first_user is None:
            if self.traces > 1:
                self.first_users_differ = True  # an earlier trace had no user message
            self.first_user = (trace_id, text, turn)
        elif self.first_user[1] != text:
            self.first_users_differ = True

    def _tool(self, name: str) -> ToolStats:
        t = self.tools.get(name)
        if t is None:
            t = self.tools[name] = ToolStats(name)
        return t

    def _call(self, ev: Event, st: _TraceState) -> None:
        name = ev.tool or ""
        t = self._tool(name)
        t.calls += 1
        st.calls += 1
        st.tools.add(name)
        if st.confirmed:
            t.confirmed += 1
        args = ev.args or {}
        st.signatures[name + "\x00" + _signature(args)] += 1
        for path, value in id_args(args):
            ps = t.paths.get(path)
            if ps is None:
                ps = t.paths[path] = PathStats()
            ps.present += 1
            if len(ps.values) < MAX_VALUES or value in ps.values:
                ps.values[value] += 1
            else:
                ps.more_values = True
            sources = _returned_by(value, st.seen)
            said = _said(value, st.user_text)
            if sources:
                ps.from_results += 1
                ps.sources.update(sources)
                key = frozenset(sources)
                if len(ps.source_sets) < MAX_SOURCE_SETS or key in ps.source_sets:
                    ps.source_sets[key] += 1
                else:
                    ps.more_source_sets = True
            if said:
                ps.from_user += 1
            self._entity(value, f"{name} {path}", sources, said)

    def _entity(self, value: str | int, use: str, sources: set[str], said: bool) -> None:
        e = self.entities.get(value)
        if e is None:
            if len(self.entities) >= MAX_ENTITIES:
                self.more_entities = True
                return
            e = self.entities[value] = Entity(value)
        e.uses[use] += 1
        if said:
            e.from_user += 1
        e.from_results.update(sources)
        if not said and not sources:
            e.unexplained += 1

    def _result(self, ev: Event, st: _TraceState) -> None:
        name = ev.tool or ""
        t = self._tool(name)
        if ev.error is not None:
            t.failed += 1
            return
        t.ok += 1
        st.ok_by_tool[name] += 1
        if t.ack is None and t.ok <= MAX_ACK_TRIES:
            t.ack = acknowledgement(ev.result)
        seen = st.seen
        for v in result_scalars(ev.result, MAX_SCALARS_PER_RESULT):
            tools = seen.get(v)
            if tools is None:
                tools = seen[v] = set()
                if len(seen) > MAX_SEEN:  # the oldest goes, as in the check (which keeps
                    del seen[next(iter(seen))]  # fewer tools' values: never fewer of them)
            tools.add(name)


def _signature(args: dict[str, Any]) -> str:
    try:
        return json.dumps(args, sort_keys=True, default=str)
    except (TypeError, ValueError, RecursionError):
        return repr(args)


def _returned_by(value: str | int, seen: dict[Any, set[str]]) -> set[str]:
    """The tools whose earlier results carried `value` (`"42"` and `42` alike)."""
    found = set(seen.get(value, ()))
    if isinstance(value, int):
        found |= seen.get(str(value), set())
    elif value.isdigit() and len(value) < 4300:
        found |= seen.get(int(value), set())
    return found


def _said(value: str | int, texts: list[str]) -> bool:
    needle = str(value)
    return len(needle) >= 2 and any(needle in t for t in texts)


def _yes_patterns() -> Callable[[str], bool]:
    """The confirmation check's default "yes" test."""
    if not _YES:
        _YES.append(any_regex(Confirmation(tools=[]).patterns))
    return _YES[0]


_YES: list[Callable[[str], bool]] = []
