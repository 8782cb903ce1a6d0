"""The state the checks share while one trace streams past, and what traces share.

`CheckContext` is one trace's state. Everything in it is bounded by the scenario (ledger
keys, rule and tool names), never by the trace length: the ledger snapshot is cached for the
current turn only, lookup results keep at most `MAX_LOOKUP_VALUES` scalars per rule, pending
calls at most `MAX_PENDING`.

`Shared` is what depends on the scenario alone — ledger snapshots per segment, decisions per
tool name (does a glob match, which rules apply) — worked out once and reused by every trace
checked against the same scenario. Per-tool tables hold at most `MAX_TOOLS` names (then they
start again), so a stream of made-up tool names cannot grow them without bound.
"""

from __future__ import annotations

import json
from bisect import bisect_right
from collections import OrderedDict, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from judge.checks.matching import (
    MISSING,
    any_glob,
    arg_matches,
    get_path,
    glob_match,
    result_matches,
    text_carrier,
)
from judge.ledger.loader import LoadedScenario
from judge.ledger.reducer import LedgerSnapshot
from judge.ledger.scenario import EntryClass, SubGoal
from judge.trace.model import EventData, EventKind

MAX_LOOKUP_VALUES = 100_000
MAX_SCALARS_PER_RESULT = 5_000
MAX_PENDING = 10_000
MAX_TOOLS = 10_000
TRACKED_CLASSES = (EntryClass.GOAL, EntryClass.CONSTRAINT, EntryClass.PERMISSION,
                   EntryClass.MUTABLE_FACT, EntryClass.COMPLETION, EntryClass.UNCERTAINTY)


class At(NamedTuple):
    turn: int
    seq: int


@dataclass(frozen=True, slots=True)
class Call:
    tool: str
    args: dict[str, Any]
    at: At


class Shared:
    """What every trace checked against one scenario can reuse (see the module docstring)."""

    def __init__(self, loaded: LoadedScenario) -> None:
        self.ledger_turns = loaded.ledger.turns()
        self.segments: dict[tuple[int, bool, int], LedgerSnapshot] = {}
        self._tables: defaultdict[str, dict[Any, Any]] = defaultdict(dict)
        #: `table(name)`: a per-tool (or other per-name) table of decisions, kept across
        #: traces (a C-level lookup: every check asks for its tables on every trace)
        self.table: Callable[[str], dict[Any, Any]] = self._tables.__getitem__


def remember(table: dict[Any, Any], key: Any, value: Any) -> Any:
    """Store `value` under `key` in a per-name table of at most `MAX_TOOLS` names."""
    if len(table) >= MAX_TOOLS:
        table.clear()
    table[key] = value
    return value


class CheckContext:
    """One trace's bounded state; `begin(event)` before the checks see it, `end(event)` after.

    Pass the `Shared` of the scenario to reuse what earlier traces worked out.
    """

    def __init__(self, loaded: LoadedScenario, shared: Shared | None = None) -> None:
        self.loaded = loaded
        self.scenario = loaded.scenario
        self.rules = loaded.scenario.rules
        self.ledger = loaded.ledger
        self.shared = shared if shared is not None else Shared(loaded)
        self._snap_turn = -1
        self._snap: LedgerSnapshot | None = None
        self.turn = 0
        self.seq = 0
        self.events = 0
        # the trace being checked, for an input error a check finds (set by the runner)
        self.trace_id = ""
        self.file: str | None = None
        self.line: int | None = None
        self.last_turn_seen: int | None = None
        self.last_assistant_event: EventData | None = None
        # completion
        self.subgoals: list[SubGoal] = list(self.rules.completion.all_of
                                            if self.rules.completion else [])
        self.subgoal_held: dict[str, At] = {}
        self.complete_at: At | None = None
        self.post_completion_actions = 0
        # the trace's `metadata.termination` (docs/formats.md): a run its driver stopped
        # (`forced`) is never complete, whatever its events show
        self.forced_by: str | None = None
        # calls not yet answered, by call id (while something can still complete)
        self._pending: OrderedDict[str, Call] = OrderedDict()
        #: per sub-goal key: the calls of its turn still unanswered when the result that
        #: achieved it came, i.e. issued alongside the achieving call, before its outcome was
        #: known (two refunds run in parallel). The checks treat them as issued after it.
        self.alongside: dict[str, tuple[Call, ...]] = {}
        self._paired = True  # every result so far answered a pending call by its id
        self._last_call: dict[str, Call] = {}
        self._subgoal_tools = self.shared.table("context.subgoal_tools")
        # lookups: per rule index, scalars returned by successful lookup results
        n_lookups = len(self.rules.lookups)
        self.lookup_values: list[dict[Any, At]] = [{} for _ in range(n_lookups)]
        self.lookup_seen: list[At | None] = [None] * n_lookups
        self._lookup_rules = self.shared.table("context.lookup_rules")
        # keys across compaction: key -> where it was lost (None = held)
        self.lost: dict[str, At] = {}
        self.state_writes: dict[str, At] = {}

    @property
    def after(self) -> dict[EventKind, Callable[[EventData, CheckContext], None]]:
        """What the context records after the checks saw an event, for the kinds it records
        anything of (a new dict each time: the context keeps no references to its own
        methods, so it is freed by reference counting alone, without the cycle collector)."""
        return {
            EventKind.TOOL_CALL: self.after_call, EventKind.TOOL_RESULT: self.after_result,
            EventKind.ASSISTANT: self.after_assistant, EventKind.SUMMARY: self.after_summary,
            EventKind.STATE_WRITE: self.after_state_write,
        }

    @property
    def last_assistant(self) -> tuple[At, str] | None:
        """Where the agent last spoke, and what it said."""
        ev = self.last_assistant_event
        if ev is None:
            return None
        return At(ev["turn"] or 0, ev["seq"] or 0), ev.get("text") or ""

    # -- ledger ------------------------------------------------------------------------
    def ledger_at(self, turn: int | None = None) -> LedgerSnapshot:
        """The ledger at a turn (default: the current event's), shared while unchanged.

        Every turn after the last delta of a segment sees the same ledger (turn-scoped
        entries have expired by then) within one session, so one snapshot per (segment,
        exact turn, session) suffices.
        """
        t = self.turn if turn is None else turn
        if self._snap is not None and t == self._snap_turn:
            return self._snap
        turns = self.shared.ledger_turns
        i = bisect_right(turns, t) - 1
        seg = (i, i >= 0 and turns[i] == t, self.ledger.plan.index_of(t))
        segments = self.shared.segments
        snap = segments.get(seg)
        if snap is None:
            snap = segments[seg] = self.ledger.at(t)
        self._snap, self._snap_turn = snap, t
        return snap

    @property
    def complete(self) -> bool:
        return self.complete_at is not None

    def key_done(self, key: str) -> bool:
        """A completion key holds per the trace (a sub-goal), else per the ledger."""
        if any(g.key == key for g in self.subgoals):
            return key in self.subgoal_held
        e = self.ledger_at().entries.get(key)
        return e is not None and e.status == "completed"

    # -- event bookkeeping -------------------------------------------------------------
    def begin(self, ev: EventData) -> None:
        """Move to an event (the runner inlines this in its loop)."""
        self.turn = ev["turn"] or 0
        self.seq = ev["seq"] or 0
        self.events += 1

    def end(self, ev: EventData) -> None:
        """Record an event after the checks saw it (the runner calls `after[kind]`)."""
        record = self.after.get(ev["kind"])
        if record is not None:
            record(ev, self)

    def after_call(self, ev: EventData, _: CheckContext | None = None) -> None:
        if self.complete_at is not None:
            self.post_completion_actions += 1
            return  # nothing left to complete: results need not be matched to calls
        if not self.subgoals:
            return
        tool = ev.get("tool") or ""
        wanted = self._subgoal_tools.get(tool)
        if wanted is None:
            wanted = remember(self._subgoal_tools, tool,
                              any(glob_match(tool, g.tool) for g in self.subgoals))
        call_id = ev.get("call_id")
        if not wanted and call_id is None:
            return  # a sub-goal's result needs its call (argument matchers); `alongside` ids
        call = Call(tool, ev.get("args") or {}, At(self.turn, self.seq))
        if call_id is not None:
            pending = self._pending
            pending[call_id] = call
            if len(pending) > MAX_PENDING:
                pending.popitem(last=False)
        if wanted:
            self._last_call[tool] = call

    def after_result(self, ev: EventData, _: CheckContext | None = None) -> None:
        if self.complete_at is not None and not self.rules.lookups:
            return  # nothing a result could still change
        self._on_result(ev)

    def after_assistant(self, ev: EventData, _: CheckContext | None = None) -> None:
        self.last_assistant_event = ev

    def after_summary(self, ev: EventData, _: CheckContext | None = None) -> None:
        self._on_summary(ev, At(self.turn, self.seq))

    def after_state_write(self, ev: EventData, _: CheckContext | None = None) -> None:
        self._on_state_write(ev, At(self.turn, self.seq))

    def call_for(self, ev: EventData) -> Call | None:
        """The call a result answers: by `call_id`, else the nearest preceding call of it.
        A result not paired by id (no id, or one no pending call has) leaves the calls still
        pending unknown: from then on none is taken as issued in parallel (`alongside`)."""
        call_id = ev.get("call_id")
        if call_id is not None and call_id in self._pending:
            return self._pending.pop(call_id)
        self._paired = False
        return self._last_call.get(ev.get("tool") or "")

    def _on_result(self, ev: EventData) -> None:
        call = self.call_for(ev) if self.complete_at is None else None
        if ev.get("error") is not None:
            return  # a failed or timed-out result completes nothing and proves nothing
        tool = ev.get("tool") or ""
        rules = self._lookup_rules.get(tool)
        if rules is None:
            rules = remember(self._lookup_rules, tool, [
                i for i, r in enumerate(self.rules.lookups)
                if any(glob_match(tool, t) for t in r.lookups())])
        if not rules and (self.complete_at is not None or not self.subgoals):
            return
        at = At(self.turn, self.seq)
        result = ev.get("result")
        for i in rules:
            self._record_lookup(i, result, self.rules.lookups[i].result_path, at)
        if self.complete_at is not None or not self.subgoals:
            return
        args = call.args if call is not None else {}
        snap = self.ledger_at()
        for g in self.subgoals:
            if g.key in self.subgoal_held or not glob_match(tool, g.tool):
                continue
            if g.args and (call is None or not all(arg_matches(m, args, snap) for m in g.args)):
                continue
            if all(result_matches(m, result) for m in g.result):
                self.subgoal_held[g.key] = at
                if self._paired:
                    self.alongside[g.key] = tuple(
                        c for c in self._pending.values() if c.at.turn == at.turn)
        if len(self.subgoal_held) == len(self.subgoals):
            self.complete_at = at

    def _record_lookup(self, i: int, result: Any, path: str | None, at: At) -> None:
        """Remember every scalar (and key) of a lookup's result: `iter_scalars(found,
        MAX_SCALARS_PER_RESULT, keys=True)`, walked inline (this runs on every result)."""
        self.lookup_seen[i] = at
        found = result if path is None else get_path(result, path)
        if found is MISSING:
            return
        seen = self.lookup_values[i]
        stack = [found]
        pop, push_all = stack.pop, stack.extend
        n = 0
        while stack and n < MAX_SCALARS_PER_RESULT:
            cur = pop()
            t = type(cur)
            if t is str or t is int or t is float or (
                    t is not bool and t is not dict and t is not list
                    and isinstance(cur, str | int | float)):
                n += 1
                if cur not in seen:
                    seen[cur] = at
                    if len(seen) > MAX_LOOKUP_VALUES:
                        del seen[next(iter(seen))]
            elif isinstance(cur, dict):
                push_all(cur.values())
                push_all(cur)  # the keys
            elif isinstance(cur, list | tuple):
                push_all(cur)

    def _on_summary(self, ev: EventData, at: At) -> None:
        if (ev.get("reason") or "").strip().lower() != "compaction":
            return
        text = ev.get("text") or ""
        low = text.lower() if text.isascii() else None
        for key, entry in self.ledger_at().entries.items():
            if entry.status != "active" or entry.since_turn > at.turn:
                continue
            if text_carrier(entry)(text, low):
                self.lost.pop(key, None)
            else:
                self.lost[key] = at

    def _on_state_write(self, ev: EventData, at: At) -> None:
        written = ev.get("key")
        if written is None:
            return
        self.state_writes[written] = at
        if len(self.state_writes) > 10_000:
            self.state_writes.pop(next(iter(self.state_writes)))
        if not self.lost:
            return
        snap = self.ledger_at()
        value = ev.get("value")
        text = f"{written} {value if isinstance(value, str) else json.dumps(value, default=str)}"
        low = text.lower() if text.isascii() else None
        for key in list(self.lost):
            entry = snap.entries.get(key)
            if entry is None:
                continue
            if (written == key and value == entry.value) or text_carrier(entry)(text, low):
                del self.lost[key]

    def tool_matches(self, tool: str, patterns: list[str]) -> bool:
        return any_glob(tool, patterns)
