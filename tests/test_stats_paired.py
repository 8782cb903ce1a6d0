"""The paired tests of `judge compare` against references, and by simulation with known truth:
the exact McNemar p-value (scipy's binomial test, and the sum of binomial probabilities
written out), Newcombe's paired interval (a published example; coverage), and the bootstrap
over tasks (scipy.stats.bootstrap on the same data; coverage; the p-value under no change)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from judge.stats.paired import (
    mcnemar_exact,
    newcombe_paired_interval,
    paired_binary,
    paired_bootstrap,
)


@pytest.mark.parametrize(("b", "c"), [(0, 0), (1, 0), (0, 7), (3, 9), (6, 5), (12, 2),
                                      (40, 60), (250, 251)])
def test_mcnemar_exact_is_the_binomial_test(b: int, c: int) -> None:
    want = 1.0 if b + c == 0 else stats.binomtest(c, b + c, 0.5).pvalue
    assert mcnemar_exact(b, c) == pytest.approx(want, rel=1e-12)
    n, k = b + c, min(b, c)  # written out: twice the lower tail, at most 1
    by_hand = min(1.0, 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n) if n else 1.0
    assert mcnemar_exact(b, c) == pytest.approx(by_hand, rel=1e-12)


def test_newcombe_matches_the_published_example() -> None:
    """Fagerland, Lydersen & Laake, *Statistical Analysis of Contingency Tables* (2017), the
    paired table of Cavo et al. (2012): 59, 6 / 16, 80 — Newcombe's square-and-add interval
    for p1 − p2 is −0.0621 (95% CI −0.1186 to −0.0046), as the book's R package
    (contingencytables, tests/testthat/test-ch8.R) prints. Ours is for p2 − p1."""
    lo, hi = newcombe_paired_interval(59, 6, 16, 80)
    assert (round(lo, 4), round(hi, 4)) == (0.0046, 0.1186)
    change, cells = paired_binary([True] * 59 + [True] * 6 + [False] * 16 + [False] * 80,
                                  [True] * 59 + [False] * 6 + [True] * 16 + [False] * 80)
    assert cells == {"a": 59, "b": 6, "c": 16, "d": 80}
    assert round(change.change, 4) == 0.0621 and change.ci == (lo, hi)
    assert change.p_value == pytest.approx(stats.binomtest(16, 22, 0.5).pvalue)


def test_newcombe_covers_the_truth() -> None:
    """Coverage by simulation: pairs drawn with known cell probabilities (50 tasks, like the
    airline example), the interval holds the true difference at least ~93% of the time."""
    rng = np.random.default_rng(7)
    for probs in ([0.70, 0.10, 0.10, 0.10], [0.80, 0.02, 0.10, 0.08], [0.40, 0.20, 0.10, 0.30]):
        truth = probs[2] - probs[1]
        covered = 0
        runs = 2000
        for _ in range(runs):
            a, b, c, d = rng.multinomial(50, probs)
            lo, hi = newcombe_paired_interval(int(a), int(b), int(c), int(d))
            covered += lo <= truth <= hi
        assert covered / runs >= 0.93, (probs, covered / runs)


@given(st.integers(0, 40), st.integers(0, 40), st.integers(0, 40), st.integers(0, 40))
@settings(max_examples=300, deadline=None)
def test_newcombe_interval_is_an_interval_around_the_estimate(a: int, b: int, c: int,
                                                              d: int) -> None:
    n = a + b + c + d
    if n == 0:
        with pytest.raises(ValueError):
            newcombe_paired_interval(a, b, c, d)
        return
    lo, hi = newcombe_paired_interval(a, b, c, d)
    est = (c - b) / n
    assert -1.0 <= lo <= est + 1e-12 and est - 1e-12 <= hi <= 1.0


def test_bootstrap_interval_agrees_with_scipy() -> None:
    """The percentile interval of the mean paired difference, ours and scipy.stats.bootstrap
    (paired, percentile method) on the same tasks, agree within Monte Carlo error."""
    rng = np.random.default_rng(3)
    base = rng.integers(0, 5, size=60) / 4  # pass shares of 4 trials
    cand = np.clip(base + rng.choice([-0.25, 0, 0, 0.25, 0.5], size=60), 0, 1)
    ours = paired_bootstrap(base, cand, n_boot=20_000, seed=1)
    ref = stats.bootstrap((cand - base,), np.mean, n_resamples=20_000, method="percentile",
                          random_state=np.random.default_rng(2)).confidence_interval
    assert ours.ci is not None
    assert ours.ci[0] == pytest.approx(ref.low, abs=0.01)
    assert ours.ci[1] == pytest.approx(ref.high, abs=0.01)
    assert ours.change == pytest.approx(float(np.mean(cand - base)))


def test_bootstrap_covers_the_truth_and_its_p_value_holds_its_level() -> None:
    """50 tasks of 2 trials each, each task with its own pass rate (some hard for both
    versions): the interval covers the true change ~95% of the time, and with no true change
    p < 0.05 about 5% of the time."""
    rng = np.random.default_rng(11)
    runs = 400
    covered = rejected = 0
    for shift in (0.0, 0.1):
        for _ in range(runs):
            p = rng.beta(2, 1, size=50)
            q = np.clip(p + shift, 0, 1)
            base = rng.binomial(2, p) / 2
            cand = rng.binomial(2, q) / 2
            r = paired_bootstrap(base, cand, n_boot=2000, seed=int(rng.integers(1 << 30)))
            assert r.ci is not None and r.p_value is not None
            truth = float(np.mean(q - p))
            covered += r.ci[0] <= truth <= r.ci[1]
            if shift == 0.0:
                rejected += r.p_value < 0.05
    assert covered / (2 * runs) >= 0.92
    assert rejected / runs <= 0.08


def test_no_task_and_one_task() -> None:
    empty, cells = paired_binary([], [])
    assert empty.n == 0 and empty.ci is None and cells["a"] == 0
    assert paired_bootstrap([], []).ci is None
    one = paired_bootstrap([0.5], [1.0], n_boot=200)
    assert one.change == 0.5 and one.p_value == 1.0
    with pytest.raises(ValueError):
        paired_bootstrap([1.5], [0.0])
    with pytest.raises(ValueError):
        mcnemar_exact(-1, 2)
