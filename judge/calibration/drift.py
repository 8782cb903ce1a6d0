"""Agreement drift across a suite's runs (`judge report drift`, the gate's
`max_agreement_drop`): per run, from the store, the audit share's agreement with people and its
interval, the review share, the judge's observed pass rate and the corrected pass rate; each
run's agreement against the pooled earlier runs (judge.stats.drift).

The audit share is the random draw of would-be auto-accepted verdicts that routing sends to
people anyway (reason "audit"): the one unbiased look at what the judge decides alone. A run's
agreement counts its audit verdicts whose items have a pass or fail reference label (formats
§4), whenever the label was given — labels for last night's audit arrive today, and the
nightly suite often grades the same items again. The corrected pass rate uses every labelled
item of the run for TPR and TNR (the audit share alone is often too small for them); its
interval is the agreement bootstrap's (judge.stats.agreement).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from judge.labels.reference import reference_labels
from judge.routing import AUDIT
from judge.stats.agreement import compute_agreement
from judge.stats.drift import drift_points

if TYPE_CHECKING:
    from judge.formats import Verdict
    from judge.store import Store


@dataclass
class RunDrift:
    run_id: str
    started_at: str | None
    n_verdicts: int
    review_share: float | None
    pass_rate: float | None  # the judge's observed pass rate over scored verdicts
    audit_labelled: int
    audit_agreed: int
    agreement: float | None
    agreement_ci: list[float] | None
    baseline: float | None  # pooled agreement of the earlier runs in the window
    baseline_labelled: int
    drop: float | None
    drop_ci: list[float] | None
    flagged: bool
    n_labelled: int  # every labelled item of the run (for the corrected pass rate)
    corrected_pass_rate: float | None
    corrected_ci: list[float] | None
    note: str | None = None


@dataclass
class DriftReport:
    suite: str
    manifest: str | None
    window: int
    confidence: float
    runs: list[RunDrift]
    generated_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat(
        timespec="seconds"))

    @property
    def flagged(self) -> list[RunDrift]:
        return [r for r in self.runs if r.flagged]

    def latest(self) -> RunDrift | None:
        """The newest run with an agreement estimate (labelled audit items)."""
        return next((r for r in reversed(self.runs) if r.agreement is not None), None)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def _run_point(run: dict[str, Any], verdicts: list[Verdict], refs: Mapping[str, str],
               n_boot: int, seed: int) -> tuple[RunDrift, int, int]:
    scored = [v for v in verdicts if v.label != "unscored"]
    audit = [v for v in scored if v.route == "review" and v.route_reason == AUDIT
             and v.item_id in refs]
    agreed = sum(1 for v in audit if v.label == refs[v.item_id])
    labelled = [v for v in scored if v.item_id in refs]
    corrected = ci = None
    note = None
    if labelled and n_boot > 0:  # n_boot 0: leave the corrected pass rate out (the gate)
        out = compute_agreement([refs[v.item_id] for v in labelled],
                                [v.label for v in labelled],
                                judge_all=[v.label for v in scored], n_boot=n_boot, seed=seed)
        cpr = out["corrected_pass_rate"]
        if cpr is not None:
            corrected, ci = cpr["estimate"], cpr["ci"]
        else:
            note = f"corrected pass rate: {out['reasons'].get('corrected_pass_rate', 'n/a')}"
    elif scored and not labelled:
        note = "no labelled item in this run"
    started = run.get("started_at")
    point = RunDrift(
        run_id=run["run_id"], started_at=started.isoformat() if started else None,
        n_verdicts=len(verdicts),
        review_share=_share(sum(1 for v in verdicts if v.route == "review"), len(verdicts)),
        pass_rate=_share(sum(1 for v in scored if v.label == "pass"), len(scored)),
        audit_labelled=len(audit), audit_agreed=agreed, agreement=None, agreement_ci=None,
        baseline=None, baseline_labelled=0, drop=None, drop_ci=None, flagged=False,
        n_labelled=len(labelled), corrected_pass_rate=corrected, corrected_ci=ci, note=note)
    return point, agreed, len(audit)


def drift_from_store(store: Store, suite: str, *, manifest: str | Path | None = None,
                     include: tuple[str, ...] = (), window: int = 5,
                     confidence: float = 0.95, n_boot: int = 500,
                     seed: int = 0) -> DriftReport:
    """The suite's finished runs (and `include`d ones), oldest first, each with its figures
    and its agreement against the pooled `window` earlier runs. `manifest`: only runs
    started from that manifest file (two manifests may name a suite alike)."""
    runs = store.suite_run_history(suite, include=include)
    where = str(Path(manifest).resolve()) if manifest is not None else None
    if where is not None:
        runs = [r for r in runs if (r.get("config") or {}).get("manifest") == where]
    per_run = [store.run_verdicts(r["run_id"]) for r in runs]
    ids = {v.item_id for vs in per_run for v in vs}
    refs = {i: r.label for i, r in reference_labels(store.labels_for(sorted(ids))).labels.items()
            if r.label in ("pass", "fail")}
    points: list[RunDrift] = []
    ks: list[int] = []
    ns: list[int] = []
    for run, verdicts in zip(runs, per_run, strict=True):
        point, k, n = _run_point(run, verdicts, refs, n_boot, seed)
        points.append(point)
        ks.append(k)
        ns.append(n)
    for point, d in zip(points, drift_points(ks, ns, window=window, confidence=confidence),
                        strict=True):
        point.agreement = d.agreement
        point.agreement_ci = list(d.ci) if d.ci else None
        point.baseline = d.baseline
        point.baseline_labelled = d.baseline_n
        point.drop = d.drop
        point.drop_ci = list(d.drop_ci) if d.drop_ci else None
        point.flagged = d.flagged
    return DriftReport(suite=suite, manifest=where, window=window, confidence=confidence,
                       runs=points)
