"""Run every applicable check over one trace in a single streaming pass."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from judge.checks.base import Check
from judge.checks.budgets import Budgets
from judge.checks.calls import ForbiddenCalls, Scope, StaleValues
from judge.checks.checkpoints import Checkpoints
from judge.checks.completion import (
    CompletionCheck,
    PostCompletionMutation,
    SuccessClaims,
    completion_summary,
)
from judge.checks.context import CheckContext
from judge.checks.provenance import ConfirmationBeforeWrite, LookupBeforeMutate
from judge.checks.report import CheckReport
from judge.checks.summaries import SummaryAudit
from judge.errors import InputError
from judge.ledger.loader import LoadedScenario
from judge.trace.loader import TraceStream, iter_trace_streams
from judge.trace.model import Event, EventKind, Trace, TraceHeader

CHECKS: tuple[type[Check], ...] = (
    ForbiddenCalls, Scope, StaleValues, LookupBeforeMutate, ConfirmationBeforeWrite,
    CompletionCheck, PostCompletionMutation, SuccessClaims, Budgets, Checkpoints, SummaryAudit,
)


def run_checks(loaded: LoadedScenario, trace: Trace | TraceStream) -> CheckReport:
    """Check one trace against a scenario's reviewed ledger and rules, streaming.

    A `TraceStream` is consumed once; its bad events raise `InputError` (file:line, field).
    """
    header: TraceHeader
    events: Iterator[Event]
    if isinstance(trace, TraceStream):
        header, events, file = trace.header, trace.events, trace.file
    else:
        header, events, file = trace, iter(trace.events), None
    scenario = loaded.scenario
    if header.scenario is not None and header.scenario != scenario.id:
        raise InputError(f"trace '{header.trace_id}' is for scenario '{header.scenario}', "
                         f"not '{scenario.id}'", file=file, field="scenario")
    ctx = CheckContext(loaded)
    checks = [c for c in (cls(ctx) for cls in CHECKS) if c.applies(ctx)]
    by_kind = {k: [c.on_event for c in checks if k in c.kinds] for k in EventKind}
    turn_hooks = [c.on_turn for c in checks if type(c).on_turn is not Check.on_turn]
    after = ctx.after
    turn = -1
    n = 0
    for ev in events:  # ctx.begin(ev), inlined: this loop runs once per event
        n += 1
        if ev.turn != turn:
            turn = ctx.turn = ev.turn or 0
            for on_turn in turn_hooks:
                on_turn(turn, ctx)
        ctx.seq = ev.seq or 0
        kind = ev.kind
        for hook in by_kind[kind]:
            hook(ev, ctx)
        after[kind](ev)  # ctx.end(ev), inlined
    ctx.events = n
    ctx.last_turn_seen = None if n == 0 else turn
    for c in checks:
        c.finish(ctx)
    findings = [f for c in checks for f in c.findings]
    suppressed = {c.name: c.suppressed for c in checks if c.suppressed}
    return CheckReport(trace_id=header.trace_id, scenario_id=scenario.id, findings=findings,
                       completion=completion_summary(ctx), events=ctx.events,
                       suppressed=suppressed)


def check_paths(loaded: LoadedScenario, paths: Iterable[str | Path],
                errors: list[InputError]) -> Iterator[CheckReport]:
    """Check every trace of every file as it is read: one report per valid trace, in order.

    A bad trace (or file) is appended to `errors` and skipped; the rest are still checked.
    """
    for path in paths:
        for stream in iter_trace_streams(path, errors):
            try:
                yield run_checks(loaded, stream)
            except InputError as exc:
                errors.append(exc)
