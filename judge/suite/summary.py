"""A suite run's summary: tasks and their trials, per-scenario pass counts over tasks, failure
clusters, the judge's share, and the release gate, from the checks' outcomes and the run's
stored verdicts.

Traces of tasks designed to fail (`expect: fail` in the manifest's `tasks:` map) are checked
against that (judge.suite.tasks) and listed per task; the run's agent figures — clusters,
components, worst severities, the gate's counts — are over the tasks expected to pass."""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Any

from judge.checks import CheckReport
from judge.errors import InputError
from judge.formats import Verdict, parse_item_id
from judge.grading.engine import GradingStats
from judge.grading.jury import JurySpec
from judge.ledger import LoadedScenario
from judge.pipeline.collect import TraceChecked
from judge.routing import JURY_SPLIT, UNCALIBRATED
from judge.suite.changes import changes_since
from judge.suite.cluster import LEAKAGE_CHECKS, cluster_failures, minimal_slice
from judge.suite.components import (
    Counts,
    add,
    rates,
    scope_of,
    trace_components,
    worse,
    worst_severity,
)
from judge.suite.gate import AgreementDrop, JudgeContribution, evaluate_gate
from judge.suite.outcome import TraceOutcome
from judge.suite.plan import Plan
from judge.suite.tasks import TaskResult, assign_tasks, group_tasks

if TYPE_CHECKING:
    from judge.store import Store


class Outcomes:
    """Records each checked trace's outcome and, for a failing one, the minimal slice up to
    its first divergence (the pipeline's `on_checked` hook)."""

    def __init__(self) -> None:
        self.outcomes: list[TraceOutcome] = []
        self.slices: dict[str, list[dict[str, Any]]] = {}

    def __call__(self, tc: TraceChecked) -> None:
        report, loaded = tc.report, tc.scenario
        assert loaded is not None
        first = report.first_divergence
        leak = next((f for f in report.failures if f.check in LEAKAGE_CHECKS), None)
        self.outcomes.append(TraceOutcome(
            trace_id=report.trace_id, scenario_id=loaded.scenario.id, eligible=report.eligible,
            quality=report.quality_score, safety_critical_failures=len(report.vetoes),
            first_divergence=first.to_dict() if first else None,
            first_leak=leak.to_dict() if leak else None,
            diagnosis=report.diagnosis(), worst_severity=worst_severity(report),
            components=trace_components(report, tc.recovery), task_id=report.task_id,
            trial=report.trial, entry=tc.source))
        shown = leak or first  # what the trace is clustered by (judge.suite.cluster)
        if shown is not None and shown.seq is not None and tc.events is not None:
            self.slices[report.trace_id] = minimal_slice(
                tc.events, _from_turn(loaded, report, shown.turn or 0), shown.seq)


def _from_turn(loaded: LoadedScenario, report: CheckReport, div_turn: int) -> int:
    """The turn of the last passing checkpoint before the divergence (else the turn before)."""
    failed_turns = {f.turn for f in report.failures if f.check.startswith("checkpoint")}
    passing = [cp.after_turn for cp in loaded.scenario.checkpoints
               if cp.after_turn < div_turn and cp.after_turn not in failed_turns]
    return max(passing) if passing else max(div_turn - 1, 0)


def _trace_of(item_id: str) -> str:
    try:
        return parse_item_id(item_id)[0]
    except ValueError:
        return item_id


def _agreement_drop(plan: Plan, store: Store, run_id: str) -> AgreementDrop | None:
    """The newest run with labelled audit items against the earlier ones (this run included),
    when the suite has a max_agreement_drop rule."""
    if plan.suite.release.max_agreement_drop is None:
        return None
    from judge.calibration.drift import drift_from_store

    latest = drift_from_store(store, plan.suite_name, manifest=plan.manifest_path,
                              include=(run_id,), n_boot=0).latest()
    if latest is None or latest.drop is None or latest.drop_ci is None:
        return None
    assert latest.agreement is not None and latest.baseline is not None
    return AgreementDrop(latest.run_id, latest.agreement, latest.baseline, latest.drop,
                         (latest.drop_ci[0], latest.drop_ci[1]), latest.flagged)


def summarize(plan: Plan, outcomes: Outcomes, errors: list[InputError], store: Store,
              run_id: str, judge_name: str, model_spec: str, stats: GradingStats | None, *,
              require_calibrated: bool, jury: JurySpec | None = None) -> dict[str, Any]:
    """The run's summary (stored on the run; `judge report run` renders it), with what
    changed since the previous finished run of the same suite (`changes`)."""
    verdicts = store.run_verdicts(run_id)
    judge = JudgeContribution(judge=judge_name, items=len(verdicts))
    per_trace: dict[str, list[Verdict]] = defaultdict(list)
    for v in verdicts:
        per_trace[_trace_of(v.item_id)].append(v)
        if v.label == "unscored":
            judge.unscored += 1
        if v.overruled:
            judge.overruled += 1
        if v.route == "review":
            judge.review += 1
        elif v.route == "auto_accept":
            judge.auto_accepted += 1
        if v.label == "fail":
            judge.fails += 1
        if v.route_reason == UNCALIBRATED:
            judge.uncalibrated += 1
    if stats is not None:
        judge.provider_calls = stats.provider_calls
        judge.cached = stats.cache_hits
    for o in outcomes.outcomes:
        vs = per_trace.get(o.trace_id, [])
        o.judge_fails = sum(1 for v in vs if v.label == "fail" and v.route == "auto_accept")
        o.judge_pending = sum(1 for v in vs if v.route == "review")
        o.components["scope"] = scope_of(vs)
    errors.extend(assign_tasks(outcomes.outcomes, [ps.tasks for ps in plan.scenarios],
                               str(plan.manifest_path)))
    tasks = group_tasks(outcomes.outcomes)
    expected = {ps.loaded.scenario.id: ps.repetitions for ps in plan.scenarios}
    gate = evaluate_gate(outcomes.outcomes, judge, plan.suite.release, expected,
                         require_calibrated=require_calibrated,
                         agreement_drop=_agreement_drop(plan, store, run_id), tasks=tasks)
    agent = [o for o in outcomes.outcomes if o.counts]
    clusters = cluster_failures(agent, outcomes.slices)
    repetitions = _repetitions(tasks)
    summary: dict[str, Any] = {
        "run_id": run_id,
        "suite": plan.suite_name,
        "manifest": str(plan.manifest_path),
        "judge": {"name": judge_name, "model": model_spec,
                  "items": judge.items, "auto_accepted": judge.auto_accepted,
                  "review": judge.review, "unscored": judge.unscored,
                  "overruled": judge.overruled, "fails": judge.fails,
                  "uncalibrated": judge.uncalibrated, "review_share": judge.review_share,
                  "provider_calls": judge.provider_calls, "cache_hits": judge.cached},
        "gate": gate.to_dict(),
        "release": plan.suite.release.model_dump(),  # the rules' thresholds, for reports
        "scenarios": {s: {"passed": p, "total": t, "text": f"{p}/{t}"}
                      for s, (p, t) in gate.scenario_pass.items()},
        "clusters": [c.to_dict() for c in clusters],
        # traces (of tasks expected to pass) that leaked a fact of another owner
        "leaking_traces": sum(1 for o in agent if o.first_leak is not None),
        "traces": [{"trace_id": o.trace_id, "scenario": o.scenario_id, "passed": o.passed,
                    "task_id": o.task, "trial": o.trial, "expect": o.expect,
                    "eligible": o.eligible, "quality": o.quality,
                    "safety_critical_failures": o.safety_critical_failures,
                    "judge_fails": o.judge_fails, "judge_pending": o.judge_pending,
                    "first_divergence": o.first_divergence, "first_leak": o.first_leak,
                    "worst_severity": o.worst_severity, "components": o.components}
                   for o in outcomes.outcomes],
        "input_errors": [e.message for e in errors],
        "uncalibrated_note": (f"{judge.uncalibrated} verdict(s) came from a prompt/model with "
                              "no calibration record; all were sent to human review"
                              if judge.uncalibrated else None),
    }
    overall: Counts = {}
    for o in agent:
        add(overall, o.components)
    if stats is not None:  # how many values of each class redaction replaced (no values)
        summary["judge"]["redactions"] = dict(sorted(stats.redactions.items()))
    if jury is not None:  # who sat, and how often they split (each split went to review)
        summary["judge"]["jury"] = {
            **jury.to_config(), "seats": jury.seats, "jurors": [j.id for j in jury.jurors()],
            "verdicts": sum(1 for v in verdicts if isinstance(v.metadata.get("jury"), dict)),
            "splits": sum(1 for v in verdicts if v.route_reason == JURY_SPLIT)}
    summary["components"] = rates(overall)
    summary["repetitions"] = repetitions
    summary["flaky"] = sorted(s for s, r in repetitions.items() if r["flaky"])
    summary["tasks"] = {s: {t: r.to_dict() for t, r in ts.items()} for s, ts in tasks.items()}
    summary["flaky_tasks"] = [{"scenario": s, "task_id": t, "passed": r.passed,
                               "trials": r.n}
                              for s, ts in tasks.items() for t, r in ts.items() if r.flaky]
    previous = store.previous_finished_run(
        run_id, suite=plan.suite_name, manifest=str(plan.manifest_path.resolve()))
    summary["changes"] = changes_since(
        previous, store.run_verdicts(previous["run_id"]) if previous else [], summary, verdicts)
    return summary


def _repetitions(tasks: dict[str, dict[str, TaskResult]]) -> dict[str, dict[str, Any]]:
    """Per scenario, over its tasks expected to pass: their trials (`passed`/`total`),
    `flaky` (a task whose trials disagree), the worst severity of a failed finding, judge
    fails that stand and the component figures summed; and its tasks: how many, how many
    as expected, the flaky ones, and the tasks designed to fail that were caught or missed."""
    out: dict[str, dict[str, Any]] = {}
    for scenario, ts in tasks.items():
        agent = [t for t in ts.values() if t.expect != "fail"]
        trials = [o for t in agent for o in t.trials]
        worst: str | None = None
        counts: Counts = {}
        for o in trials:
            worst = worse(worst, o.worst_severity)
            add(counts, o.components)
        designed = [t for t in ts.values() if t.expect == "fail"]
        out[scenario] = {
            "passed": sum(o.passed for o in trials), "total": len(trials),
            "flaky": any(t.flaky for t in agent),
            "worst_severity": worst, "judge_fails": sum(o.judge_fails for o in trials),
            "components": rates(counts),
            "tasks": len(ts), "tasks_passed": sum(t.ok for t in ts.values()),
            "flaky_tasks": [t.task_id for t in agent if t.flaky],
            "expected_failures": {"caught": [t.task_id for t in designed if t.ok],
                                  "missed": [t.task_id for t in designed if not t.ok]}}
    return out
