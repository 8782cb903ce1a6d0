"""How many labels an interval needs, and where to put them: plain arrays in, numbers out.

Two building blocks for `judge labels plan` (judge.labels.plan):

- `wilson_interval` / `required_n_wilson`: the Wilson score interval of a binomial rate and
  the smallest n whose interval, at a given rate, is no wider than W (what simple random
  sampling needs).
- `stratified_estimate` / `allocate_labels`: a rate over a population cut into strata (the
  judge's label x its confidence band), estimated as the population-weighted mean of each
  stratum's labelled rate; its normal interval; and a greedy allocation of new labels to
  strata that brings one or more such intervals under a width with the fewest labels.

Why stratify: an item's chance of agreeing with people depends strongly on the judge's
confidence (near 1 at the top, near 0.5 at the bottom). Sampling the uncertain strata more and
the near-certain ones less (Neyman allocation) gives the same interval width for fewer labels
than sampling at random, and weighting by population share keeps the estimate unbiased however
unevenly the labels fall (the review queue, for instance, sees mostly low-confidence items).

Each stratum's rate is a posterior mean with a Beta prior of `prior_strength` pseudo-items at
`prior_mean` (the calibration curve's value for the stratum where one exists, else 0.5); a
stratum with no label has no variance estimate, so an interval needs every non-empty stratum
labelled (`min_per_stratum`). Within a stratum the items to label must be drawn at random
(the caller does it): that is what makes the stratum's rate unbiased.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

FloatArray = NDArray[np.float64]


def z_value(confidence: float) -> float:
    """The two-sided standard-normal quantile of a confidence level (1.96 at 0.95)."""
    if not 0.0 < confidence < 1.0:
        raise ValueError("confidence must lie strictly between 0 and 1")
    from statistics import NormalDist

    return float(NormalDist().inv_cdf(0.5 + confidence / 2.0))


def wilson_interval(k: ArrayLike, n: ArrayLike, confidence: float = 0.95
                    ) -> tuple[FloatArray, FloatArray]:
    """Wilson score interval of k successes in n trials, elementwise; (nan, nan) where n = 0."""
    z = z_value(confidence)
    k_ = np.asarray(k, dtype=np.float64)
    n_ = np.asarray(n, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = k_ / n_
        den = 1.0 + z * z / n_
        centre = (p + z * z / (2.0 * n_)) / den
        half = z * np.sqrt(p * (1.0 - p) / n_ + z * z / (4.0 * n_ * n_)) / den
    # exact ends where the formula's are 0 and 1 up to rounding (k = 0, k = n)
    lo = np.where(n_ > 0, np.where(k_ <= 0, 0.0, np.clip(centre - half, 0.0, 1.0)), np.nan)
    hi = np.where(n_ > 0, np.where(k_ >= n_, 1.0, np.clip(centre + half, 0.0, 1.0)), np.nan)
    return np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)


def wilson_width(p: float, n: int, confidence: float = 0.95) -> float:
    """Width of the Wilson interval when n items show the rate p."""
    if n <= 0:
        return math.inf
    lo, hi = wilson_interval(p * n, n, confidence)
    return float(hi - lo)


def required_n_wilson(p: float, width: float, confidence: float = 0.95,
                      n_max: int = 10_000_000) -> int:
    """Smallest n whose Wilson interval at rate p is at most `width` wide (the width shrinks
    as n grows, so a bisection finds it). `n_max` if even that is too few."""
    if not 0.0 < width <= 1.0:
        raise ValueError("width must lie in (0, 1]")
    if not 0.0 <= p <= 1.0:
        raise ValueError("p must lie in [0, 1]")
    lo, hi = 1, n_max
    if wilson_width(p, hi, confidence) > width:
        return n_max
    while lo < hi:
        mid = (lo + hi) // 2
        if wilson_width(p, mid, confidence) <= width:
            hi = mid
        else:
            lo = mid + 1
    return lo


def posterior_rate(k: ArrayLike, n: ArrayLike, prior_mean: ArrayLike,
                   prior_strength: float = 2.0) -> FloatArray:
    """(k + a m) / (n + a): each stratum's rate shrunk toward its prior mean m by a pseudo-items."""
    k_ = np.asarray(k, dtype=np.float64)
    n_ = np.asarray(n, dtype=np.float64)
    m = np.asarray(prior_mean, dtype=np.float64)
    return np.asarray((k_ + prior_strength * m) / (n_ + prior_strength), dtype=np.float64)


def planning_rate(k: ArrayLike, n: ArrayLike, prior_mean: ArrayLike, *,
                  prior_strength: float = 2.0, level: float = 0.8) -> FloatArray:
    """A cautious rate to plan with: of the central `level` credible interval of each
    stratum's Beta posterior, the end nearest 0.5 (0.5 itself when the interval holds it).

    p(1 - p) is largest at 0.5, so planning with this rate assumes the most variance the
    labels so far cannot rule out: a stratum whose two labels both agreed is not taken to be
    near-certain. `level` 0 plans with the posterior mean."""
    mean = posterior_rate(k, n, prior_mean, prior_strength)
    if level <= 0.0:
        return mean
    # the Beta quantile function itself: scipy.special loads in a fraction of the time
    # scipy.stats takes (seconds on a loaded machine)
    from scipy.special import betaincinv

    k_ = np.asarray(k, dtype=np.float64)
    n_ = np.asarray(n, dtype=np.float64)
    m = np.clip(np.asarray(prior_mean, dtype=np.float64), 1e-6, 1.0 - 1e-6)
    a = k_ + prior_strength * m
    b = n_ - k_ + prior_strength * (1.0 - m)
    lo = betaincinv(a, b, (1.0 - level) / 2.0)
    hi = betaincinv(a, b, (1.0 + level) / 2.0)
    return np.asarray(np.where(lo > 0.5, lo, np.where(hi < 0.5, hi, 0.5)), dtype=np.float64)


def _stratum_variance(weights: FloatArray, rate: FloatArray, n: FloatArray,
                      population: FloatArray) -> FloatArray:
    """Each stratum's share of the variance of the weighted mean (with the finite-population
    correction: a fully labelled stratum adds none); inf where an item-holding stratum has no
    label."""
    with np.errstate(divide="ignore", invalid="ignore"):
        fpc = np.where(population > 0, np.clip(1.0 - n / np.maximum(population, 1.0), 0.0, 1.0),
                       0.0)
        term = weights * weights * rate * (1.0 - rate) * fpc / n
    term = np.where(weights > 0, np.where(n > 0, term, np.inf), 0.0)
    return np.asarray(term, dtype=np.float64)


@dataclass(frozen=True)
class StratifiedEstimate:
    estimate: float | None  # None: a stratum that holds items has no label yet
    lo: float | None
    hi: float | None
    width: float  # 2 z se, before clipping to [0, 1]; inf when undefined
    se: float


def stratified_estimate(population: ArrayLike, k: ArrayLike, n: ArrayLike,
                        prior_mean: ArrayLike, *, confidence: float = 0.95,
                        prior_strength: float = 2.0) -> StratifiedEstimate:
    """Population-weighted rate over strata: stratum h holds population[h] items, n[h] of them
    labelled with k[h] successes. Normal interval estimate +- z se (clipped to [0, 1])."""
    pop = np.asarray(population, dtype=np.float64)
    n_ = np.asarray(n, dtype=np.float64)
    total = float(pop.sum())
    if total <= 0:
        return StratifiedEstimate(None, None, None, math.inf, math.inf)
    w = pop / total
    rate = posterior_rate(k, n_, prior_mean, prior_strength)
    var = float(_stratum_variance(w, rate, n_, pop).sum())
    if not math.isfinite(var):
        return StratifiedEstimate(None, None, None, math.inf, math.inf)
    est = float((w * rate).sum())
    se = math.sqrt(var)
    z = z_value(confidence)
    return StratifiedEstimate(est, max(0.0, est - z * se), min(1.0, est + z * se),
                              2.0 * z * se, se)


@dataclass(frozen=True)
class Target:
    """One interval to narrow: a weight per stratum (population shares of the strata it
    covers, summing to 1; 0 elsewhere) and the widest interval allowed."""

    name: str
    weights: Sequence[float]
    width: float


@dataclass(frozen=True)
class Allocation:
    more: NDArray[np.int64]  # new labels per stratum
    order: list[int]  # the stratum of each new label, in the order they were allocated
    widths: dict[str, float]  # each target's expected width after the new labels
    reached: dict[str, bool]


def allocate_labels(population: ArrayLike, n: ArrayLike, rate: ArrayLike,
                    targets: Sequence[Target], *, confidence: float = 0.95,
                    min_per_stratum: int = 2, budget: int | None = None,
                    capacity: ArrayLike | None = None) -> Allocation:
    """New labels per stratum so every target's interval is at most its width wide.

    `rate` is each stratum's assumed rate (its variance p(1-p) is what matters);
    `capacity` how many more items each stratum can give (default population - n).
    First every stratum holding items gets `min_per_stratum` labels (an interval needs a
    variance estimate for each); then one label at a time goes where it shrinks the
    still-unmet targets' variances most (relative to each one's allowed variance), until all
    are met, the strata run out of unlabelled items, or `budget` labels are spent. The
    variance is separable and convex in each stratum's count, so the greedy choice is the
    optimal allocation for one target (Neyman's, with integer counts and capacities).
    """
    pop = np.asarray(population, dtype=np.float64)
    have = np.asarray(n, dtype=np.float64)
    p = np.clip(np.asarray(rate, dtype=np.float64), 0.0, 1.0)
    if not (pop.shape == have.shape == p.shape):
        raise ValueError("population, n and rate must have the same length")
    z = z_value(confidence)
    w = np.asarray([np.asarray(t.weights, dtype=np.float64) for t in targets])
    if w.size and w.shape[1] != pop.size:
        raise ValueError("a target's weights differ in length from the strata")
    allowed = np.asarray([(t.width / (2.0 * z)) ** 2 for t in targets], dtype=np.float64)
    room = np.maximum(pop - have, 0.0)
    cap = room if capacity is None else np.minimum(np.asarray(capacity, dtype=np.float64), room)
    more = np.zeros(pop.size, dtype=np.int64)
    order: list[int] = []
    spent = 0
    limit = budget if budget is not None else int(cap.sum())

    def variances(counts: FloatArray) -> FloatArray:
        return np.asarray([_stratum_variance(wt, p, counts, pop).sum() for wt in w],
                          dtype=np.float64)

    for h in np.argsort(-pop, kind="stable"):
        covered = bool(w.size) and bool((w[:, h] > 0).any())
        need = max(0, min_per_stratum - int(have[h]))
        while need > 0 and cap[h] > more[h] and covered and spent < limit:
            more[h] += 1
            order.append(int(h))
            spent += 1
            need -= 1

    def gain(h: int, counts: FloatArray, unmet: NDArray[np.bool_]) -> float:
        if counts[h] >= pop[h] or more[h] >= cap[h]:
            return 0.0
        now = w[:, h] ** 2 * p[h] * (1 - p[h]) * (1 - counts[h] / pop[h]) / max(counts[h], 1.0)
        nxt = w[:, h] ** 2 * p[h] * (1 - p[h]) * (1 - (counts[h] + 1) / pop[h]) / (counts[h] + 1)
        return float(((now - nxt) / allowed * unmet).sum())

    counts = have + more
    var = variances(counts)
    unmet = var > allowed
    # Each entry's gain is exact: a stratum's gain changes only when it gets a label (it is
    # pushed back with its new gain) or when a target is met (the heap is rebuilt).
    heap: list[tuple[float, int]] = [(-gain(h, counts, unmet), h) for h in range(pop.size)]
    heapq.heapify(heap)
    while unmet.any() and spent < limit and heap:
        neg, h = heapq.heappop(heap)
        if -neg <= 0.0:  # the best stratum gains nothing: nothing left worth labelling
            break
        more[h] += 1
        counts[h] += 1
        order.append(h)
        spent += 1
        var = variances(counts)
        new_unmet = var > allowed
        if (new_unmet != unmet).any():  # a target was met: every gain changes
            unmet = new_unmet
            heap = [(-gain(i, counts, unmet), i) for i in range(pop.size)]
            heapq.heapify(heap)
        else:
            heapq.heappush(heap, (-gain(h, counts, unmet), h))
    widths = {t.name: float(2.0 * z * math.sqrt(v)) if math.isfinite(v) else math.inf
              for t, v in zip(targets, var, strict=True)}
    reached = {t.name: bool(widths[t.name] <= t.width) for t in targets}
    return Allocation(more=more, order=order, widths=widths, reached=reached)
