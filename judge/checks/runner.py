"""Run every applicable check over one trace in a single streaming pass."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import cast

from judge.checks.base import Check
from judge.checks.budgets import Budgets
from judge.checks.calls import ForbiddenCalls, Scope, StaleValues
from judge.checks.checkpoints import Checkpoints
from judge.checks.completion import (
    CompletionCheck,
    PostCompletionMutation,
    SuccessClaims,
    completion_summary,
    forced_by,
)
from judge.checks.context import MAX_TOOLS, CheckContext, Shared, remember
from judge.checks.end_state import UNCHECKED, EndStateCheck
from judge.checks.leakage import StateLeakage
from judge.checks.memory import MemoryWrites
from judge.checks.outcome import OutcomeCheck
from judge.checks.provenance import ConfirmationBeforeWrite, LookupBeforeMutate
from judge.checks.replies import ReplySupport
from judge.checks.report import CheckReport, Finding
from judge.checks.sessions import SessionCarryover
from judge.checks.summaries import SummaryAudit
from judge.errors import InputError
from judge.ledger.loader import LoadedScenario
from judge.trace.loader import EventStream, TraceStream, iter_event_streams
from judge.trace.model import Event, EventData, EventKind, Trace, TraceHeader
from judge.trace.task import task_of
from judge.trace.unique import TraceIds

_data = cast(Callable[[Event], EventData], vars)
"""A validated `Event` as the checks read it: its fields, as a dict (no copy)."""

CHECKS: tuple[type[Check], ...] = (
    ForbiddenCalls, Scope, StaleValues, LookupBeforeMutate, ConfirmationBeforeWrite,
    CompletionCheck, PostCompletionMutation, SuccessClaims, Budgets, Checkpoints, SummaryAudit,
    MemoryWrites, StateLeakage, SessionCarryover, ReplySupport, OutcomeCheck, EndStateCheck,
)
#: every name a finding's `check` can take (what `rules.severity` may override)
CHECK_NAMES: frozenset[str] = frozenset(
    {c.name for c in CHECKS} | {"silent_failure", "argument_drift", "unexpected_effect",
                                "write_order", "missing_fact", UNCHECKED})


def with_severity(findings: list[Finding], loaded: LoadedScenario) -> list[Finding]:
    """The findings with the scenario's `rules.severity` overrides applied to failures."""
    over = loaded.scenario.rules.severity
    if not over:
        return findings
    out: list[Finding] = []
    for f in findings:
        o = over.get(f.check)
        if o is None or f.passed:
            out.append(f)
            continue
        out.append(dataclasses.replace(
            f, severity=o.severity if o.severity is not None else f.severity,
            safety_critical=(o.safety_critical if o.safety_critical is not None
                             else f.safety_critical)))
    return out


class Checker:
    """Checks traces against one scenario. Which checks apply, and which of them look at a
    call of each tool, depend on the scenario alone: they are worked out once, as are the
    ledger snapshots and per-tool decisions the checks keep in `Shared`."""

    def __init__(self, loaded: LoadedScenario) -> None:
        self.loaded = loaded
        self.shared = Shared(loaded)
        ctx = CheckContext(loaded, self.shared)
        self._probes = [c for c in (cls(ctx) for cls in CHECKS) if c.applies(ctx)]
        self._classes = [type(c) for c in self._probes]
        self._kinds = {k: tuple(i for i, c in enumerate(self._probes) if k in c.kinds)
                       for k in EventKind}
        self._turn_hooks = tuple(i for i, c in enumerate(self._probes)
                                 if type(c).on_turn is not Check.on_turn)
        self._own_hooks = frozenset(i for i, c in enumerate(self._probes)
                                    if type(c).hook is not Check.hook)
        self._tools: dict[str | None, tuple[int, ...]] = {}

    def _for_tool(self, tool: str | None) -> tuple[int, ...]:
        """The checks (by index) whose `on_event` wants a call of `tool`."""
        found = self._tools.get(tool)
        if found is None:
            name = tool or ""
            found = remember(self._tools, tool, tuple(
                i for i in self._kinds[EventKind.TOOL_CALL] if self._probes[i].wants(name)))
        return found

    def check(self, trace: Trace | TraceStream | EventStream) -> CheckReport:
        """Check one trace in a single streaming pass; see `run_checks`."""
        header: TraceHeader
        events: Iterator[EventData]
        line: int | None = None
        if isinstance(trace, EventStream):
            header, events, file, line = trace.header, trace.events, trace.file, trace.line
        elif isinstance(trace, TraceStream):
            header, events, file = trace.header, map(_data, trace.events), trace.file
            line = trace.line
        else:
            header, events, file = trace, map(_data, trace.events), None
        scenario = self.loaded.scenario
        if header.scenario is not None and header.scenario != scenario.id:
            raise InputError(f"trace '{header.trace_id}' is for scenario '{header.scenario}', "
                             f"not '{scenario.id}'", file=file, field="scenario")
        task_id, trial = task_of(header.metadata, trace_id=header.trace_id, file=file,
                                 line=line)
        ctx = CheckContext(self.loaded, self.shared)
        ctx.forced_by = forced_by(header)
        ctx.trace_id, ctx.file, ctx.line = header.trace_id, file, line
        checks = [cls(ctx) for cls in self._classes]
        for c in checks:
            if isinstance(c, OutcomeCheck):
                c.begin_trace(header, file)
        own = self._own_hooks
        after = ctx.after
        by_kind: dict[EventKind, list[Callable[[EventData, CheckContext], None]]] = {}
        for k, idx in self._kinds.items():
            hooks_of_kind = [checks[i].hook(k) if i in own else checks[i].on_event for i in idx]
            if k in after:
                hooks_of_kind.append(after[k])
            by_kind[k] = hooks_of_kind
        tool_call = EventKind.TOOL_CALL
        hooks = [c.hook(tool_call) if i in own else c.on_event for i, c in enumerate(checks)]
        after_call = after[tool_call]
        by_tool: dict[str | None, list[Callable[[EventData, CheckContext], None]]] = {}
        turn_hooks = [checks[i].on_turn for i in self._turn_hooks]
        turn = -1
        n = 0
        for ev in events:  # ctx.begin(ev), inlined: this loop runs once per event
            n += 1
            at_turn = ev["turn"]
            if at_turn != turn:
                turn = ctx.turn = at_turn or 0
                for on_turn in turn_hooks:
                    on_turn(turn, ctx)
            ctx.seq = ev["seq"] or 0
            kind = ev["kind"]
            if kind is tool_call:
                tool = ev.get("tool")
                run = by_tool.get(tool)
                if run is None:
                    if len(by_tool) >= MAX_TOOLS:
                        by_tool.clear()
                    run = by_tool[tool] = [*(hooks[i] for i in self._for_tool(tool)),
                                           after_call]
            else:
                run = by_kind[kind]
            for hook in run:  # the checks, then ctx.end(ev)
                hook(ev, ctx)
        ctx.events = n
        ctx.last_turn_seen = None if n == 0 else turn
        for c in checks:
            c.finish(ctx)
        findings = with_severity([f for c in checks for f in c.findings], self.loaded)
        suppressed = {c.name: c.suppressed for c in checks if c.suppressed}
        return CheckReport(trace_id=header.trace_id, scenario_id=scenario.id,
                           findings=findings, completion=completion_summary(ctx),
                           events=ctx.events, suppressed=suppressed, task_id=task_id,
                           trial=trial)


_checkers: dict[int, Checker] = {}


def checker_for(loaded: LoadedScenario) -> Checker:
    """The `Checker` of a loaded scenario, for callers that check its traces one at a time
    (the last few scenarios are kept, and with them their `LoadedScenario`)."""
    found = _checkers.get(id(loaded))
    if found is not None and found.loaded is loaded:
        return found
    if len(_checkers) >= 8:
        _checkers.clear()
    checker = _checkers[id(loaded)] = Checker(loaded)
    return checker


def run_checks(loaded: LoadedScenario,
               trace: Trace | TraceStream | EventStream) -> CheckReport:
    """Check one trace against a scenario's reviewed ledger and rules, streaming.

    A stream is consumed once; its bad events raise `InputError` (file:line, field).
    """
    return checker_for(loaded).check(trace)


def check_paths(loaded: LoadedScenario, paths: Iterable[str | Path],
                errors: list[InputError]) -> Iterator[CheckReport]:
    """Check every trace of every file as it is read: one report per valid trace, in order.

    A bad trace (or file) is appended to `errors` and skipped; the rest are still checked.
    """
    checker = Checker(loaded)
    ids = TraceIds()  # trace ids are unique within the input (judge.trace.unique)
    for path in paths:
        for stream in iter_event_streams(path, errors):
            duplicate = ids.add(stream.header.trace_id, stream.file, stream.line)
            if duplicate is not None:
                errors.append(duplicate)
                for _ in stream.events:  # (its events are read past, not checked)
                    pass
                continue
            try:
                yield checker.check(stream)
            except InputError as exc:
                errors.append(exc)
