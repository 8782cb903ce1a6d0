"""Calibration metrics on plain arrays: ECE, Brier score, log loss, reliability and coverage curves.

`prob` is a predicted probability that the judge agrees with the human reference, `agreed` is
1 when it did and 0 when it did not. Bins follow scikit-learn's `calibration_curve` (uniform
edges, `searchsorted` on the inner edges) so the numbers match it exactly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

EPS = 1e-15

FloatArray = NDArray[np.float64]


def as_arrays(prob: ArrayLike, agreed: ArrayLike) -> tuple[FloatArray, FloatArray]:
    """Validate and convert: same length, prob in [0, 1], agreed in {0, 1}."""
    p = np.asarray(prob, dtype=np.float64).ravel()
    y = np.asarray(agreed, dtype=np.float64).ravel()
    if p.shape != y.shape:
        raise ValueError(f"prob and agreed differ in length: {p.size} != {y.size}")
    if p.size and (np.isnan(p).any() or p.min() < 0.0 or p.max() > 1.0):
        raise ValueError("prob must lie in [0, 1]")
    if y.size and not np.isin(y, (0.0, 1.0)).all():
        raise ValueError("agreed must be 0 or 1")
    return p, y


def brier_score(prob: ArrayLike, agreed: ArrayLike) -> float | None:
    """Mean squared difference between prob and outcome; None for no items."""
    p, y = as_arrays(prob, agreed)
    if p.size == 0:
        return None
    return float(np.mean((p - y) ** 2))


def log_loss(prob: ArrayLike, agreed: ArrayLike) -> float | None:
    """Mean negative log likelihood with prob clipped to [1e-15, 1 - 1e-15]; None for no items."""
    p, y = as_arrays(prob, agreed)
    if p.size == 0:
        return None
    p = np.clip(p, EPS, 1.0 - EPS)
    return float(-np.mean(y * np.log(p) + (1.0 - y) * np.log1p(-p)))


@dataclass(frozen=True)
class ReliabilityBin:
    lo: float
    hi: float
    count: int
    mean_prob: float
    frac_agreed: float


def _bin_ids(p: FloatArray, n_bins: int) -> tuple[FloatArray, NDArray[np.intp]]:
    if n_bins < 1:
        raise ValueError("n_bins must be at least 1")
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    return edges, np.searchsorted(edges[1:-1], p)


def reliability_curve(prob: ArrayLike, agreed: ArrayLike, n_bins: int = 10) -> list[ReliabilityBin]:
    """Non-empty uniform bins with their mean predicted prob and observed agreement rate."""
    p, y = as_arrays(prob, agreed)
    edges, ids = _bin_ids(p, n_bins)
    total = np.bincount(ids, minlength=n_bins)
    sums = np.bincount(ids, weights=p, minlength=n_bins)
    hits = np.bincount(ids, weights=y, minlength=n_bins)
    return [
        ReliabilityBin(
            lo=float(edges[b]),
            hi=float(edges[b + 1]),
            count=int(total[b]),
            mean_prob=float(sums[b] / total[b]),
            frac_agreed=float(hits[b] / total[b]),
        )
        for b in range(n_bins)
        if total[b] > 0
    ]


def expected_calibration_error(
    prob: ArrayLike, agreed: ArrayLike, n_bins: int = 10
) -> float | None:
    """Count-weighted mean |observed - predicted| over uniform bins; None for no items."""
    p, _ = as_arrays(prob, agreed)
    if p.size == 0:
        return None
    bins = reliability_curve(prob, agreed, n_bins)
    return float(sum(b.count * abs(b.frac_agreed - b.mean_prob) for b in bins) / p.size)


@dataclass(frozen=True)
class CoveragePoint:
    threshold: float
    coverage: float  # share of items auto-accepted (prob >= threshold)
    n_accepted: int
    agreement: float  # agreement rate among the auto-accepted


def coverage_curve(
    prob: ArrayLike, agreed: ArrayLike, max_points: int = 101
) -> list[CoveragePoint]:
    """For each distinct threshold t (thinned to about `max_points`), auto-accept prob >= t.

    Points run from the lowest threshold (everything accepted) to the highest.
    """
    p, y = as_arrays(prob, agreed)
    if p.size == 0:
        return []
    thresholds, n_acc, n_agree = accepted_counts(p, y)
    keep = np.arange(thresholds.size)
    if thresholds.size > max_points:
        keep = np.unique(np.linspace(0, thresholds.size - 1, max_points).round().astype(np.intp))
    return [
        CoveragePoint(
            threshold=float(thresholds[i]),
            coverage=float(n_acc[i] / p.size),
            n_accepted=int(n_acc[i]),
            agreement=float(n_agree[i] / n_acc[i]),
        )
        for i in keep
    ]


def accepted_counts(
    prob: FloatArray, agreed: FloatArray
) -> tuple[FloatArray, NDArray[np.int64], NDArray[np.int64]]:
    """Distinct thresholds ascending, with how many items have prob >= t and how many agree."""
    order = np.argsort(-prob, kind="stable")
    p_desc = prob[order]
    cum_agree = np.cumsum(agreed[order]).astype(np.int64)
    # last index of each distinct value in descending order = everything >= that value
    last = np.flatnonzero(np.r_[p_desc[1:] != p_desc[:-1], True])
    thresholds = p_desc[last][::-1]
    n_acc = (last + 1).astype(np.int64)[::-1]
    n_agree = cum_agree[last][::-1]
    return thresholds, n_acc, n_agree


def finite_or_none(value: float | None) -> float | None:
    """JSON never carries NaN or infinity: such values become None."""
    if value is None or not math.isfinite(value):
        return None
    return value
