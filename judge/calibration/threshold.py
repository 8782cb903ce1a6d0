"""Routing threshold: the lowest calibrated confidence whose auto-accepted verdicts agree with
humans at >= target by the lower end of a one-sided Clopper–Pearson bound on held-out folds.

Input is each item's held-out (out-of-fold) calibrated confidence and whether the judge agreed
with the human. Auto-accepting every item with confidence >= t, the accepted set has k
agreements out of m; t qualifies when the exact one-sided (1 - alpha) lower bound on the
agreement rate, Beta(alpha; k, m - k + 1), is at least the target. The lowest qualifying t
sends the fewest items to review.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from judge.calibration.metrics import accepted_counts, as_arrays


def clopper_pearson_lower(
    k: ArrayLike, n: ArrayLike, alpha: float = 0.05
) -> NDArray[np.float64]:
    """Exact one-sided (1 - alpha) lower confidence bound on a binomial rate; 0 when k = 0."""
    k_arr = np.asarray(k, dtype=np.float64)
    n_arr = np.asarray(n, dtype=np.float64)
    if np.any(n_arr <= 0) or np.any(k_arr < 0) or np.any(k_arr > n_arr):
        raise ValueError("need 0 <= k <= n and n >= 1")
    with np.errstate(invalid="ignore"):
        from scipy.stats import beta  # imported here: scipy.stats costs ~0.5 s to load

        lo = beta.ppf(alpha, k_arr, n_arr - k_arr + 1.0)
    return np.asarray(np.where(k_arr == 0, 0.0, lo), dtype=np.float64)


@dataclass(frozen=True)
class ThresholdChoice:
    threshold: float | None  # None: no threshold reaches the target, review everything
    target: float
    alpha: float
    review_share: float  # held-out share below the threshold (1.0 when threshold is None)
    n_accepted: int
    agreement: float | None  # held-out agreement among the auto-accepted
    lower_bound: float | None  # its one-sided lower bound


def choose_threshold(
    prob: ArrayLike, agreed: ArrayLike, *, target: float = 0.95, alpha: float = 0.05
) -> ThresholdChoice:
    """Lowest held-out calibrated confidence t with lower bound(agreement | prob >= t) >= target.

    Candidate thresholds are the distinct values of `prob`.
    """
    if not 0.0 < target < 1.0:
        raise ValueError("target must lie strictly between 0 and 1")
    if not 0.0 < alpha < 1.0:
        raise ValueError("alpha must lie strictly between 0 and 1")
    p, y = as_arrays(prob, agreed)
    none = ThresholdChoice(None, target, alpha, 1.0, 0, None, None)
    if p.size == 0:
        return none
    thresholds, n_acc, n_agree = accepted_counts(p, y)
    lower = clopper_pearson_lower(n_agree, n_acc, alpha)
    ok = np.flatnonzero(lower >= target)
    if ok.size == 0:
        return none
    i = int(ok[0])
    return ThresholdChoice(
        threshold=float(thresholds[i]),
        target=target,
        alpha=alpha,
        review_share=float(1.0 - n_acc[i] / p.size),
        n_accepted=int(n_acc[i]),
        agreement=float(n_agree[i] / n_acc[i]),
        lower_bound=float(lower[i]),
    )
