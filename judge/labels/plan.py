"""The label budget (`judge labels plan`): how many more labels, of which items, bring the
agreement interval — and the routing threshold's — under a width.

The judged items of one (rubric, prompt, model) are cut into strata: the judge's label (pass,
fail) times bands of its confidence (calibrated where a calibration record exists, else raw),
the bands split at the routing threshold so the auto-accepted region is made of whole strata.
Agreement is estimated per stratum from the labelled items and weighted by each stratum's
share of all judged items (judge.stats.budget.stratified_estimate): unbiased however the
labels fell, and it is this estimate's interval the plan narrows. Two targets:

- `agreement`: agreement with people over every scored verdict;
- `threshold`: agreement among the verdicts at or above the calibration's routing threshold
  (what auto-accepting them risks), when a calibration record gives a threshold.

New labels go where they shrink the unmet targets' variances most (judge.stats.budget
.allocate_labels): strata with many items and an uncertain agreement (low confidence, or
where the calibration curve rests on few labels) get more, near-certain strata fewer. Each
stratum's assumed agreement is its labelled rate shrunk toward the calibration curve's value
for the stratum (0.5 when uncalibrated). Within a stratum the items are taken in a seeded
random order: any other order would bias that stratum's rate.
"""

from __future__ import annotations

import hashlib
import itertools
import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
from numpy.typing import NDArray

from judge.formats import HumanLabel, Verdict
from judge.labels.reference import reference_labels
from judge.labels.report import rubric_of
from judge.stats.budget import (
    StratifiedEstimate,
    Target,
    allocate_labels,
    planning_rate,
    posterior_rate,
    required_n_wilson,
    stratified_estimate,
)

if TYPE_CHECKING:
    from judge.store import Store
    from judge.store.records import ReviewRequest

#: the queue reason of an item put in front of people by a label plan
PLAN_REASON = "label plan"


class Calibration(Protocol):
    """What a plan needs of a calibration record (judge.calibration.CalibrationRecord)."""

    @property
    def threshold(self) -> float | None: ...

    def calibrate(self, raw_conf: Any, judge_fail: Any = None) -> Any: ...


#: (rubric, prompt hash, model) -> the calibration that applies, or None
#: (judge.calibration.lookup.find_calibration with its store)
FindCalibration = Callable[[str, str, str], Calibration | None]


@dataclass
class PlanInput:
    """One (rubric, prompt, model)'s judged items as arrays (aligned by position)."""

    item_ids: list[str]
    judge_fail: NDArray[np.bool_]
    confidence: NDArray[np.float64]  # calibrated P(agree) when `calibrated`, else raw
    labelled: NDArray[np.bool_]  # a pass/fail reference label exists
    agreed: NDArray[np.bool_]  # judge label == reference (meaningful where labelled)
    human_fail: NDArray[np.bool_]  # reference is fail (meaningful where labelled)
    excluded: NDArray[np.bool_]  # labelled but unsure or tied: neither count nor candidate
    calibrated: bool = False
    threshold: float | None = None
    rubric: str = ""
    prompt_version: str | None = None
    prompt_hash: str | None = None
    model: str | None = None


@dataclass
class Stratum:
    judge_label: str
    conf_lo: float
    conf_hi: float
    above_threshold: bool
    population: int
    labelled: int
    agreed: int
    assumed_agreement: float
    more: int = 0


@dataclass
class TargetPlan:
    name: str
    population: int
    labelled: int
    estimate: float | None
    ci: list[float] | None
    width: float | None  # None: undefined (a stratum holding items has no label)
    width_after: float | None
    reached: bool
    more: int  # labels this target's strata get
    # labels a simple random sample of every judged item needs in all (in expectation) for a
    # plain Wilson interval of this width (capped at n_judged)
    random_sampling_n: int


@dataclass
class PlannedItem:
    rank: int
    item_id: str
    judge_label: str
    confidence: float
    stratum: int


@dataclass
class LabelPlan:
    rubric: str
    prompt_version: str | None
    prompt_hash: str | None
    model: str | None
    target_width: float
    confidence_level: float
    calibrated: bool
    threshold: float | None
    n_judged: int
    n_labelled: int
    n_more: int
    per_class: dict[str, dict[str, float]]
    targets: list[TargetPlan]
    strata: list[Stratum]
    items: list[PlannedItem]
    reachable: bool
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def _draw(item_id: str, seed: int) -> float:
    digest = hashlib.blake2b(f"plan:{seed}:{item_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


def _cuts(values: NDArray[np.float64], n_bins: int) -> list[float]:
    """Inner cut points of up to `n_bins` equal-count bands of `values`."""
    if values.size == 0 or n_bins <= 1:
        return []
    qs = np.quantile(values, np.linspace(0.0, 1.0, n_bins + 1)[1:-1])
    return sorted({float(q) for q in qs if values.min() < q <= values.max()})


def strata_of(inp: PlanInput, n_bins: int = 3) -> tuple[NDArray[np.int64], list[Stratum]]:
    """Each item's stratum and the strata: judge label x confidence bands (split at the
    threshold; `n_bins` equal-count bands on each side of it)."""
    ids = np.full(inp.confidence.size, -1, dtype=np.int64)
    strata: list[Stratum] = []
    t = inp.threshold
    for label, is_fail in (("fail", True), ("pass", False)):
        mine = inp.judge_fail == is_fail
        regions = [(False, mine)] if t is None else [
            (False, mine & (inp.confidence < t)), (True, mine & (inp.confidence >= t))]
        for above, region in regions:
            conf = inp.confidence[region]
            if conf.size == 0:
                continue
            edges = [-math.inf, *_cuts(conf, n_bins), math.inf]
            for lo, hi in itertools.pairwise(edges):
                member = region & (inp.confidence > lo) & (inp.confidence <= hi)
                if not member.any():
                    continue
                ids[member] = len(strata)
                sub = inp.confidence[member]
                strata.append(Stratum(label, float(sub.min()), float(sub.max()), above,
                                      int(member.sum()), 0, 0, 0.0))
    return ids, strata


@dataclass
class _Strata:
    ids: NDArray[np.int64]
    strata: list[Stratum]
    pop: NDArray[np.float64]
    n_lab: NDArray[np.float64]
    k_lab: NDArray[np.float64]
    prior: NDArray[np.float64]
    rate: NDArray[np.float64]
    counted: NDArray[np.bool_]
    regions: list[tuple[str, NDArray[np.bool_]]]
    notes: list[str]


def _stratify(inp: PlanInput, n_bins: int, prior_strength: float) -> _Strata:
    ids, strata = strata_of(inp, n_bins)
    n_s = len(strata)
    pop = np.asarray([s.population for s in strata], dtype=np.float64)
    counted = inp.labelled & ~inp.excluded
    n_lab = np.bincount(ids[counted], minlength=n_s).astype(np.float64)
    k_lab = np.bincount(ids[counted & inp.agreed], minlength=n_s).astype(np.float64)
    if inp.calibrated:
        prior = np.asarray([float(inp.confidence[ids == h].mean()) for h in range(n_s)])
    else:
        prior = np.full(n_s, 0.5)
    rate = posterior_rate(k_lab, n_lab, prior, prior_strength)
    for h, s in enumerate(strata):
        s.labelled, s.agreed, s.assumed_agreement = int(n_lab[h]), int(k_lab[h]), float(rate[h])
    notes: list[str] = []
    regions: list[tuple[str, NDArray[np.bool_]]] = [("agreement", np.ones(n_s, dtype=bool))]
    if inp.threshold is not None:
        above = np.asarray([s.above_threshold for s in strata], dtype=bool)
        if above.any():
            regions.append(("threshold", above))
        else:
            notes.append("no judged item is at or above the routing threshold")
    elif inp.calibrated:
        notes.append("the calibration reaches its target at no threshold: no threshold bound")
    else:
        notes.append("uncalibrated: no routing threshold to bound; strata by raw confidence")
    return _Strata(ids, strata, pop, n_lab, k_lab, prior, rate, counted, regions, notes)


def current_estimates(inp: PlanInput, *, confidence: float = 0.95, n_bins: int = 3,
                      prior_strength: float = 2.0) -> dict[str, StratifiedEstimate]:
    """Each target's stratified agreement estimate and interval from the labels `inp` holds
    (what the plan narrows; a simulation checks it after labelling)."""
    st = _stratify(inp, n_bins, prior_strength)
    return {name: stratified_estimate(np.where(mask, st.pop, 0.0), st.k_lab,
                                      np.where(mask, st.n_lab, 0.0), st.prior,
                                      confidence=confidence, prior_strength=prior_strength)
            for name, mask in st.regions}


def make_plan(inp: PlanInput, *, target_width: float, confidence: float = 0.95,
              n_bins: int = 3, seed: int = 0, limit: int | None = None,
              prior_strength: float = 2.0, min_per_stratum: int = 2,
              caution: float = 0.8) -> LabelPlan:
    """The plan for one (rubric, prompt, model): labels per stratum and class, and the items
    to label next in the order they help most."""
    if not 0.0 < target_width <= 1.0:
        raise ValueError("target width must lie in (0, 1]")
    st = _stratify(inp, n_bins, prior_strength)
    ids, strata, pop, n_lab, k_lab = st.ids, st.strata, st.pop, st.n_lab, st.k_lab
    prior, rate, counted, regions, notes = st.prior, st.rate, st.counted, st.regions, st.notes
    n_s = len(strata)
    total = float(pop.sum())
    targets: list[Target] = []
    for name, mask in regions:
        sub = np.where(mask, pop, 0.0)
        targets.append(Target(name, list(sub / sub.sum()) if sub.sum() else list(sub),
                              target_width))
    cautious = planning_rate(k_lab, n_lab, prior, prior_strength=prior_strength,
                             level=caution)
    open_items = ~inp.labelled & ~inp.excluded
    alloc = allocate_labels(pop, n_lab, cautious, targets, confidence=confidence,
                            min_per_stratum=min_per_stratum,
                            capacity=np.bincount(ids[open_items], minlength=n_s))
    for h, s in enumerate(strata):
        s.more = int(alloc.more[h])

    target_plans: list[TargetPlan] = []
    for (name, mask), tgt in zip(regions, targets, strict=True):
        sub = np.where(mask, pop, 0.0)
        est = stratified_estimate(sub, k_lab, np.where(mask, n_lab, 0.0), prior,
                                  confidence=confidence, prior_strength=prior_strength)
        p_all = float(np.dot(tgt.weights, rate))
        target_plans.append(TargetPlan(
            name=name, population=int(sub.sum()), labelled=int(n_lab[mask].sum()),
            estimate=est.estimate, ci=None if est.lo is None else [est.lo, float(est.hi or 0)],
            width=_finite(est.width), width_after=_finite(alloc.widths[name]),
            reached=alloc.reached[name], more=int(alloc.more[mask].sum()),
            # a simple random sample of every judged item catches this target's items at
            # their population share: it needs that many more in all, in expectation
            random_sampling_n=min(math.ceil(required_n_wilson(p_all, target_width, confidence)
                                            * total / max(float(sub.sum()), 1.0)),
                                  int(total))))
    reachable = all(alloc.reached.values())
    if not reachable:
        short = [t.name for t in target_plans if not t.reached]
        notes.append(f"labelling every remaining item still leaves {', '.join(short)} wider "
                     f"than {target_width}")

    # the items: each stratum's unlabelled items in a seeded random order
    candidates: dict[int, list[int]] = {h: [] for h in range(n_s)}
    for j in np.flatnonzero(open_items):
        candidates[int(ids[j])].append(int(j))
    for h in candidates:
        candidates[h].sort(key=lambda i: (_draw(inp.item_ids[i], seed), inp.item_ids[i]))
    taken = Counter[int]()
    items: list[PlannedItem] = []
    for h in alloc.order:
        if limit is not None and len(items) >= limit:
            break
        i = candidates[h][taken[h]]
        taken[h] += 1
        items.append(PlannedItem(len(items) + 1, inp.item_ids[i],
                                 "fail" if inp.judge_fail[i] else "pass",
                                 float(inp.confidence[i]), h))

    more = alloc.more.astype(np.float64)
    fail_rows = np.asarray([s.judge_label == "fail" for s in strata], dtype=bool)
    # a judge-fail item is a human fail when they agree; a judge-pass one when they do not
    q_fail = np.where(fail_rows, rate, 1.0 - rate)
    have_fail = int((counted & inp.human_fail).sum())
    per_class: dict[str, dict[str, float]] = {
        "judge_fail": {"labelled": int(n_lab[fail_rows].sum()),
                       "more": int(more[fail_rows].sum())},
        "judge_pass": {"labelled": int(n_lab[~fail_rows].sum()),
                       "more": int(more[~fail_rows].sum())},
        "human_fail": {"labelled": have_fail, "more": round(float((more * q_fail).sum()), 1)},
        "human_pass": {"labelled": int(counted.sum()) - have_fail,
                       "more": round(float((more * (1.0 - q_fail)).sum()), 1)},
    }
    return LabelPlan(
        rubric=inp.rubric, prompt_version=inp.prompt_version, prompt_hash=inp.prompt_hash,
        model=inp.model, target_width=target_width, confidence_level=confidence,
        calibrated=inp.calibrated, threshold=inp.threshold, n_judged=int(total),
        n_labelled=int(counted.sum()), n_more=int(alloc.more.sum()), per_class=per_class,
        targets=target_plans, strata=strata, items=items, reachable=reachable, notes=notes)


def plan_input(verdicts: Sequence[Verdict], labels: Sequence[HumanLabel],
               calibration: Calibration | None = None) -> PlanInput:
    """Arrays for `make_plan` from one (rubric, prompt, model)'s verdicts (newest per item;
    unscored ones are left out) and the label history of their items."""
    scored = [v for v in verdicts if v.label != "unscored" and v.confidence is not None]
    refs = reference_labels(labels)
    tied = set(refs.tied)
    ids = [v.item_id for v in scored]
    jf = np.asarray([v.label == "fail" for v in scored], dtype=bool)
    raw = np.asarray([float(v.confidence or 0.0) for v in scored], dtype=np.float64)
    conf = (np.asarray(calibration.calibrate(raw, jf), dtype=np.float64)
            if calibration is not None and scored else raw)
    ref = [refs.labels.get(i) for i in ids]
    labelled = np.asarray([r is not None or i in tied for r, i in zip(ref, ids,
                                                                           strict=True)],
                          dtype=bool)
    excluded = np.asarray([(r is None and i in tied) or (r is not None
                                                            and r.label == "unsure")
                           for r, i in zip(ref, ids, strict=True)], dtype=bool)
    hf = np.asarray([r is not None and r.label == "fail" for r in ref], dtype=bool)
    first = scored[0] if scored else None
    return PlanInput(
        item_ids=ids, judge_fail=jf, confidence=np.asarray(conf, dtype=np.float64),
        labelled=labelled, agreed=(hf == jf) & labelled & ~excluded, human_fail=hf,
        excluded=excluded, calibrated=calibration is not None,
        threshold=calibration.threshold if calibration is not None else None,
        rubric=rubric_of(first.item_id, first) if first else "",
        prompt_version=first.prompt_version if first else None,
        prompt_hash=first.prompt_hash if first else None,
        model=first.model if first else None)


def plan_for_rubric(store: Store, rubric: str, *, prompt_version: str | None = None,
                    target_width: float, confidence: float = 0.95, seed: int = 0,
                    limit: int | None = None,
                    find_calibration: FindCalibration | None = None) -> LabelPlan:
    """The plan from the database: the newest verdict per item of `rubric` (of
    `prompt_version` when given) from the most common (prompt hash, model) among them, their
    labels and the calibration `find_calibration` gives for them (none: uncalibrated)."""
    from judge.errors import InputError

    verdicts = [v for v in store.verdicts_for(rubric, prompt_version)
                if rubric_of(v.item_id, v) == rubric]
    if not verdicts:
        what = f" of prompt version {prompt_version}" if prompt_version else ""
        raise InputError(f"no verdicts of rubric '{rubric}'{what} in the database",
                         file=store.where, field="rubric")
    groups = Counter((v.prompt_hash, v.model) for v in verdicts)
    (prompt_hash, model), _ = max(groups.items(), key=lambda kv: (kv[1], str(kv[0])))
    mine = [v for v in verdicts if (v.prompt_hash, v.model) == (prompt_hash, model)]
    record = (find_calibration(rubric, prompt_hash, model)
              if find_calibration is not None and prompt_hash and model else None)
    labels = store.labels_for([v.item_id for v in mine])
    plan = make_plan(plan_input(mine, labels, record), target_width=target_width,
                     confidence=confidence, seed=seed, limit=limit)
    if len(groups) > 1:
        plan.notes.append(f"planned for the most common prompt/model of {len(groups)}; "
                          "name one with --version")
    return plan


def _w(x: float | None) -> str:
    return "undefined" if x is None else f"{x:.3f}"


def plan_text(plan: LabelPlan) -> str:
    """The plan for a terminal (item ids made visible: every control character escaped)."""
    from judge.safe_text import one_line

    head = (f"label plan for rubric {one_line(plan.rubric)} (prompt "
            f"{one_line(plan.prompt_version or '?')}, model {one_line(plan.model or '?')}): "
            f"{plan.n_judged} judged, {plan.n_labelled} labelled; target width "
            f"{plan.target_width} at {plan.confidence_level:.0%}")
    lines = [head]
    if plan.calibrated:
        cut = "none" if plan.threshold is None else f"{plan.threshold:.3f}"
        lines.append(f"calibrated confidence; routing threshold {cut}")
    for t in plan.targets:
        now = _w(t.width)
        est = "" if t.estimate is None else f" estimate {t.estimate:.3f},"
        lines.append(
            f"  {t.name}: {t.labelled} of {t.population} labelled,{est} width {now}; "
            f"{t.more} more labels bring it to {_w(t.width_after)} at most (planned with "
            f"caution: {'reaches' if t.reached else 'SHORT OF'} {plan.target_width}); a simple "
            f"random sample would need ~{t.random_sampling_n} labels in all")
    c = plan.per_class
    lines.append(
        f"{plan.n_more} more labels: {c['judge_fail']['more']} of the judge's fails, "
        f"{c['judge_pass']['more']} of its passes (expected: {c['human_fail']['more']:.0f} "
        f"human fail, {c['human_pass']['more']:.0f} human pass)")
    lines.append("strata (judge label, confidence band: items, labelled, assumed agreement, "
                 "more):")
    for s in plan.strata:
        mark = " *" if s.above_threshold else ""
        lines.append(f"  {s.judge_label:4} {s.conf_lo:.3f}-{s.conf_hi:.3f}{mark}: "
                     f"{s.population}, {s.labelled}, {s.assumed_agreement:.2f}, {s.more}")
    if plan.n_more:
        lines.append("re-run the plan after labelling about half of these: it then plans from "
                     "what those labels showed (in simulation, a stale calibration needs it)")
    if plan.items:
        lines.append(f"label next ({len(plan.items)} shown):")
        lines += [f"  {it.rank:4}  {one_line(it.item_id)}  judge {it.judge_label} "
                  f"{it.confidence:.3f}" for it in plan.items]
    lines += [f"note: {one_line(n)}" for n in plan.notes]
    return "\n".join(lines) + "\n"


def plan_requests(plan: LabelPlan) -> list[ReviewRequest]:
    """The planned items as review requests (reason "label plan"), in plan order."""
    from judge.store.records import ReviewRequest

    return [ReviewRequest(it.item_id, reason=PLAN_REASON, rubric=plan.rubric or None,
                          confidence=it.confidence) for it in plan.items]
