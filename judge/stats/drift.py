"""Agreement drift across runs: plain counts in, intervals and flagged drops out.

Run i's audit share gives k[i] agreements in n[i] labelled items: its agreement has a Wilson
interval. Its baseline is the pooled count of up to `window` earlier runs that have labelled
items; the drop (baseline - run) gets Newcombe's hybrid score interval for a difference of two
proportions (method 10 of Newcombe 1998: the two Wilson intervals combined), which keeps its
coverage at the small counts an audit share gives, where the Wald interval does not. A run is
flagged when that interval lies wholly above 0: the fall is beyond what both intervals allow
as noise. At 95%, a run drawn from the baseline's own agreement is flagged about 2.5% of the
time (one side of a two-sided interval); tests/test_drift.py measures it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from judge.stats.budget import wilson_interval


@dataclass(frozen=True)
class DriftPoint:
    """One run: its agreement and interval, and how it compares with its baseline."""

    k: int
    n: int
    agreement: float | None
    ci: tuple[float, float] | None
    baseline_k: int
    baseline_n: int
    baseline: float | None  # pooled agreement of the earlier runs in the window
    drop: float | None  # baseline - agreement
    drop_ci: tuple[float, float] | None
    flagged: bool


def newcombe_difference(k1: int, n1: int, k2: int, n2: int, confidence: float = 0.95
                        ) -> tuple[float, float, float]:
    """p1 - p2 with Newcombe's hybrid score interval: (difference, lo, hi)."""
    if n1 <= 0 or n2 <= 0:
        raise ValueError("both samples need at least one item")
    p1, p2 = k1 / n1, k2 / n2
    l1, u1 = (float(x) for x in wilson_interval(k1, n1, confidence))
    l2, u2 = (float(x) for x in wilson_interval(k2, n2, confidence))
    d = p1 - p2
    lo = d - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2)
    hi = d + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)
    return d, lo, hi


def drift_points(k: Sequence[int], n: Sequence[int], *, window: int = 5,
                 confidence: float = 0.95) -> list[DriftPoint]:
    """Per run (in time order): agreement with its Wilson interval, and the drop from the
    pooled earlier `window` runs that have labelled items, flagged when significant."""
    if len(k) != len(n):
        raise ValueError("k and n differ in length")
    if window < 1:
        raise ValueError("window must be at least 1")
    out: list[DriftPoint] = []
    seen: list[tuple[int, int]] = []  # earlier runs with labelled items
    for ki, ni in zip(k, n, strict=True):
        if ki < 0 or ni < 0 or ki > ni:
            raise ValueError("need 0 <= k <= n")
        base = seen[-window:]
        bk, bn = sum(x for x, _ in base), sum(y for _, y in base)
        if ni == 0:
            out.append(DriftPoint(ki, ni, None, None, bk, bn, bk / bn if bn else None,
                                  None, None, False))
            continue
        lo, hi = (float(x) for x in wilson_interval(ki, ni, confidence))
        drop = drop_ci = None
        flagged = False
        if bn:
            drop, dlo, dhi = newcombe_difference(bk, bn, ki, ni, confidence)
            drop_ci = (dlo, dhi)
            flagged = dlo > 0.0
        out.append(DriftPoint(ki, ni, ki / ni, (lo, hi), bk, bn, bk / bn if bn else None,
                              drop, drop_ci, flagged))
        seen.append((ki, ni))
    return out
