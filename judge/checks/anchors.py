"""Where each reviewed delta takes effect in one trace (the rules: `judge.ledger.timeline`).

One pass over the trace's events finds, for every delta, its effect point:
- no anchor: the first event whose turn is at least the delta's (it takes effect just
  before it);
- `at_seq: N`: right after seq N;
- `after_tool: X` with `after_result` matchers: right after the first successful result of
  X (a glob) that matches them and comes after the previous delta of the same key;
- an unanchored `complete` of a key the completion predicate names: right after the result
  that satisfies that sub-goal, found as the completion check finds it (a successful result
  of the sub-goal's tool whose call — by `call_id`, else the latest call of the tool —
  matches its argument matchers against the reviewed ledger at that turn, and whose result
  matches its result matchers).

This sits with the checks because it reads tool results with the checks' matchers; the
ledger package only knows effect points, never tools.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from judge.checks.matching import arg_matches, glob_match, result_matches
from judge.ledger.loader import LoadedScenario
from judge.ledger.reducer import LedgerSnapshot
from judge.ledger.scenario import ArgMatcher, Op, ResultMatcher
from judge.ledger.timeline import NEVER, Effect, LedgerTimeline
from judge.trace.model import Event, EventKind

#: matching results kept per anchor (a chain of deltas of one key needs one each)
MAX_MATCHES = 10_000
MAX_PENDING = 10_000


@dataclass
class _Spec:
    """One event to look for: a successful result of `tool` matching `result` (and, for a
    sub-goal, whose call matches `args`). `found` holds (seq, turn) of each match."""

    tool: str
    result: list[ResultMatcher]
    args: list[ArgMatcher] = field(default_factory=list)
    found: list[tuple[int, int]] = field(default_factory=list)


def _specs(loaded: LoadedScenario) -> dict[int, _Spec]:
    """The anchor to find for each delta placed at a tool result (by delta index)."""
    sc = loaded.scenario
    subgoals = {g.key: g for g in (sc.rules.completion.all_of if sc.rules.completion else [])}
    specs: dict[int, _Spec] = {}
    shared: dict[tuple[str, str], _Spec] = {}
    for i, d in enumerate(loaded.ledger.deltas):
        if d.after_tool is not None:
            matchers = list(d.after_result or [])
            sig = ("tool", repr((d.after_tool, [m.model_dump() for m in matchers])))
            spec = shared.get(sig) or _Spec(d.after_tool, matchers)
        elif d.at_seq is None and d.op is Op.COMPLETE and d.key in subgoals:
            g = subgoals[d.key]
            sig = ("subgoal", g.key)
            spec = shared.get(sig) or _Spec(g.tool, list(g.result), list(g.args))
        else:
            continue
        shared[sig] = spec
        specs[i] = spec
    return specs


def trace_effects(loaded: LoadedScenario, events: Iterable[Event]) -> list[Effect]:
    """The effect point of every delta of the scenario in this trace (one pass)."""
    ledger = loaded.ledger
    deltas = ledger.deltas
    specs = _specs(loaded)
    unique = list({id(s): s for s in specs.values()}.values())
    with_args = [s for s in unique if s.args]
    turns = sorted({d.turn for i, d in enumerate(deltas) if i not in specs and d.at_seq is None})
    first_of_turn: dict[int, int] = {}
    at_seqs = sorted({d.at_seq for d in deltas if d.at_seq is not None})
    turn_at: dict[int, int] = {}
    next_turn = next_at = 0
    last: tuple[int, int] | None = None
    pending: OrderedDict[str, dict[str, Any]] = OrderedDict()
    last_call: dict[str, dict[str, Any]] = {}
    snaps: dict[int, LedgerSnapshot] = {}
    for ev in events:
        seq, turn = ev.seq or 0, ev.turn or 0
        while next_turn < len(turns) and turns[next_turn] <= turn:
            first_of_turn[turns[next_turn]] = seq
            next_turn += 1
        if not unique and next_turn == len(turns) and next_at == len(at_seqs):
            break  # every turn and seq placed, and no result to look for
        while next_at < len(at_seqs) and at_seqs[next_at] < seq:
            if last is not None:
                turn_at[at_seqs[next_at]] = last[1]
            next_at += 1
        last = (seq, turn)
        kind = ev.kind
        if kind is EventKind.TOOL_CALL and with_args:
            tool = ev.tool or ""
            if any(glob_match(tool, s.tool) for s in with_args):
                args = ev.args or {}
                if ev.call_id is not None:
                    pending[ev.call_id] = args
                    if len(pending) > MAX_PENDING:
                        pending.popitem(last=False)
                last_call[tool] = args
        elif kind is EventKind.TOOL_RESULT and unique:
            tool = ev.tool or ""
            call: dict[str, Any] | None = None
            if with_args and any(glob_match(tool, s.tool) for s in with_args):
                if ev.call_id is not None and ev.call_id in pending:
                    call = pending.pop(ev.call_id)
                else:
                    call = last_call.get(tool)
            if ev.error is not None:
                continue
            for s in unique:
                if len(s.found) >= MAX_MATCHES or not glob_match(tool, s.tool):
                    continue
                if not all(result_matches(m, ev.result) for m in s.result):
                    continue
                if s.args:
                    snap = snaps.get(turn)
                    if snap is None:
                        snap = snaps[turn] = ledger.at(turn)
                    if call is None or not all(arg_matches(m, call, snap) for m in s.args):
                        continue
                s.found.append((seq, turn))
    if last is not None:
        for n in at_seqs[next_at:]:
            turn_at[n] = last[1]

    effects: list[Effect] = []
    key_at: dict[str, float] = {}
    for i, d in enumerate(deltas):
        floor = key_at.get(d.key, -NEVER)
        spec = specs.get(i)
        if spec is not None:
            hit = next(((s, t) for s, t in spec.found if s > floor), None)
            effect = Effect(NEVER) if hit is None else Effect(hit[0], hit[1])
        elif d.at_seq is not None:
            effect = Effect(d.at_seq, turn_at.get(d.at_seq))
        else:
            first = first_of_turn.get(d.turn)
            effect = Effect(NEVER) if first is None else Effect(first - 0.5)
        effects.append(effect)
        key_at[d.key] = max(floor, effect.after)
    return effects


def trace_timeline(loaded: LoadedScenario, events: Iterable[Event]) -> LedgerTimeline:
    """The scenario's ledger along this trace: `before(seq, turn)` for any of its events."""
    return LedgerTimeline(loaded.ledger, trace_effects(loaded, events))
