"""What one checked trace of a suite run came to (the gate, the tasks and the summary read it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class TraceOutcome:
    """What one trace (one trial of a task of a scenario) came to."""

    trace_id: str
    scenario_id: str
    eligible: bool  # no deterministic veto
    quality: float
    safety_critical_failures: int
    judge_fails: int = 0  # judge fails that stand (auto-accepted, not overruled)
    judge_pending: int = 0  # verdicts waiting for human review
    first_divergence: dict[str, Any] | None = None
    first_leak: dict[str, Any] | None = None  # its first `state_leakage` failure, if any
    diagnosis: str = ""
    worst_severity: str | None = None  # of its failed findings (judge.suite.components)
    components: dict[str, list[int]] = field(default_factory=dict)  # → [numerator, denominator]
    # its task (judge.suite.tasks): None until assigned, then read as the scenario's one task
    task_id: str | None = None
    trial: int | None = None
    expect: str = "pass"  # pass | fail: what its task is expected to do
    entry: int | None = None  # the manifest's scenario entry it came from (its tasks: map)

    @property
    def passed(self) -> bool:
        return self.eligible and self.judge_fails == 0

    @property
    def task(self) -> str:
        """Its task id: the one it names or was given, else its scenario's one task."""
        return self.task_id if self.task_id is not None else self.scenario_id

    @property
    def counts(self) -> bool:
        """Whether the run's agent figures count it (gate, components, clusters): its task is
        expected to pass; a trace designed to fail is checked against that instead."""
        return self.expect != "fail"
