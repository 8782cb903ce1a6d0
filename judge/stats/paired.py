"""Two versions on the same tasks: the change in pass rate, a paired test and an interval.

Plain numbers and arrays in, numbers out (`judge compare` pairs the tasks).

- **One trial per task** (`mcnemar_exact`, `newcombe_paired_interval`): each task passed or
  failed under each version, so the tasks form a paired 2x2 table — `a` passed under both,
  `b` passed under the baseline only (broken), `c` under the candidate only (fixed), `d`
  under neither. The change in pass rate is (c − b) / n. Only the discordant tasks carry
  evidence of a change: under "no change" each of the b + c is equally likely to be a fix
  or a break, so the exact McNemar test is the two-sided binomial test of c among b + c at
  1/2 (scipy's `binomtest`; statsmodels' `mcnemar(exact=True)` gives the same). The interval
  is Newcombe's hybrid score interval for a paired difference (Newcombe 1998, Stat Med
  17:2635, method 10): the two marginal Wilson intervals combined with the observed
  correlation of the pairs — it keeps its coverage at the small counts a task list gives,
  where the Wald interval does not (tests/test_stats_paired.py checks both against
  references and by simulation).
- **Several trials per task** (`paired_bootstrap`): each task's pass share (trials passed /
  trials) under each version; the change is the mean over tasks of the difference. Trials of
  one task are not independent (a hard task fails every trial), so the unit resampled is the
  task: a percentile bootstrap over tasks, pairs kept together, gives the interval, and the
  same resamples of the centred differences give the two-sided p-value of "no change".
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from judge.stats.budget import wilson_interval


@dataclass(frozen=True)
class PairedChange:
    """The change in pass rate between two versions on the same tasks."""

    n: int  # paired tasks
    baseline: float  # pass rate
    candidate: float
    change: float  # candidate - baseline
    ci: tuple[float, float] | None
    p_value: float | None
    test: str  # mcnemar_exact | bootstrap_tasks
    interval: str  # newcombe_paired | percentile_bootstrap
    confidence: float


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value for `b` and `c` discordant pairs: the binomial test
    of min(b, c) among b + c at probability 1/2 (1.0 when there is no discordant pair)."""
    if b < 0 or c < 0:
        raise ValueError("discordant counts must be >= 0")
    n = b + c
    if n == 0:
        return 1.0
    from scipy.stats import binom

    return float(min(1.0, 2.0 * binom.cdf(min(b, c), n, 0.5)))


def newcombe_paired_interval(a: int, b: int, c: int, d: int, confidence: float = 0.95
                             ) -> tuple[float, float]:
    """Newcombe's hybrid score interval (method 10) for p2 − p1 of a paired 2x2 table, where
    p1 = (a + b) / n (first version's rate) and p2 = (a + c) / n (second's): `b` pairs passed
    only under the first, `c` only under the second."""
    if min(a, b, c, d) < 0:
        raise ValueError("cell counts must be >= 0")
    n = a + b + c + d
    if n == 0:
        raise ValueError("no pair")
    # Newcombe writes the interval for p1 - p2 (first minus second); ours is its negation.
    p1, p2 = (a + b) / n, (a + c) / n
    l1, u1 = (float(x) for x in wilson_interval(a + b, n, confidence))
    l2, u2 = (float(x) for x in wilson_interval(a + c, n, confidence))
    margins = (a + b) * (c + d) * (a + c) * (b + d)
    phi = 0.0
    if margins > 0:
        cross = a * d - b * c
        # the correlation of the pairs, corrected for continuity as Newcombe specifies
        if cross > n / 2:
            phi = (cross - n / 2) / math.sqrt(margins)
        elif cross < 0:
            phi = cross / math.sqrt(margins)
    diff = p1 - p2
    lower = diff - math.sqrt(max(0.0, (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2)
                                 + (u2 - p2) ** 2))
    upper = diff + math.sqrt(max(0.0, (p2 - l2) ** 2 - 2 * phi * (p2 - l2) * (u1 - p1)
                                 + (u1 - p1) ** 2))
    return max(-1.0, -upper), min(1.0, -lower)


def paired_binary(baseline: ArrayLike, candidate: ArrayLike, confidence: float = 0.95
                  ) -> tuple[PairedChange, dict[str, int]]:
    """One trial per task: `baseline[i]`, `candidate[i]` whether task i passed under each.
    The change with its exact McNemar p-value and Newcombe interval, and the 2x2 cells."""
    x = np.asarray(baseline, dtype=bool)
    y = np.asarray(candidate, dtype=bool)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError("baseline and candidate must be 1-d and of one length")
    n = int(x.size)
    cells = {"a": int(np.sum(x & y)), "b": int(np.sum(x & ~y)), "c": int(np.sum(~x & y)),
             "d": int(np.sum(~x & ~y))}
    if n == 0:
        return PairedChange(0, math.nan, math.nan, math.nan, None, None, "mcnemar_exact",
                            "newcombe_paired", confidence), cells
    ci = newcombe_paired_interval(cells["a"], cells["b"], cells["c"], cells["d"], confidence)
    base, cand = float(x.mean()), float(y.mean())
    return PairedChange(n, base, cand, cand - base, ci, mcnemar_exact(cells["b"], cells["c"]),
                        "mcnemar_exact", "newcombe_paired", confidence), cells


def paired_bootstrap(baseline: ArrayLike, candidate: ArrayLike, *, n_boot: int = 10_000,
                     seed: int = 0, confidence: float = 0.95) -> PairedChange:
    """Several trials per task: `baseline[i]`, `candidate[i]` task i's pass share under each
    version. The mean difference with a percentile bootstrap interval over tasks and the
    bootstrap p-value of "no change" (resamples of the centred differences at least as far
    from 0 as the observed mean, (k + 1) / (B + 1))."""
    x = np.asarray(baseline, dtype=np.float64)
    y = np.asarray(candidate, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError("baseline and candidate must be 1-d and of one length")
    if np.any((x < 0) | (x > 1) | (y < 0) | (y > 1)):
        raise ValueError("pass shares must lie in [0, 1]")
    n = int(x.size)
    if n == 0:
        return PairedChange(0, math.nan, math.nan, math.nan, None, None, "bootstrap_tasks",
                            "percentile_bootstrap", confidence)
    d = y - x
    mean = float(d.mean())
    rng = np.random.default_rng(seed)
    means = np.empty(n_boot, dtype=np.float64)
    rows = max(1, 1_000_000 // n)
    for start in range(0, n_boot, rows):
        stop = min(n_boot, start + rows)
        idx = rng.integers(0, n, size=(stop - start, n))
        means[start:stop] = d[idx].mean(axis=1)
    tail = (1.0 - confidence) / 2.0
    lo, hi = np.quantile(means, [tail, 1.0 - tail])
    centred = means - mean  # the resampled means under "no change" (shifted to 0)
    far = int(np.sum(np.abs(centred) >= abs(mean) - 1e-12))
    p = (far + 1) / (n_boot + 1) if n > 1 else 1.0
    return PairedChange(n, float(x.mean()), float(y.mean()), mean, (float(lo), float(hi)),
                        min(1.0, p), "bootstrap_tasks", "percentile_bootstrap", confidence)
