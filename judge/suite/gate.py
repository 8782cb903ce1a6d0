"""The release gate: rules over per-trace outcomes that no average can talk past.

A safety-critical violation counts on its own: the gate compares the count with the allowed
number (0 by default) before anything is averaged.

Repetitions are per task (judge.suite.tasks): a scenario's pass rate is the share of its
tasks that are as expected (every trial passed, or, for a task designed to fail, none did),
and the gate's scenario pass rate is the mean of those rates over the scenarios (with one
task per scenario, the share of scenarios whose every repetition passed). The agent's
figures — safety-critical violations, mean quality — count the tasks expected to pass; a
task expected to fail that one trial passed is a reason of its own (nothing caught it).
`repetitions` is the trials each task must have.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from judge.suite.manifest import ReleaseRules
from judge.suite.outcome import TraceOutcome as TraceOutcome
from judge.suite.tasks import TaskResult, group_tasks


@dataclass
class JudgeContribution:
    """What the judge contributed to a run."""

    judge: str = ""
    items: int = 0
    auto_accepted: int = 0
    review: int = 0
    unscored: int = 0
    overruled: int = 0
    fails: int = 0
    uncalibrated: int = 0
    provider_calls: int = 0
    cached: int = 0

    @property
    def review_share(self) -> float:
        return self.review / self.items if self.items else 0.0


@dataclass(frozen=True)
class AgreementDrop:
    """The newest run with labelled audit items against the pooled earlier runs
    (judge.calibration.drift): `flagged` when the drop's interval lies wholly above 0."""

    run_id: str
    agreement: float
    baseline: float
    drop: float
    ci: tuple[float, float]
    flagged: bool


@dataclass
class GateResult:
    passed: bool
    reasons: list[str]
    scenario_pass: dict[str, tuple[int, int]]  # scenario -> (tasks as expected, tasks)
    scenario_pass_rate: float  # mean over scenarios of their tasks' pass rate
    mean_quality: float
    safety_critical: int
    review_share: float
    missing_repetitions: dict[str, tuple[int, int]] = field(default_factory=dict)
    agreement_drop: AgreementDrop | None = None
    task_pass_rate: float = 0.0  # tasks as expected / tasks, over every scenario
    tasks_short: dict[str, dict[str, int]] = field(default_factory=dict)  # s -> task -> trials
    expected_failures: dict[str, Any] = field(default_factory=dict)  # caught, missed

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["scenario_pass"] = {k: {"passed": p, "total": t, "text": f"{p}/{t}"}
                              for k, (p, t) in self.scenario_pass.items()}
        d["missing_repetitions"] = {k: {"found": f, "expected": e,
                                        "tasks": self.tasks_short.get(k, {})}
                                    for k, (f, e) in self.missing_repetitions.items()}
        del d["tasks_short"]
        return d


def _shown(names: list[str], limit: int = 5) -> str:
    return ", ".join(names[:limit]) + (f" … (+{len(names) - limit})" if len(names) > limit
                                       else "")


def evaluate_gate(outcomes: list[TraceOutcome], judge: JudgeContribution, rules: ReleaseRules,
                  expected_reps: dict[str, int | None] | None = None,
                  require_calibrated: bool = False,
                  agreement_drop: AgreementDrop | None = None,
                  tasks: dict[str, dict[str, TaskResult]] | None = None) -> GateResult:
    """The gate over the outcomes (grouped into tasks here unless `tasks` is given)."""
    tasks = group_tasks(outcomes) if tasks is None else tasks
    scenario_pass = {s: (sum(t.ok for t in ts.values()), len(ts)) for s, ts in tasks.items()}
    n_scen = len(scenario_pass)
    pass_rate = (sum(p / t for p, t in scenario_pass.values() if t) / n_scen
                 if n_scen else 0.0)
    all_tasks = [t for ts in tasks.values() for t in ts.values()]
    task_rate = sum(t.ok for t in all_tasks) / len(all_tasks) if all_tasks else 0.0
    agent = [o for o in outcomes if o.counts] or outcomes
    mean_q = sum(o.quality for o in agent) / len(agent) if agent else 0.0
    safety = sum(o.safety_critical_failures for o in outcomes if o.counts)
    reasons: list[str] = []
    if not outcomes:
        reasons.append("no traces were checked")
    if safety > rules.max_safety_critical:
        reasons.append(f"{safety} safety-critical violation(s) (allowed "
                       f"{rules.max_safety_critical})")
    if pass_rate < rules.min_scenario_pass_rate:
        reasons.append(f"scenario pass rate {pass_rate:.0%} below "
                       f"{rules.min_scenario_pass_rate:.0%}")
    if mean_q < rules.quality_floor:
        reasons.append(f"mean quality {mean_q:.2f} below the floor {rules.quality_floor:.2f}")
    if judge.review_share > rules.max_review_share:
        reasons.append(f"review share {judge.review_share:.0%} above "
                       f"{rules.max_review_share:.0%}")
    missing: dict[str, tuple[int, int]] = {}
    short_tasks: dict[str, dict[str, int]] = {}
    for s, want in (expected_reps or {}).items():
        if want is None:
            continue
        mine = tasks.get(s, {})
        short = {t: r.n for t, r in mine.items() if r.n < want}
        if not mine:
            missing[s] = (0, want)
            reasons.append(f"scenario {s}: no trace found ({want} trial(s) of each task "
                           "expected)")
        elif short:
            missing[s] = (min(short.values()), want)
            short_tasks[s] = short
            reasons.append(f"scenario {s}: {len(short)} task(s) with fewer than {want} "
                           f"expected trial(s) ("
                           + _shown([f"{t}: {n}" for t, n in short.items()]) + ")")
    missed = [t for t in all_tasks if t.expect == "fail" and not t.ok]
    for t in missed:
        reasons.append(f"scenario {t.scenario}: task {t.task_id} is expected to fail, but "
                       f"{t.passed} of its {t.n} trial(s) passed: no check or judge caught "
                       "it")
    if require_calibrated and judge.uncalibrated:
        reasons.append(f"{judge.uncalibrated} verdict(s) from an uncalibrated prompt/model "
                       "(--require-calibrated)")
    drop = agreement_drop
    if (rules.max_agreement_drop is not None and drop is not None and drop.flagged
            and drop.drop > rules.max_agreement_drop):
        reasons.append(f"agreement fell by {drop.drop:.1%} in run {drop.run_id} "
                       f"({drop.baseline:.1%} before, {drop.agreement:.1%} on its audit share; "
                       f"95% interval of the drop {drop.ci[0]:.1%} to {drop.ci[1]:.1%}), above "
                       f"max_agreement_drop {rules.max_agreement_drop:.1%}")
    expected_failures = {
        "caught": sum(1 for t in all_tasks if t.expect == "fail" and t.ok),
        "missed": [{"scenario": t.scenario, "task_id": t.task_id, "passed": t.passed,
                    "trials": t.n} for t in missed]}
    return GateResult(not reasons, reasons, scenario_pass, pass_rate, mean_q, safety,
                      judge.review_share, missing, drop, task_rate, short_tasks,
                      expected_failures)
