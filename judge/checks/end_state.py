"""End state: the world after the run, from the trace's `state_snapshot` events.

The start is the scenario's `outcome.end_state.fixture` if it has one, else the first
snapshot (one marked `phase: start`, else the first of the trace); the end is the last snapshot
(one marked `phase: end` wins). Records compare under `judge.diff.normalise`. Rules
(`RecordRule`): a field equals a value, a record is unchanged, created or deleted; with
`only_listed_change`, no record the rules do not name may differ between start and end.

Each violation is an `end_state` finding naming the collection/record, the field path, the
expected and the actual value: costly by default (`rules.severity.end_state` overrides).
A trace without any snapshot is reported as `end_state_unchecked` (an informational failure:
nothing was checked; a scenario can make it a veto to require snapshots).
"""

from __future__ import annotations

import json
from typing import Any

from judge.checks.base import Check
from judge.checks.context import CheckContext
from judge.checks.matching import MISSING, get_path
from judge.checks.report import Finding
from judge.diff.normalise import diff_values, same
from judge.ledger.scenario import EndState, RecordRule, Severity
from judge.trace.model import EventData, EventKind

State = dict[str, dict[str, Any]]
UNCHECKED = "end_state_unchecked"


def _show(v: Any) -> str:
    if v is MISSING:
        return "(absent)"
    text = json.dumps(v, sort_keys=True, ensure_ascii=False, default=str)
    return text if len(text) <= 120 else text[:117] + "..."


def _record(state: State, collection: str, record: str) -> Any:
    return state.get(collection, {}).get(record, MISSING)


def rule_problems(rule: RecordRule, start: State, end: State) -> list[str]:
    """What is wrong with one rule (empty: it holds)."""
    name = f"{rule.collection}/{rule.record}"
    before, after = _record(start, rule.collection, rule.record), \
        _record(end, rule.collection, rule.record)
    if rule.created:
        if before is not MISSING:
            return [f"record {name} was expected to be created but existed at the start"]
        if after is MISSING:
            return [f"record {name} was expected to be created but is absent at the end"]
        return []
    if rule.deleted:
        if after is not MISSING:
            return [f"record {name} was expected to be deleted but is still there"]
        return []
    if rule.unchanged:
        if before is MISSING and after is MISSING:
            return []
        if before is MISSING or after is MISSING:
            return [f"record {name} was expected unchanged but was "
                    f"{'created' if before is MISSING else 'deleted'}"]
        return [f"record {name} was expected unchanged: field `{d.path or '(all)'}` "
                f"changed from {_show(d.baseline)} to {_show(d.actual)}"
                for d in diff_values(before, after)]
    assert rule.field is not None
    if after is MISSING:
        return [f"record {name} is absent at the end (field `{rule.field}` expected "
                f"{_show(rule.equals)})"]
    actual = get_path(after, rule.field)
    if actual is MISSING or not same(actual, rule.equals):
        return [f"record {name} field `{rule.field}`: expected {_show(rule.equals)}, "
                f"actual {_show(actual)}"]
    return []


def unlisted_changes(rules: list[RecordRule], start: State, end: State) -> list[str]:
    """Records that differ between start and end though no rule names them."""
    listed = {(r.collection, r.record) for r in rules}
    out: list[str] = []
    for coll in sorted(set(start) | set(end)):
        a, b = start.get(coll, {}), end.get(coll, {})
        for rec in sorted(set(a) | set(b), key=str):
            if (coll, rec) in listed:
                continue
            before, after = a.get(rec, MISSING), b.get(rec, MISSING)
            if before is MISSING:
                out.append(f"record {coll}/{rec} was created though no rule lists it")
            elif after is MISSING:
                out.append(f"record {coll}/{rec} was deleted though no rule lists it")
            else:
                diffs = diff_values(before, after)
                if diffs:
                    d = diffs[0]
                    out.append(f"record {coll}/{rec} changed though no rule lists it: field "
                               f"`{d.path or '(all)'}` from {_show(d.baseline)} to "
                               f"{_show(d.actual)}"
                               + (f" (and {len(diffs) - 1} more fields)"
                                  if len(diffs) > 1 else ""))
    return out


class EndStateCheck(Check):
    name = "end_state"
    kinds = frozenset({EventKind.STATE_SNAPSHOT})
    severity = Severity.COSTLY

    def __init__(self, ctx: CheckContext) -> None:
        super().__init__(ctx)
        outcome = ctx.scenario.outcome
        self._spec: EndState | None = outcome.end_state if outcome is not None else None
        self._first: tuple[State, int] | None = None
        self._start: tuple[State, int] | None = None  # one marked phase: start
        self._last: tuple[State, int] | None = None
        self._end: tuple[State, int] | None = None  # one marked phase: end
        self._snapshots = 0

    def applies(self, ctx: CheckContext) -> bool:
        outcome = ctx.scenario.outcome
        return outcome is not None and outcome.end_state is not None

    def on_event(self, ev: EventData, ctx: CheckContext) -> None:
        state = ev.get("state")
        if state is None:
            return
        self._snapshots += 1
        here = (state, ev["seq"] or 0)
        at = ev.get("phase")
        if self._first is None:
            self._first = here
        if at == "start" and self._start is None:
            self._start = here
        elif at == "end":
            self._end = here
        self._last = here

    def finish(self, ctx: CheckContext) -> None:
        spec = self._spec
        assert spec is not None
        end = self._end or self._last
        if end is None:
            self.failed += 1  # its own name: overriding `end_state` leaves it alone
            self.findings.append(Finding(
                check=UNCHECKED, passed=False, key=None, seq=None, turn=None,
                severity=Severity.INFORMATIONAL, safety_critical=False,
                message="end state not checked: the trace carries no state_snapshot"))
            return
        if spec.fixture is not None:
            start, origin = spec.fixture, "the scenario's fixture"
        else:
            first = self._start or self._first
            assert first is not None
            start, origin = first[0], f"the snapshot at seq {first[1]}"
        state, seq = end
        problems = [p for r in spec.rules for p in rule_problems(r, start, state)]
        if spec.only_listed_change:
            problems.extend(unlisted_changes(spec.rules, start, state))
        for p in problems:
            self.fail(f"{p} (end state at seq {seq}, against {origin})", seq=seq)
        if not problems:
            self.passed(f"end state at seq {seq} meets {len(spec.rules)} rules"
                        + (" and nothing else changed" if spec.only_listed_change else "")
                        + f" (against {origin})", seq=seq)
