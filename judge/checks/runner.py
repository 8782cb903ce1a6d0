"""Run every applicable check over one trace in a single streaming pass."""

from __future__ import annotations

from collections.abc import Iterator

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
from judge.trace.loader import TraceStream
from judge.trace.model import Event, Trace, TraceHeader

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
    hooks = [c.on_event for c in checks]
    begin, end = ctx.begin, ctx.end
    for ev in events:
        begin(ev)
        for hook in hooks:
            hook(ev, ctx)
        end(ev)
    for c in checks:
        c.finish(ctx)
    findings = [f for c in checks for f in c.findings]
    suppressed = {c.name: c.suppressed for c in checks if c.suppressed}
    return CheckReport(trace_id=header.trace_id, scenario_id=scenario.id, findings=findings,
                       completion=completion_summary(ctx), events=ctx.events,
                       suppressed=suppressed)
