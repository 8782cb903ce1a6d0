"""One version's runs of the tasks: every trial checked, with what `judge compare` and
`judge canary` read of it.

A side is either a set of traces (files, directories of `.json`/`.jsonl` files, or quoted
glob patterns) checked here against the scenarios (judge.compare.scenarios), or a stored
`judge run` (its summary says which traces it checked, what each came to and which task
each is a trial of; the traces themselves are read back from the database for the diff and
re-checked for hard failures when the run's scenarios can be loaded).

A trial *passes* as a trace does in a run: no deterministic veto and no judge fail that
stands (judge.suite.outcome). A trial *hard-fails on its terminal actions* when it is vetoed,
or when its writes are not what the task needed: a failed `silent_failure` (a required
write never happened), `unexpected_effect` (a write nothing asked for), `argument_drift` (a
write with other arguments) or `end_state` finding of severity costly or worse. On the 200
tau-bench airline runs that agrees with tau-bench's own reward on 189.

Traces of tasks designed to fail (`expect: fail` in a suite's `tasks:` map) are examples of
what the checks catch, not runs of the agent: they are left out.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from judge.checks import CheckReport, run_checks
from judge.compare.scenarios import ScenarioSet
from judge.errors import InputError
from judge.suite.cluster import signature_of
from judge.suite.components import worst_severity
from judge.suite.outcome import TraceOutcome
from judge.suite.tasks import TaskResult, assign_tasks, group_tasks
from judge.trace import Trace, iter_traces

if TYPE_CHECKING:
    from judge.store import Store

#: the checks that judge a run's terminal actions (its writes) against the task's outcome
OUTCOME_CHECKS = frozenset({"silent_failure", "unexpected_effect", "argument_drift",
                            "end_state"})
_HARD = frozenset({"costly", "unsafe"})

TaskKey = tuple[str, str]  # (scenario, task id)


def hard_failure(report: CheckReport) -> bool:
    """Vetoed, or a terminal action (a write) not what the task needed (see the module)."""
    return report.vetoed or any(
        f.check in OUTCOME_CHECKS and (f.safety_critical or f.severity.value in _HARD)
        for f in report.failures)


def signature(outcome: TraceOutcome) -> str | None:
    """A failing trial's failure signature (its first divergence, as a run's failure
    clusters name it); None for a trial that passed."""
    if outcome.passed:
        return None
    div = outcome.first_divergence or {"check": "judge", "key": None, "turn": None,
                                       "severity": "judge-fail"}
    return signature_of(div)[0]


@dataclass
class Trial:
    """One checked run of a task by one version."""

    outcome: TraceOutcome
    hard_failure: bool | None  # None: not known (a stored run whose scenarios are gone)
    trace: Trace | None = None  # for the diff
    judge_fails: int = 0  # judge fails graded here (standing or not), with --model
    message: str | None = None  # its first divergence, for people

    @property
    def trace_id(self) -> str:
        return self.outcome.trace_id

    @property
    def signature(self) -> str | None:
        return signature(self.outcome)


@dataclass
class Side:
    """One version: where its traces came from, its trials and their tasks."""

    label: str  # baseline | candidate | stage
    source: str  # what was given: paths, or run:RUN_ID
    kind: str  # traces | run
    trials: list[Trial] = field(default_factory=list)
    run_id: str | None = None  # a stored run: the run; with --model: the run graded here
    errors: list[InputError] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    designed: int = 0  # traces of tasks designed to fail, left out
    judge: dict[str, Any] | None = None  # with --model: what the judge did
    scenarios: ScenarioSet | None = None  # what its traces were checked against

    def tasks(self) -> dict[TaskKey, TaskResult]:
        """(scenario, task) → its trials and what they came to, in natural order."""
        by = group_tasks([t.outcome for t in self.trials])
        return {(s, k): r for s, ts in by.items() for k, r in ts.items()}

    def by_id(self) -> dict[str, Trial]:
        return {t.trace_id: t for t in self.trials}

    def summary(self) -> dict[str, Any]:
        tasks = self.tasks()
        return {"source": self.source, "kind": self.kind, "run_id": self.run_id,
                "traces": len(self.trials), "tasks": len(tasks),
                "trials_passed": sum(t.outcome.passed for t in self.trials),
                "tasks_passing": sum(r.passed == r.n for r in tasks.values()),
                "hard_failures": (sum(bool(t.hard_failure) for t in self.trials)
                                  if all(t.hard_failure is not None for t in self.trials)
                                  else None),
                "vetoed": sum(not t.outcome.eligible for t in self.trials),
                "designed_failures_left_out": self.designed, "judge": self.judge}


def expand(paths: Sequence[str | Path]) -> list[Path]:
    """Trace files: each path as given, every `.json`/`.jsonl` file of a directory (sorted),
    and the files a glob pattern matches. A pattern that matches nothing is bad input."""
    out: list[Path] = []
    for p in paths:
        text = str(p)
        if os.path.isdir(text):
            found = sorted(q for q in Path(text).iterdir()
                           if q.suffix in (".json", ".jsonl") and q.is_file())
            if not found:
                raise InputError("no .json or .jsonl trace file in the directory", file=text)
            out.extend(found)
        elif glob.has_magic(text) and not os.path.lexists(text):
            matches = sorted(glob.glob(text))
            if not matches:
                raise InputError("no trace file matches the pattern", file=text)
            out.extend(Path(m) for m in matches)
        else:
            out.append(Path(text))
    return out


def _outcome(report: CheckReport, entry: int | None) -> TraceOutcome:
    first = report.first_divergence
    return TraceOutcome(
        trace_id=report.trace_id, scenario_id=report.scenario_id, eligible=report.eligible,
        quality=report.quality_score, safety_critical_failures=len(report.vetoes),
        first_divergence=first.to_dict() if first else None, diagnosis="",
        worst_severity=worst_severity(report), task_id=report.task_id, trial=report.trial,
        entry=entry)


def _finish(side: Side, scenarios: ScenarioSet) -> Side:
    """Give every trial its task (a suite's `tasks:` map first, judge.suite.tasks) and leave
    out the tasks designed to fail."""
    problems = assign_tasks([t.outcome for t in side.trials], scenarios.entries(),
                            scenarios.manifest or "")
    # a task of the manifest that one version has no trace of is the pairing's business
    # (unpaired), not a problem of the manifest; a trace two tasks claim is
    side.warnings.extend(e.message for e in problems if " has no trace (" not in e.message)
    kept = [t for t in side.trials if t.outcome.counts]
    side.designed = len(side.trials) - len(kept)
    side.trials = kept
    return side


def side_from_traces(label: str, paths: Sequence[str | Path], scenarios: ScenarioSet, *,
                     keep_traces: bool = True) -> Side:
    """Check every trace of `paths` against its scenario. Bad traces are recorded in the
    side's errors and left out; a trace id seen twice on one side is an error too."""
    files = expand(paths)
    side = Side(label, " ".join(str(p) for p in paths), "traces", scenarios=scenarios)
    seen: set[str] = set()
    for path in files:
        for trace in iter_traces(path, side.errors):
            if trace.trace_id in seen:
                side.errors.append(InputError(
                    f"trace '{trace.trace_id}' appears twice in the {label}'s traces",
                    file=str(path), field="trace_id"))
                continue
            try:
                loaded = scenarios.pick(trace.scenario, trace.trace_id)
                report = run_checks(loaded, trace)
            except InputError as exc:
                side.errors.append(exc if exc.file else InputError(exc.message,
                                                                   file=str(path)))
                continue
            seen.add(trace.trace_id)
            first = report.first_divergence
            side.trials.append(Trial(_outcome(report, scenarios.entry_of(report.scenario_id)),
                                     hard_failure(report), trace if keep_traces else None,
                                     message=first.message if first else None))
    if not side.trials and not side.errors:
        side.errors.append(InputError(f"no trace in the {label}'s files",
                                      file=" ".join(map(str, files))))
    return _finish(side, scenarios)


def run_scenarios(store: Store, run_id: str) -> ScenarioSet | None:
    """The scenarios of a stored suite run, from its manifest (None when the manifest is
    gone or does not load: the caller says what that leaves out)."""
    from judge.compare.scenarios import load_scenarios

    stored = store.get_run(run_id) or {}
    config = stored.get("config") or {}
    manifest = config.get("manifest")
    if not manifest or not Path(manifest).is_file():
        return None
    try:
        return load_scenarios([], Path(manifest), config.get("suite"),
                              allow_outside=bool(config.get("allow_outside", False)))
    except InputError:
        return None


def side_from_run(label: str, store: Store, run_id: str,
                  scenarios: ScenarioSet | None = None) -> Side:
    """A stored `judge run`: its trials as its summary recorded them (passed, task, trial,
    first divergence), its traces read back from the database, and hard failures re-checked
    under `scenarios` (else the run's own manifest's; unknown when neither loads)."""
    from judge.suite.run import stored_summary

    stored = store.get_run(run_id)
    if stored is None:
        raise InputError(f"no run '{run_id}' in {store.where}")
    if (stored.get("config") or {}).get("command") == "grade":
        raise InputError(f"run '{run_id}' was stored by judge grade, which keeps no per-trace "
                         "summary; compare its trace files instead")
    summary = stored_summary(store, run_id)
    side = Side(label, f"run:{run_id}", "run", run_id=run_id)
    rows = [t for t in summary.get("traces") or [] if isinstance(t, dict)]
    if not rows:
        raise InputError(f"run '{run_id}' checked no trace")
    if scenarios is None or not scenarios.scenarios:
        scenarios = run_scenarios(store, run_id)
        if scenarios is None:
            side.warnings.append(f"run {run_id}: its manifest is gone or does not load, so "
                                 "hard failures are unknown and the diff guesses which tools "
                                 "write from their names (give --scenario or --suite)")
    side.scenarios = scenarios
    bodies = store.trace_bodies([str(t["trace_id"]) for t in rows])
    for row in rows:
        tid = str(row["trace_id"])
        outcome = TraceOutcome(
            trace_id=tid, scenario_id=str(row.get("scenario")),
            eligible=bool(row.get("eligible", row.get("passed"))),
            quality=float(row.get("quality") or 0.0),
            safety_critical_failures=int(row.get("safety_critical_failures") or 0),
            judge_fails=int(row.get("judge_fails") or 0),
            judge_pending=int(row.get("judge_pending") or 0),
            first_divergence=row.get("first_divergence"),
            worst_severity=row.get("worst_severity"),
            task_id=None if row.get("task_id") is None else str(row["task_id"]),
            trial=row.get("trial") if isinstance(row.get("trial"), int) else None,
            expect=str(row.get("expect") or "pass"))
        if outcome.expect == "fail":
            side.designed += 1
            continue
        trace = _trace(bodies.get(tid), tid, side)
        hard: bool | None = None
        message = (outcome.first_divergence or {}).get("message")
        if trace is not None and scenarios is not None and \
                outcome.scenario_id in scenarios.scenarios:
            try:
                hard = hard_failure(run_checks(scenarios.scenarios[outcome.scenario_id], trace))
            except InputError as exc:
                side.warnings.append(f"run {run_id}: trace {tid}: {exc.message}")
        side.trials.append(Trial(outcome, hard, trace, message=message))
    return side


def _trace(body: dict[str, Any] | None, trace_id: str, side: Side) -> Trace | None:
    if body is None:
        side.warnings.append(f"trace {trace_id} of {side.source} is not in the database")
        return None
    try:
        return Trace.model_validate(body)
    except ValueError as exc:
        side.warnings.append(f"trace {trace_id} of {side.source} does not load: "
                             f"{str(exc).splitlines()[0]}")
        return None
