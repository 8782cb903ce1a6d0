"""Which task a trace is a run of, and which run: `metadata.task_id` and `metadata.trial`
(docs/formats.md, "Task ids and trials").

Seed-style repetition needs repetitions of the same task: a task that passes 3 of 4 trials is
flaky, two different tasks are not. A trace names its task with `metadata.task_id`, a
non-empty string (an importer that knows it writes it: tau-bench's task id, inspect's sample
id), and optionally its run with `metadata.trial`, an integer >= 0. An integer task id (what
`judge import tau-bench` wrote before) is read as its decimal string. Anything else is bad
input naming the field. A suite manifest may also give tasks (judge.suite.tasks); a trace
with neither is a trial of its scenario's one task.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from judge.errors import InputError

MAX_TASK_ID = 200


def task_of(metadata: Mapping[str, Any], *, trace_id: str | None = None,
            file: str | None = None, line: int | None = None) -> tuple[str | None, int | None]:
    """(task id, trial) from a trace's metadata, each None when absent; InputError naming
    the trace and `metadata.task_id` or `metadata.trial` when one is not what it must be."""
    of = f"trace '{trace_id}': " if trace_id is not None else ""
    task: str | None = None
    raw = metadata.get("task_id")
    if raw is not None:
        if isinstance(raw, bool) or not isinstance(raw, str | int):
            raise InputError(of + "expected a string (the task this trace is a run of)",
                             file=file, line=line, field="metadata.task_id")
        task = str(raw)
        if not task or len(task) > MAX_TASK_ID:
            raise InputError(of + f"expected a non-empty string of at most {MAX_TASK_ID} "
                             "characters", file=file, line=line, field="metadata.task_id")
    trial: int | None = None
    raw = metadata.get("trial")
    if raw is not None:
        if isinstance(raw, bool) or not isinstance(raw, int) or raw < 0:
            raise InputError(of + "expected an integer >= 0 (which run of its task this trace is)",
                             file=file, line=line, field="metadata.trial")
        trial = raw
    return task, trial
