"""The state the checks share while one trace streams past.

Everything here is bounded by the scenario (ledger keys, rule and tool names), never by the
trace length: the ledger snapshot is cached for the current turn only, lookup results keep
at most `MAX_LOOKUP_VALUES` scalars per rule, pending calls at most `MAX_PENDING`.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from judge.checks.matching import (
    MISSING,
    any_glob,
    arg_matches,
    carries,
    get_path,
    glob_match,
    iter_scalars,
    result_matches,
)
from judge.ledger.loader import LoadedScenario
from judge.ledger.reducer import LedgerSnapshot
from judge.ledger.scenario import EntryClass, SubGoal
from judge.trace.model import Event, EventKind

MAX_LOOKUP_VALUES = 100_000
MAX_SCALARS_PER_RESULT = 5_000
MAX_PENDING = 10_000
TRACKED_CLASSES = (EntryClass.GOAL, EntryClass.CONSTRAINT, EntryClass.PERMISSION,
                   EntryClass.MUTABLE_FACT, EntryClass.COMPLETION, EntryClass.UNCERTAINTY)


@dataclass(frozen=True, slots=True)
class At:
    turn: int
    seq: int


@dataclass(frozen=True, slots=True)
class Call:
    tool: str
    args: dict[str, Any]
    at: At


class CheckContext:
    """Shared, bounded state; `begin(event)` before the checks see it, `end(event)` after."""

    def __init__(self, loaded: LoadedScenario) -> None:
        self.loaded = loaded
        self.scenario = loaded.scenario
        self.rules = loaded.scenario.rules
        self.ledger = loaded.ledger
        self._snap_turn = -1
        self._snap: LedgerSnapshot | None = None
        self.turn = 0
        self.seq = 0
        self.events = 0
        self.last_turn_seen: int | None = None
        self.last_assistant: tuple[At, str] | None = None
        self.last_user: tuple[At, str] | None = None
        # completion
        self.subgoals: list[SubGoal] = list(self.rules.completion.all_of
                                            if self.rules.completion else [])
        self.subgoal_held: dict[str, At] = {}
        self.complete_at: At | None = None
        self.post_completion_actions = 0
        self._pending: OrderedDict[str, Call] = OrderedDict()
        self._last_call: dict[str, Call] = {}
        # lookups: per rule index, scalars returned by successful lookup results
        self.lookup_values: list[OrderedDict[Any, At]] = [OrderedDict() for _ in self.rules.lookups]
        self.lookup_seen: list[At | None] = [None for _ in self.rules.lookups]
        # keys across compaction: key -> where it was lost (None = held)
        self.lost: dict[str, At] = {}
        self.state_writes: dict[str, At] = {}

    # -- ledger ------------------------------------------------------------------------
    def ledger_at(self, turn: int | None = None) -> LedgerSnapshot:
        t = self.turn if turn is None else turn
        if self._snap is None or t != self._snap_turn:
            self._snap = self.ledger.at(t)
            self._snap_turn = t
        return self._snap

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
    def begin(self, ev: Event) -> None:
        assert ev.seq is not None and ev.turn is not None
        self.turn = ev.turn
        self.seq = ev.seq
        self.events += 1

    def end(self, ev: Event) -> None:
        at = At(self.turn, self.seq)
        kind = ev.kind
        if kind is EventKind.TOOL_CALL:
            call = Call(ev.tool or "", ev.args or {}, at)
            if self.complete:
                self.post_completion_actions += 1
            if ev.call_id is not None:
                self._pending[ev.call_id] = call
                if len(self._pending) > MAX_PENDING:
                    self._pending.popitem(last=False)
            self._last_call[call.tool] = call
        elif kind is EventKind.TOOL_RESULT:
            self._on_result(ev, at)
        elif kind is EventKind.ASSISTANT:
            self.last_assistant = (at, ev.text or "")
        elif kind is EventKind.USER:
            self.last_user = (at, ev.text or "")
        elif kind is EventKind.SUMMARY:
            self._on_summary(ev, at)
        elif kind is EventKind.STATE_WRITE:
            self._on_state_write(ev, at)
        self.last_turn_seen = self.turn

    def call_for(self, ev: Event) -> Call | None:
        """The call a result answers: by `call_id`, else the nearest preceding call of it."""
        if ev.call_id is not None and ev.call_id in self._pending:
            return self._pending.pop(ev.call_id)
        return self._last_call.get(ev.tool or "")

    def _on_result(self, ev: Event, at: At) -> None:
        call = self.call_for(ev)
        if ev.error is not None:
            return  # a failed or timed-out result completes nothing and proves nothing
        tool = ev.tool or ""
        for i, rule in enumerate(self.rules.lookups):
            if any(glob_match(tool, t) for t in rule.lookups()):
                self._record_lookup(i, ev.result, rule.result_path, at)
        if self.complete or not self.subgoals:
            return
        args = call.args if call is not None else {}
        snap = self.ledger_at()
        for g in self.subgoals:
            if g.key in self.subgoal_held or not glob_match(tool, g.tool):
                continue
            if g.args and (call is None or not all(arg_matches(m, args, snap) for m in g.args)):
                continue
            if all(result_matches(m, ev.result) for m in g.result):
                self.subgoal_held[g.key] = at
        if len(self.subgoal_held) == len(self.subgoals):
            self.complete_at = at

    def _record_lookup(self, i: int, result: Any, path: str | None, at: At) -> None:
        self.lookup_seen[i] = at
        found = result if path is None else get_path(result, path)
        if found is MISSING:
            return
        seen = self.lookup_values[i]
        for v in iter_scalars(found, MAX_SCALARS_PER_RESULT):
            if v not in seen:
                seen[v] = at
                if len(seen) > MAX_LOOKUP_VALUES:
                    seen.popitem(last=False)
            if isinstance(v, str) and v.isdigit():
                seen.setdefault(int(v), at)
            elif isinstance(v, int):
                seen.setdefault(str(v), at)

    def _on_summary(self, ev: Event, at: At) -> None:
        if (ev.reason or "").strip().lower() != "compaction":
            return
        text = ev.text or ""
        for key, entry in self.ledger_at().entries.items():
            if entry.status != "active" or entry.since_turn > at.turn:
                continue
            if carries(text, entry):
                self.lost.pop(key, None)
            else:
                self.lost[key] = at

    def _on_state_write(self, ev: Event, at: At) -> None:
        if ev.key is None:
            return
        self.state_writes[ev.key] = at
        if len(self.state_writes) > 10_000:
            self.state_writes.pop(next(iter(self.state_writes)))
        if not self.lost:
            return
        snap = self.ledger_at()
        value = ev.value if isinstance(ev.value, str) else json.dumps(ev.value, default=str)
        text = f"{ev.key} {value}"
        for key in list(self.lost):
            entry = snap.entries.get(key)
            if entry is None:
                continue
            if (ev.key == key and ev.value == entry.value) or carries(text, entry):
                del self.lost[key]

    def tool_matches(self, tool: str, patterns: list[str]) -> bool:
        return any_glob(tool, patterns)
