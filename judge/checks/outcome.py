"""Expected outcome: the effects a run must have, compared with the effects it had.

The reference is the scenario's `outcome:` block, plus (with `from_trace`) each trace's
`metadata.expected_outcome` — the same shape (`OutcomeRef`); the tau-bench importer writes one
from a task's gold actions and outputs. Values compare under `judge.diff.normalise` (the
rules `judge diff` uses): numbers by value (`250` == `250.0` == `"250"`), lists as multisets,
strings with case and surrounding/inner whitespace folded, objects key by key.

A *write* is a call of a tool in `rules.mutating_tools` or named by a reference write, whose
result is not an error (an error result changed nothing; a call without a result counts).
Reference writes are paired with writes of the same tool: first every exact match (in trace
order), then each remaining reference write with the closest remaining write of its tool.

Findings (each its own check name, so `rules.severity` can override each; default severity):

- `silent_failure` (costly): a required write never happened. **Unsafe and a veto** when an
  assistant reply claims success (`completion.success_claims`): a claimed success without
  its required effect.
- `argument_drift` (costly): the tool was called, an argument differs — each differing path
  with the expected and the actual value.
- `unexpected_effect` (costly): a write no reference write accounts for.
- `write_order` (task-quality): with `ordered: true`, writes paired out of reference order.
- `missing_fact` (task-quality): a required fact absent from the final reply (or, for a fact
  with `where: any`, from every reply).

A scenario without `outcome:` runs none of this; with `from_trace` and a trace without a
reference, the check says so (an informational failure: nothing was compared).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from pydantic import ValidationError

from judge.checks.base import Check, where
from judge.checks.context import CheckContext
from judge.checks.matching import MISSING, any_glob, any_regex, arg_matches, get_path, regex_search
from judge.checks.report import Finding
from judge.checks.textforms import date_of, dates_in, fold, has_number, number_of
from judge.diff.normalise import diff_values, same
from judge.errors import InputError
from judge.ledger.reducer import LedgerSnapshot
from judge.ledger.scenario import ArgMatcher, FactRef, OutcomeRef, Severity, WriteRef
from judge.trace.model import EventData, EventKind, TraceHeader

MAX_WRITES = 10_000  # writes remembered per trace (the rest are counted as unexpected)
REFERENCE_FIELD = "expected_outcome"



@dataclass(slots=True)
class Write:
    tool: str
    args: dict[str, Any]
    seq: int
    turn: int
    failed: bool = False  # its result was an error: it changed nothing


@dataclass(frozen=True, slots=True)
class Reference:
    """The reference in force for one trace, and where it came from (for the messages)."""

    ref: OutcomeRef
    source: str  # "scenario", "trace metadata" or "scenario and trace metadata"


def reference_of(scenario_ref: OutcomeRef | None, from_trace: bool, header: TraceHeader,
                 file: str | None,
                 allowed_tools: list[str] | None = None) -> Reference | None:
    """The reference for a trace: the scenario's, plus its metadata's with `from_trace`.

    A metadata reference that does not validate, or names a tool outside `allowed_tools`
    (when the scenario has an allow-list), is bad input (InputError naming the field)."""
    ref = OutcomeRef() if scenario_ref is None else scenario_ref
    if not from_trace:
        return Reference(ref, "scenario")
    raw = header.metadata.get(REFERENCE_FIELD)
    if raw is None:
        return None
    try:
        mine = OutcomeRef.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"])
        raise InputError(f"trace '{header.trace_id}': {err['msg']}", file=file,
                         path=f"metadata.{REFERENCE_FIELD}" + (f".{loc}" if loc else ""),
                         field=next((str(p) for p in reversed(err["loc"])
                                     if isinstance(p, str)), REFERENCE_FIELD)) from None
    for i, w in enumerate(mine.writes):
        if allowed_tools is not None and not any_glob(w.tool, allowed_tools):
            raise InputError(f"trace '{header.trace_id}': tool '{w.tool}' is not in the "
                             "scenario's allowed_tools", file=file,
                             path=f"metadata.{REFERENCE_FIELD}.writes.{i}.tool", field="tool")
    if not ref.writes and not ref.facts:
        return Reference(mine, "trace metadata")
    return Reference(OutcomeRef(writes=[*ref.writes, *mine.writes],
                                ordered=ref.ordered or mine.ordered,
                                facts=[*ref.facts, *mine.facts]),
                     "scenario and trace metadata")


def matcher_holds(m: ArgMatcher, args: dict[str, Any], ledger: LedgerSnapshot) -> bool:
    """An argument matcher with normalised equality (`equals`, `in`, the ledger tests)."""
    return arg_matches(m, args, ledger, eq=same)


def _show(v: Any) -> str:
    if v is MISSING:
        return "(absent)"
    text = json.dumps(v, sort_keys=True, ensure_ascii=False, default=str)
    return text if len(text) <= 120 else text[:117] + "..."


def _matcher_test(m: ArgMatcher) -> str:
    for name, label in (("equals", "="), ("not_equals", "!="), ("in_", "in"),
                        ("not_in", "not in"), ("matches", "matches"), ("exists", "exists"),
                        ("equals_key", "= ledger"), ("in_key", "in ledger"),
                        ("not_in_key", "not in ledger")):
        v = getattr(m, name)
        if v is not None:
            return f"{label} {_show(v)}"
    return "?"


def drift(ref: WriteRef, args: dict[str, Any], ledger: LedgerSnapshot) -> list[str]:
    """How a write's arguments differ from a reference write (empty: they match)."""
    out: list[str] = []
    for m in ref.args:
        if not matcher_holds(m, args, ledger):
            out.append(f"`{m.path}`: expected {_matcher_test(m)}, actual "
                       f"{_show(get_path(args, m.path))}")
    if ref.args_equal is not None:
        for d in diff_values(ref.args_equal, args):
            out.append(f"`{d.path or '(all)'}`: expected {_show(d.baseline)}, actual "
                       f"{_show(d.actual)}")
    return out


def fact_stated(fact: FactRef, text: str) -> bool:
    """Does a reply state the fact (see `FactRef`)? Text is compared in the checks' one
    normalisation (judge.checks.textforms): case, whitespace, thousands commas, numbers by
    value and a date in any of its forms."""
    if fact.regex is not None:
        return regex_search(fact.regex, text)
    want = fact.text if fact.text is not None else fact.value
    if number_of(want) is not None:
        found = has_number(text, want)
        if found or fact.value is not None:
            return found
    day = date_of(want)
    if day and day & dates_in(text):
        return True
    return fold(str(want)) in fold(text)


def _fact_label(fact: FactRef) -> str:
    if fact.regex is not None:
        return f"/{fact.regex}/"
    return _show(fact.text if fact.text is not None else fact.value)


class OutcomeCheck(Check):
    """Writes and facts against the expected outcome (see the module docstring)."""

    name = "outcome"
    kinds = frozenset({EventKind.TOOL_CALL, EventKind.TOOL_RESULT, EventKind.ASSISTANT})
    severity = Severity.COSTLY

    def __init__(self, ctx: CheckContext) -> None:
        super().__init__(ctx)
        outcome = ctx.scenario.outcome
        self._outcome = outcome
        self._mutating = ctx.rules.mutating_tools
        self._allowed = ctx.rules.allowed_tools
        comp = ctx.rules.completion
        self._claims = any_regex(comp.success_claims if comp else [])
        self.reference: Reference | None = (
            None if outcome is None or outcome.from_trace else Reference(outcome, "scenario"))
        self._ref_tools: frozenset[str] = frozenset(
            w.tool for w in (outcome.writes if outcome else []))
        self._writes: list[Write] = []
        self._dropped = 0
        self._pending: dict[str, int] = {}  # call_id (or tool) -> index in _writes
        self._claimed_at: tuple[int, int] | None = None  # (turn, seq) of a success claim
        self._any_facts: dict[int, int] = {}  # fact index -> seq of the reply stating it
        self._final: EventData | None = None

    def applies(self, ctx: CheckContext) -> bool:
        return ctx.scenario.outcome is not None

    def begin_trace(self, header: TraceHeader, file: str | None) -> None:
        """Read the trace's reference (with `from_trace`); InputError if it is bad."""
        outcome = self._outcome
        if outcome is not None and outcome.from_trace:
            self.reference = reference_of(outcome, True, header, file,
                                          self._allowed)
            if self.reference is not None:
                self._ref_tools = frozenset(w.tool for w in self.reference.ref.writes)

    def _is_write(self, tool: str) -> bool:
        return tool in self._ref_tools or any_glob(tool, self._mutating)

    def on_event(self, ev: EventData, ctx: CheckContext) -> None:
        kind = ev["kind"]
        if kind is EventKind.TOOL_CALL:
            tool = ev.get("tool") or ""
            if not self._is_write(tool):
                return
            if len(self._writes) >= MAX_WRITES:
                self._dropped += 1
                return
            self._writes.append(Write(tool, ev.get("args") or {}, ev["seq"] or 0,
                                      ev["turn"] or 0))
            self._pending[ev.get("call_id") or f"tool:{tool}"] = len(self._writes) - 1
            if len(self._pending) > MAX_WRITES:
                self._pending.clear()
        elif kind is EventKind.TOOL_RESULT:
            key = ev.get("call_id") or f"tool:{ev.get('tool') or ''}"
            i = self._pending.pop(key, None)
            if i is not None and ev.get("error") is not None:
                self._writes[i].failed = True
        elif kind is EventKind.ASSISTANT:
            text = ev.get("text") or ""
            self._final = ev
            if self._claimed_at is None and self._claims(text):
                self._claimed_at = (ev["turn"] or 0, ev["seq"] or 0)
            ref = self.reference
            if ref is not None:
                for i, fact in enumerate(ref.ref.facts):
                    if fact.where == "any" and i not in self._any_facts \
                            and fact_stated(fact, text):
                        self._any_facts[i] = ev["seq"] or 0

    def _emit(self, check: str, message: str, *, seq: int | None, turn: int | None,
              severity: Severity, safety_critical: bool = False) -> None:
        self.failed += 1
        if len(self.findings) >= 100:
            self.suppressed += 1
            return
        self.findings.append(Finding(check=check, passed=False, key=None, seq=seq, turn=turn,
                                     severity=severity, safety_critical=safety_critical,
                                     message=message))

    def finish(self, ctx: CheckContext) -> None:
        ref = self.reference
        if ref is None:
            self._emit("outcome", "outcome not checked: the trace carries no "
                       f"metadata.{REFERENCE_FIELD}", seq=None, turn=None,
                       severity=Severity.INFORMATIONAL)
            return
        ledger = ctx.ledger_at()
        writes = [w for w in self._writes if not w.failed]
        self._compare_writes(ref, writes, ledger)
        self._compare_facts(ref)
        if not self.failed:
            self.passed(f"{len(ref.ref.writes)} required writes and {len(ref.ref.facts)} "
                        f"facts as the {ref.source} reference expects; no other write")

    def _compare_writes(self, ref: Reference, writes: list[Write],
                        ledger: LedgerSnapshot) -> None:
        src = ref.source
        wanted = ref.ref.writes
        paired: dict[int, int] = {}  # reference index -> write index
        used: set[int] = set()
        for i, w in enumerate(wanted):
            for j, actual in enumerate(writes):
                if j not in used and actual.tool == w.tool and not drift(w, actual.args,
                                                                          ledger):
                    paired[i] = j
                    used.add(j)
                    break
        for i, w in enumerate(wanted):
            if i in paired:
                continue
            options = [(len(drift(w, a.args, ledger)), j) for j, a in enumerate(writes)
                       if j not in used and a.tool == w.tool]
            if options:
                _, j = min(options)
                used.add(j)
                paired[i] = j
                a = writes[j]
                diffs = drift(w, a.args, ledger)
                self._emit("argument_drift",
                           f"`{w.tool}` {where(a.turn, a.seq)} differs from required write "
                           f"#{i + 1} of the {src} reference: " + "; ".join(diffs[:6])
                           + (f"; and {len(diffs) - 6} more" if len(diffs) > 6 else ""),
                           seq=a.seq, turn=a.turn, severity=Severity.COSTLY)
                continue
            claimed = self._claimed_at
            tail = (f"; yet the agent claimed success at turn {claimed[0]} (seq {claimed[1]})"
                    if claimed else "")
            self._emit("silent_failure",
                       f"required write #{i + 1} of the {src} reference never happened: "
                       f"`{w.tool}`{_ref_args(w)}{tail}",
                       seq=claimed[1] if claimed else None,
                       turn=claimed[0] if claimed else None,
                       severity=Severity.UNSAFE if claimed else Severity.COSTLY,
                       safety_critical=claimed is not None)
        for j, a in enumerate(writes):
            if j not in used:
                self._emit("unexpected_effect",
                           f"`{a.tool}` {where(a.turn, a.seq)} is a write the {src} "
                           f"reference does not expect (args {_show(a.args)})",
                           seq=a.seq, turn=a.turn, severity=Severity.COSTLY)
        if self._dropped:
            self._emit("unexpected_effect", f"{self._dropped} more writes beyond "
                       f"{MAX_WRITES} (not compared)", seq=None, turn=None,
                       severity=Severity.COSTLY)
        if ref.ref.ordered:
            order = [writes[paired[i]].seq for i in range(len(wanted)) if i in paired]
            for earlier, later in pairwise(order):
                if later < earlier:
                    self._emit("write_order", f"writes out of the {src} reference's order: "
                               f"seq {later} comes before seq {earlier}", seq=later,
                               turn=None, severity=Severity.TASK_QUALITY)
                    break

    def _compare_facts(self, ref: Reference) -> None:
        final = self._final
        text = (final.get("text") or "") if final is not None else ""
        for i, fact in enumerate(ref.ref.facts):
            if fact.where == "any":
                if i not in self._any_facts:
                    self._emit("missing_fact", f"no reply states {_fact_label(fact)} "
                               f"(required by the {ref.source} reference)", seq=None,
                               turn=None, severity=Severity.TASK_QUALITY)
            elif not fact_stated(fact, text):
                seq = final["seq"] if final is not None else None
                turn = final["turn"] if final is not None else None
                self._emit("missing_fact",
                           f"the final reply {where(turn, seq) if final else '(none)'} "
                           f"does not state {_fact_label(fact)} (required by the "
                           f"{ref.source} reference)", seq=seq, turn=turn,
                           severity=Severity.TASK_QUALITY)


def _ref_args(w: WriteRef) -> str:
    parts = [f"{m.path} {_matcher_test(m)}" for m in w.args]
    if w.args_equal is not None:
        parts.append(f"args {_show(w.args_equal)}")
    return f" ({'; '.join(parts)})" if parts else ""
