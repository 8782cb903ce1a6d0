"""The shape of a check: `on_event(event, ctx)` per event, `finish(ctx)` at the end.

Events come as `EventData` dicts (`ev["kind"]`, `ev["seq"]`, `ev["turn"]`; the other fields
by `ev.get(...)`, absent when the input did not give them): cheaper to build and to read
than `Event` models; a validated `Event` is checked through `vars(event)`.

Each check keeps at most `MAX_FINDINGS` failures (the rest are counted, not stored) so a
runaway trace cannot grow memory. A configured check that found nothing reports one passed
finding, so every report says what was checked.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from judge.checks.context import CheckContext, remember
from judge.checks.report import Finding
from judge.ledger.scenario import Sensitivity, Severity
from judge.trace.model import EventData, EventKind

MAX_FINDINGS = 100

SEVERITY_OF_SENSITIVITY: dict[Sensitivity, Severity] = {
    Sensitivity.SAFETY_CRITICAL: Severity.UNSAFE,
    Sensitivity.COSTLY: Severity.COSTLY,
    Sensitivity.NORMAL: Severity.TASK_QUALITY,
}


def where(turn: int | None, seq: int | None) -> str:
    if seq is None:
        return f"at turn {turn}" if turn is not None else "over the trace"
    return f"at turn {turn} (seq {seq})"


def where_of(ev: EventData) -> str:
    """`where` an event is."""
    return where(ev["turn"], ev["seq"])


class Check:
    """Base class; subclasses set `name` and `severity`, override the hooks."""

    name = "check"
    severity = Severity.TASK_QUALITY
    safety_critical = False
    kinds: frozenset[EventKind] = frozenset()  # the event kinds `on_event` wants to see

    def __init__(self, ctx: CheckContext) -> None:
        self.findings: list[Finding] = []
        self.failed = 0
        self.suppressed = 0
        self._passes: dict[tuple[object, ...], Finding] = ctx.shared.table("base.passes")

    def applies(self, ctx: CheckContext) -> bool:
        """False when the scenario configures nothing for this check."""
        return True

    def wants(self, tool: str) -> bool:
        """Whether `on_event` can do anything with a call of `tool` in this scenario (the
        runner skips the others); an answer from the scenario alone, never the trace."""
        return True

    def on_event(self, ev: EventData, ctx: CheckContext) -> None:
        """Look at one event of `kinds` (the context reflects everything before it)."""

    def hook(self, kind: EventKind) -> Callable[[EventData, CheckContext], None]:
        """What the runner calls for an event of `kind`: `on_event`, unless a check that
        looks at several kinds has one method per kind."""
        return self.on_event

    def on_turn(self, turn: int, ctx: CheckContext) -> None:
        """The trace moves to `turn` (called before its first event; only if overridden)."""

    def finish(self, ctx: CheckContext) -> None:
        """Report what only the end of the trace can tell, and a pass if nothing failed."""
        if not self.failed:
            self.passed(self.pass_message(ctx))

    def pass_message(self, ctx: CheckContext) -> str:
        return f"{self.name}: no failure"

    def fail(self, message: str, *, key: str | None = None, seq: int | None = None,
             turn: int | None = None, severity: Severity | None = None,
             safety_critical: bool | None = None,
             detail: Mapping[str, Any] | None = None) -> None:
        self.failed += 1
        if len(self.findings) >= MAX_FINDINGS:
            self.suppressed += 1
            return
        self.findings.append(Finding(
            check=self.name, passed=False, key=key, seq=seq, turn=turn,
            severity=severity or self.severity,
            safety_critical=self.safety_critical if safety_critical is None else safety_critical,
            message=message, detail=detail))

    def passed(self, message: str, *, key: str | None = None, seq: int | None = None,
               turn: int | None = None, severity: Severity | None = None) -> None:
        # Traces of one scenario mostly pass with the same words: findings are immutable,
        # so one object serves them all (the table is bounded like the per-tool ones).
        memo = (self.name, message, key, seq, turn, severity)
        found = self._passes.get(memo)
        if found is None:
            found = remember(self._passes, memo, Finding(
                check=self.name, passed=True, key=key, seq=seq, turn=turn,
                severity=severity or Severity.INFORMATIONAL, safety_critical=False,
                message=message))
        self.findings.append(found)
