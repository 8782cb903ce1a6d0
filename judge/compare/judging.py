"""`judge compare --model`: the judge items of one version's traces, graded as a stored run.

Each side is graded through the one grading pipeline (judge.pipeline.grade_run) as a run of
its own, with its scenarios' rubrics: every provider call is stored and answers the same
item again from the cache, verdicts are routed (the review queue gets what is uncertain), and
a trial's judge fails count against it only when they stand — auto-accepted under a
calibration record and not overruled by a veto — as in `judge run`. Without a calibration
record every verdict goes to review, so the judge's fails are counted and shown but change no
trial's status.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from judge.compare.scenarios import ScenarioSet
from judge.compare.sides import Side
from judge.formats import parse_item_id

if TYPE_CHECKING:
    from judge.pipeline import Hooks
    from judge.settings import Settings
    from judge.store import Store


def _trace_of(item_id: str) -> str:
    try:
        return parse_item_id(item_id)[0]
    except ValueError:
        return item_id


def grade_side(side: Side, scenarios: ScenarioSet, store: Store, settings: Settings,
               spec: str, hooks: Hooks | None = None) -> None:
    """Grade `side`'s traces with `spec` (a model or jury), as a run stored in `store`, and
    fold the verdicts into its trials (in place). `hooks`: the pipeline's progress hooks."""
    from judge.grading.jury import build_judges, check_jury_rubrics
    from judge.pipeline import GradeOptions, Source, grade_run
    from judge.prompts import load_prompt

    provider, jury = build_judges(settings, spec)  # a side's own: grading closes them
    sources = []
    rubrics: set[str] = set()
    for sid, loaded in scenarios.scenarios.items():
        traces = [t.trace for t in side.trials
                  if t.outcome.scenario_id == sid and t.trace is not None]
        used = list(dict.fromkeys(u.rubric for u in loaded.scenario.judge))
        if traces and used:
            sources.append(Source(loaded, traces, used))
            rubrics.update(used)
    check_jury_rubrics(jury, sorted(rubrics))
    prompts = {r: load_prompt(r) for r in sorted(rubrics)}
    config: dict[str, Any] = {"command": "compare", "side": side.label, "model": spec,
                              "params": settings.model_params().to_dict()}
    if jury is not None:
        config["jury"] = jury.spec.to_config()
    result = grade_run(sources, store=store, config=config, prompts=prompts,
                       provider=provider, settings=settings, errors=[], jury=jury,
                       options=GradeOptions(keep_verdicts=True), hooks=hooks)
    standing: Counter[str] = Counter()
    fails: Counter[str] = Counter()
    pending: Counter[str] = Counter()
    for v in result.verdicts:
        tid = _trace_of(v.item_id)
        if v.label == "fail":
            fails[tid] += 1
            if v.route == "auto_accept" and not v.overruled:
                standing[tid] += 1
        if v.route == "review":
            pending[tid] += 1
    for t in side.trials:
        t.outcome.judge_fails = standing[t.trace_id]
        t.outcome.judge_pending = pending[t.trace_id]
        t.judge_fails = fails[t.trace_id]
    labels = Counter(v.label for v in result.verdicts)
    side.run_id = result.run_id
    side.judge = {"model": spec, "run_id": result.run_id, "verdicts": len(result.verdicts),
                  "pass": labels["pass"], "fail": labels["fail"],
                  "unscored": labels["unscored"], "standing_fails": sum(standing.values()),
                  "to_review": sum(pending.values()),
                  "provider_calls": result.stats.provider_calls,
                  "cache_hits": result.stats.cache_hits}
