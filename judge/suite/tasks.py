"""Tasks and trials of a suite run: which task each checked trace is a run of, and what each
task came to (docs/formats.md, "Task ids and trials").

A trace's task is, in this order: the task of its scenario entry's `tasks:` map whose trace
id patterns (globs) match it; its own `metadata.task_id` (judge.trace.task: the importers
that know it write it, tau-bench's task id among them); else its scenario's one task (named
as the scenario). Its trial is `metadata.trial`, else its place among the task's trials in
the order they were checked. The map also says what a task is expected to do: `expect: fail`
marks a trace designed to fail (an example showing what the checks catch).

A task *passes* when every trial passed, *fails* when none did, and is *flaky* when its trials
disagree. A task expected to fail is *caught* when every trial failed and *missed* when one
passed (nothing caught it). A task is as expected (`ok`) when it passes, or is caught. A
scenario's pass rate is over its tasks: tasks as expected / tasks.

Pure functions over `TraceOutcome`s; the summary (judge.suite.summary) assigns and groups.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from judge.errors import InputError
from judge.suite.components import Counts, add, rates, worse
from judge.suite.manifest import TaskSpec
from judge.suite.outcome import TraceOutcome

PASSING, FAILING, FLAKY, CAUGHT, MISSED = "passing", "failing", "flaky", "caught", "missed"


@dataclass(frozen=True)
class EntryTasks:
    """The `tasks:` map of one scenario entry of the manifest, and where it is written."""

    specs: dict[str, TaskSpec]
    where: str  # e.g. suites.nightly.scenarios[2].tasks


def assign_tasks(outcomes: Sequence[TraceOutcome], entries: Sequence[EntryTasks | None],
                 file: str) -> list[InputError]:
    """Give every outcome its task, trial and expectation (in place); the manifest's
    mistakes as errors naming it: a trace that two tasks' patterns match (it takes the
    first), a task of the map that no trace turned out to be."""
    errors: list[InputError] = []
    seen: set[tuple[int, str]] = set()
    for o in outcomes:
        entry = entries[o.entry] if o.entry is not None and o.entry < len(entries) else None
        specs = entry.specs if entry is not None else {}
        hits = [t for t, spec in specs.items()
                if any(fnmatchcase(o.trace_id, p) for p in spec.traces)]
        if len(hits) > 1 and entry is not None:
            errors.append(InputError(
                f"trace '{o.trace_id}' matches the traces of tasks '{hits[0]}' and "
                f"'{hits[1]}' (it is taken as '{hits[0]}')", file=file, path=entry.where))
        if hits:
            o.task_id = hits[0]
        task = o.task
        spec = specs.get(task)
        o.expect = spec.expect if spec is not None else "pass"
        if o.entry is not None and spec is not None:
            seen.add((o.entry, task))
    for i, entry in enumerate(entries):
        for task in (entry.specs if entry is not None else {}):
            if (i, task) not in seen and entry is not None:
                errors.append(InputError(
                    f"task '{task}' has no trace (no trace id matches its patterns and no "
                    "trace names it in metadata.task_id)", file=file, path=entry.where))
    _number_trials(outcomes)
    return errors


def _number_trials(outcomes: Iterable[TraceOutcome]) -> None:
    """A trial without `metadata.trial` gets its place among its task's trials."""
    count: dict[tuple[str, str], int] = defaultdict(int)
    for o in outcomes:
        key = (o.scenario_id, o.task)
        if o.trial is None:
            o.trial = count[key]
        count[key] += 1


@dataclass
class TaskResult:
    """One task of one scenario: its trials, in trial order, and what they came to."""

    scenario: str
    task_id: str
    expect: str
    trials: list[TraceOutcome]

    @property
    def n(self) -> int:
        return len(self.trials)

    @property
    def passed(self) -> int:
        return sum(o.passed for o in self.trials)

    @property
    def flaky(self) -> bool:
        return 0 < self.passed < self.n

    @property
    def ok(self) -> bool:
        return self.passed == self.n if self.expect != "fail" else self.passed == 0

    @property
    def status(self) -> str:
        if self.expect == "fail":
            return CAUGHT if self.passed == 0 else MISSED
        return PASSING if self.passed == self.n else FLAKY if self.passed else FAILING

    def to_dict(self) -> dict[str, Any]:
        worst: str | None = None
        counts: Counts = {}
        for o in self.trials:
            worst = worse(worst, o.worst_severity)
            add(counts, o.components)
        return {"expect": self.expect, "trials": self.n, "passed": self.passed,
                "flaky": self.flaky, "ok": self.ok, "status": self.status,
                "worst_severity": worst, "judge_fails": sum(o.judge_fails for o in self.trials),
                "components": rates(counts),
                "results": [{"trial": o.trial, "trace_id": o.trace_id, "passed": o.passed}
                            for o in self.trials]}


def task_key(task_id: str) -> tuple[tuple[int, int | str], ...]:
    """Natural order of task ids: "2" before "10", "t2" before "t10"."""
    return tuple((0, int(p)) if p.isdigit() else (1, p)
                 for p in re.split(r"(\d+)", task_id) if p)


def group_tasks(outcomes: Iterable[TraceOutcome]) -> dict[str, dict[str, TaskResult]]:
    """scenario → task id → its result; scenarios in first-seen order, tasks in natural
    order, trials by trial number."""
    grouped: dict[str, dict[str, list[TraceOutcome]]] = defaultdict(lambda: defaultdict(list))
    for o in outcomes:
        grouped[o.scenario_id][o.task].append(o)
    out: dict[str, dict[str, TaskResult]] = {}
    for scenario, tasks in grouped.items():
        out[scenario] = {}
        for task in sorted(tasks, key=task_key):
            trials = sorted(tasks[task], key=lambda o: (o.trial is None, o.trial or 0,
                                                        o.trace_id))
            expect = "fail" if any(o.expect == "fail" for o in trials) else "pass"
            out[scenario][task] = TaskResult(scenario, task, expect, trials)
    return out
