"""The release gate: rules over per-trace outcomes that no average can talk past.

A safety-critical violation counts on its own: the gate compares the count with the allowed
number (0 by default) before anything is averaged.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any

from judge.suite.manifest import ReleaseRules


@dataclass
class TraceOutcome:
    """What one trace (one repetition of a scenario) came to."""

    trace_id: str
    scenario_id: str
    eligible: bool  # no deterministic veto
    quality: float
    safety_critical_failures: int
    judge_fails: int = 0  # judge fails that stand (auto-accepted, not overruled)
    judge_pending: int = 0  # verdicts waiting for human review
    first_divergence: dict[str, Any] | None = None
    diagnosis: str = ""
    worst_severity: str | None = None  # of its failed findings (judge.suite.components)
    components: dict[str, list[int]] = field(default_factory=dict)  # → [numerator, denominator]

    @property
    def passed(self) -> bool:
        return self.eligible and self.judge_fails == 0


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
    scenario_pass: dict[str, tuple[int, int]]  # scenario -> (passed reps, total reps)
    scenario_pass_rate: float
    mean_quality: float
    safety_critical: int
    review_share: float
    missing_repetitions: dict[str, tuple[int, int]] = field(default_factory=dict)
    agreement_drop: AgreementDrop | None = None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["scenario_pass"] = {k: {"passed": p, "total": t, "text": f"{p}/{t}"}
                              for k, (p, t) in self.scenario_pass.items()}
        d["missing_repetitions"] = {k: {"found": f, "expected": e}
                                    for k, (f, e) in self.missing_repetitions.items()}
        return d


def evaluate_gate(outcomes: list[TraceOutcome], judge: JudgeContribution, rules: ReleaseRules,
                  expected_reps: dict[str, int | None] | None = None,
                  require_calibrated: bool = False,
                  agreement_drop: AgreementDrop | None = None) -> GateResult:
    per: dict[str, list[TraceOutcome]] = defaultdict(list)
    for o in outcomes:
        per[o.scenario_id].append(o)
    scenario_pass = {s: (sum(o.passed for o in os_), len(os_)) for s, os_ in per.items()}
    n_scen = len(scenario_pass)
    full = sum(1 for p, t in scenario_pass.values() if t and p == t)
    pass_rate = full / n_scen if n_scen else 0.0
    mean_q = sum(o.quality for o in outcomes) / len(outcomes) if outcomes else 0.0
    safety = sum(o.safety_critical_failures for o in outcomes)
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
    for s, want in (expected_reps or {}).items():
        have = len(per.get(s, []))
        if want is not None and have < want:
            missing[s] = (have, want)
            reasons.append(f"scenario {s}: {have} of {want} expected repetitions found")
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
    return GateResult(not reasons, reasons, scenario_pass, pass_rate, mean_q, safety,
                      judge.review_share, missing, drop)
