"""Simulations with known truth for the label budget (judge.labels.plan): a judged population
whose every item's agreement with people is drawn from a known calibration curve, a labelled
start that looks like a review queue's (mostly the judge's least confident items, plus a
random audit share), then the plan's labels against labels drawn at random.

Used by tests/test_label_plan.py (small, seeded) and benchmarks/label_budget.py (bigger).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from judge.labels.plan import PlanInput, current_estimates, make_plan


@dataclass(frozen=True)
class World:
    """`p_agree[i]`: the true chance item i's verdict agrees with people (the calibration
    curve at its confidence); `agreed[i]`: the drawn truth, revealed when it is labelled."""

    item_ids: list[str]
    judge_fail: np.ndarray
    confidence: np.ndarray  # calibrated confidence: the curve's value, with estimation noise
    p_agree: np.ndarray
    agreed: np.ndarray
    threshold: float | None
    calibrated: bool = True  # False: `confidence` is the raw one, and there is no threshold

    def truth(self, mask: np.ndarray | None = None) -> float:
        """The population's realised agreement (within `mask`)."""
        a = self.agreed if mask is None else self.agreed[mask]
        return float(a.mean())


def make_world(rng: np.random.Generator, n: int = 2000, *, fail_share: float = 0.25,
               threshold: float | None = 0.9, noise: float = 0.02, bias: float = 0.0,
               calibrated: bool = True) -> World:
    """`bias`: how far the calibration overstates agreement (a stale calibration);
    `calibrated` False: the judge's raw confidence only, no threshold."""
    raw = rng.beta(5.0, 1.6, size=n)  # most verdicts confident, a tail of unsure ones
    p_agree = 0.5 + 0.49 * raw ** 3  # 0.5 at no confidence, 0.99 at full
    conf = np.clip(p_agree + bias + rng.normal(0.0, noise, size=n), 0.0, 1.0)
    return World(item_ids=[f"t{i}#1:sim" for i in range(n)],
                 judge_fail=rng.random(n) < fail_share,
                 confidence=conf if calibrated else raw, p_agree=p_agree,
                 agreed=rng.random(n) < p_agree,
                 threshold=threshold if calibrated else None, calibrated=calibrated)


def queue_start(world: World, rng: np.random.Generator, n_low: int = 30,
                n_audit: int = 10) -> np.ndarray:
    """Labels a review queue would have gathered: the least confident items and a random
    audit share of the rest."""
    labelled = np.zeros(world.confidence.size, dtype=bool)
    labelled[np.argsort(world.confidence)[:n_low]] = True
    rest = np.flatnonzero(~labelled)
    labelled[rng.choice(rest, size=n_audit, replace=False)] = True
    return labelled


def plan_input(world: World, labelled: np.ndarray) -> PlanInput:
    hf = np.where(world.agreed, world.judge_fail, ~world.judge_fail)
    return PlanInput(item_ids=world.item_ids, judge_fail=world.judge_fail,
                     confidence=world.confidence, labelled=labelled.copy(),
                     agreed=world.agreed & labelled, human_fail=hf & labelled,
                     excluded=np.zeros_like(labelled), calibrated=world.calibrated,
                     threshold=world.threshold, rubric="sim")


def widths(world: World, labelled: np.ndarray, confidence: float = 0.95, n_bins: int = 3
           ) -> dict[str, tuple[float, bool]]:
    """Each target's interval width from these labels, and whether it covers the truth."""
    out: dict[str, tuple[float, bool]] = {}
    above = None if world.threshold is None else world.confidence >= world.threshold
    for name, est in current_estimates(plan_input(world, labelled),
                                       confidence=confidence, n_bins=n_bins).items():
        truth = world.truth(above if name == "threshold" else None)
        covers = est.lo is not None and est.hi is not None and est.lo <= truth <= est.hi
        out[name] = (est.width, covers)
    return out


@dataclass(frozen=True)
class Trial:
    planned: int  # labels the plan asked for
    reached: bool  # after labelling them, every target's width <= W
    covered: dict[str, bool]  # each target's interval covers the population truth
    random_needed: int  # random labels (same start, same estimator) until every width <= W
    random_plain: int  # labels a simple random sample (no start) needs for plain Wilson
    #: intervals of both targets (every item, and the items at or above the threshold)
    start: int  # labels the start already held


def trial(seed: int, *, target_width: float = 0.1, n: int = 2000, step: int = 10,
          threshold: float | None = 0.9, n_bins: int = 3, caution: float = 0.8,
          bias: float = 0.0, calibrated: bool = True, replan_at: float | None = None
          ) -> Trial:
    """`replan_at` (e.g. 0.5): label that share of the plan, plan again from the labels
    then held, and label the second plan (the plan as it is meant to be used: re-run as
    labels arrive). `planned` counts both."""
    rng = np.random.default_rng(seed)
    world = make_world(rng, n, threshold=threshold, bias=bias, calibrated=calibrated)
    start = queue_start(world, rng)
    plan = make_plan(plan_input(world, start), target_width=target_width, seed=seed,
                     n_bins=n_bins, caution=caution)
    index = {iid: i for i, iid in enumerate(world.item_ids)}
    after = start.copy()
    items = [index[it.item_id] for it in plan.items]
    n_planned = len(items)
    if replan_at is not None:
        first = items[:round(replan_at * len(items))]
        after[first] = True
        again = make_plan(plan_input(world, after), target_width=target_width, seed=seed,
                          n_bins=n_bins, caution=caution)
        items = [index[it.item_id] for it in again.items]
        n_planned = len(first) + len(items)
    after[items] = True
    got = widths(world, after, n_bins=n_bins)
    reached = all(w <= target_width for w, _ in got.values())
    # random sampling from the same start, read with the same stratified estimator
    order = rng.permutation(np.flatnonzero(~start))
    labelled = start.copy()
    needed = len(order)
    for k in range(step, len(order) + step, step):
        labelled[order[:k]] = True
        if all(w <= target_width for w, _ in widths(world, labelled, n_bins=n_bins).values()):
            needed = min(k, len(order))
            break
    return Trial(planned=n_planned, reached=reached,
                 covered={k: c for k, (_, c) in got.items()}, random_needed=needed,
                 random_plain=plain_random(world, rng, target_width, step),
                 start=int(start.sum()))


def plain_random(world: World, rng: np.random.Generator, target_width: float,
                 step: int = 10) -> int:
    """Labels a simple random sample needs before the plain Wilson interval of agreement over
    every item, and over the items at or above the threshold, are both at most W wide."""
    order = rng.permutation(world.confidence.size)
    above = (np.zeros(order.size, dtype=bool) if world.threshold is None
             else world.confidence[order] >= world.threshold)
    agreed = world.agreed[order]
    for k in range(step, order.size + step, step):
        ok = _wilson_width(agreed[:k]) <= target_width
        if world.threshold is not None:
            ok = ok and _wilson_width(agreed[:k][above[:k]]) <= target_width
        if ok:
            return min(k, order.size)
    return int(order.size)


def _wilson_width(agreed: np.ndarray) -> float:
    from judge.stats.budget import wilson_width

    return wilson_width(float(agreed.mean()), int(agreed.size)) if agreed.size else 1.0
