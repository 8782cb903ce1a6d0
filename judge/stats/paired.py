"""The difference of two judges' agreement on the same items, with an interval.

Two prompt versions graded the same held-out items: each item is right or wrong under each.
The gain `p_new - p_old` is (fixed - broke) / n, where `fixed` items are right only under the
new version and `broke` ones only under the old. Two intervals, each answering a different
worry, and the reported one covers both (the lower of their lower ends, the higher of their
upper ends):

- **Newcombe's paired square-and-add interval** (method 10 of Newcombe 1998, "Improved
  confidence intervals for the difference between binomial proportions based on paired
  data"): the two Wilson intervals combined with the correlation of the pairs (its
  continuity-corrected estimate). It keeps its coverage when only a few items flipped, where
  a bootstrap or a normal interval does not (with 4 fixed and 0 broken of 100, a percentile
  bootstrap's lower end is above 0; an exact sign test of 4 against 0 is p = 0.125).
- **A cluster-robust interval** over groups (traces, or tasks): items of one trace are not
  independent (a prompt change helps or hurts a whole trace), and an item-level interval
  is then too narrow. The gain is a ratio of group sums; its variance is the sandwich
  (CR1) estimate over groups, and the interval takes Student's t with G - 1 degrees of
  freedom, which holds up at a few dozen groups better than a percentile bootstrap over
  groups does (tests/test_stats_paired.py measures both).

tests/test_stats_paired.py checks the first against a published implementation's figures and
the reported interval, by simulation with known truth, for coverage and for how often a gain
of 0 is called one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from judge.stats.budget import wilson_interval


@dataclass(frozen=True)
class PairedDifference:
    """p_new - p_old over `n` items both sides scored, with its intervals."""

    n: int
    fixed: int  # right under the new side only
    broke: int  # right under the old side only
    estimate: float
    ci: tuple[float, float]  # covers both intervals below
    newcombe: tuple[float, float]
    clustered: tuple[float, float] | None  # None: fewer than 2 groups
    n_groups: int
    confidence: float


def newcombe_paired(both: int, new_only: int, old_only: int, neither: int,
                    confidence: float = 0.95) -> tuple[float, float, float]:
    """p_new - p_old of a paired 2x2 table (items right under both sides, the new only, the
    old only, neither) with Newcombe's square-and-add interval: (difference, lo, hi)."""
    n = both + new_only + old_only + neither
    if n <= 0:
        raise ValueError("a paired difference needs at least one item")
    new_right, old_right = both + new_only, both + old_only
    p1, p2 = new_right / n, old_right / n
    l1, u1 = (float(x) for x in wilson_interval(new_right, n, confidence))
    l2, u2 = (float(x) for x in wilson_interval(old_right, n, confidence))
    margins = new_right * (n - new_right) * old_right * (n - old_right)
    phi = 0.0
    if margins > 0:
        cross = both * neither - new_only * old_only
        if cross > n / 2:  # the continuity-corrected correlation estimate
            phi = (cross - n / 2) / math.sqrt(margins)
        elif cross < 0:
            phi = cross / math.sqrt(margins)
    d = p1 - p2
    lo = d - math.sqrt(max(0.0, (p1 - l1) ** 2 + (u2 - p2) ** 2
                           - 2 * phi * (p1 - l1) * (u2 - p2)))
    hi = d + math.sqrt(max(0.0, (p2 - l2) ** 2 + (u1 - p1) ** 2
                           - 2 * phi * (p2 - l2) * (u1 - p1)))
    return d, max(-1.0, lo), min(1.0, hi)


def cluster_interval(diff: ArrayLike, groups: Sequence[str], *,
                     confidence: float = 0.95) -> tuple[float, float] | None:
    """mean(diff) (+1 fixed, -1 broke, 0 unchanged per item) with a cluster-robust
    interval over `groups`: the CR1 sandwich variance of the ratio of group sums and
    Student's t with G - 1 degrees of freedom. None with fewer than 2 groups."""
    from scipy.stats import t as student_t

    d = np.asarray(diff, dtype=np.float64)
    if d.size != len(groups):
        raise ValueError("one group per item")
    _, index = np.unique(np.asarray(list(groups), dtype=str), return_inverse=True)
    g = int(index.max()) + 1 if index.size else 0
    if g < 2:
        return None
    sums = np.bincount(index, weights=d, minlength=g)
    sizes = np.bincount(index, minlength=g).astype(np.float64)
    est = float(sums.sum() / sizes.sum())
    var = g / (g - 1) * float(((sums - est * sizes) ** 2).sum()) / float(sizes.sum()) ** 2
    half = float(student_t.ppf(0.5 + confidence / 2, g - 1)) * math.sqrt(var)
    return max(-1.0, est - half), min(1.0, est + half)


def paired_difference(new_right: ArrayLike, old_right: ArrayLike,
                      groups: Sequence[str] | None = None, *,
                      confidence: float = 0.95) -> PairedDifference:
    """The gain of the new side over the old on the same items (aligned arrays of bools:
    was each side right on item i), with both intervals; `groups[i]`: item i's trace or
    task (None: every item its own group)."""
    a = np.asarray(new_right, dtype=bool)
    b = np.asarray(old_right, dtype=bool)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError("new_right and old_right must be 1-d arrays of one length")
    n = int(a.size)
    both, new_only = int((a & b).sum()), int((a & ~b).sum())
    old_only, neither = int((~a & b).sum()), int((~a & ~b).sum())
    d, lo, hi = newcombe_paired(both, new_only, old_only, neither, confidence)
    names = list(groups) if groups is not None else [str(i) for i in range(n)]
    clus = cluster_interval(a.astype(np.int8) - b.astype(np.int8), names,
                            confidence=confidence)
    ci = (lo, hi) if clus is None else (min(lo, clus[0]), max(hi, clus[1]))
    return PairedDifference(
        n=n, fixed=new_only, broke=old_only, estimate=d,
        ci=(round(ci[0], 6), round(ci[1], 6)), newcombe=(round(lo, 6), round(hi, 6)),
        clustered=None if clus is None else (round(clus[0], 6), round(clus[1], 6)),
        n_groups=len(set(names)), confidence=confidence)
