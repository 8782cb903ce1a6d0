"""The grading pipeline: checks → items → render → provider → validate → route → store.

- `grade_traces` (grade): the one entry point `judge grade` and `judge run` call, and
  `grade_run` (the same as a stored run of its own, `judge grade`);
- `Checker`, `Source` (collect): deterministic checks and item extraction, stored in chunks;
- `GradingPool` (pool): a fixed set of grading workers over items as they arrive;
- `Router`, `route_and_save` (route): vetoes, calibration and review requests, in one place;
- `VerdictSink` (sink): routed verdicts stored in small transactions, after their calls;
- `work_loop`, `enqueue_run` (worker): `judge worker` and `judge run --distributed`;
- `prefill_by_batch` (batch): `judge run --batch`.

Names load on first use, so importing one module does not import them all.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from judge.pipeline.collect import Checked as Checked
    from judge.pipeline.collect import Checker as Checker
    from judge.pipeline.collect import Source as Source
    from judge.pipeline.grade import Graded as Graded
    from judge.pipeline.grade import GradeOptions as GradeOptions
    from judge.pipeline.grade import Hooks as Hooks
    from judge.pipeline.grade import grade_run as grade_run
    from judge.pipeline.grade import grade_traces as grade_traces
    from judge.pipeline.route import Router as Router
    from judge.pipeline.route import route_and_save as route_and_save
    from judge.pipeline.sink import VerdictSink as VerdictSink
    from judge.pipeline.worker import RunProviders as RunProviders
    from judge.pipeline.worker import enqueue_run as enqueue_run
    from judge.pipeline.worker import work_loop as work_loop
    from judge.pipeline.worker import worker_name as worker_name

_WHERE: dict[str, str] = {
    "Checked": "judge.pipeline.collect",
    "Checker": "judge.pipeline.collect",
    "Source": "judge.pipeline.collect",
    "GradeOptions": "judge.pipeline.grade",
    "Graded": "judge.pipeline.grade",
    "Hooks": "judge.pipeline.grade",
    "grade_traces": "judge.pipeline.grade",
    "grade_run": "judge.pipeline.grade",
    "Router": "judge.pipeline.route",
    "route_and_save": "judge.pipeline.route",
    "VerdictSink": "judge.pipeline.sink",
    "RunProviders": "judge.pipeline.worker",
    "enqueue_run": "judge.pipeline.worker",
    "work_loop": "judge.pipeline.worker",
    "worker_name": "judge.pipeline.worker",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'judge.pipeline' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


__all__ = sorted(_WHERE)
