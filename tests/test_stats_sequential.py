"""The mixture SPRT behind `judge canary`: its evidence against direct numerical integration,
its anytime guarantee by simulation with known truth (many looks, error at most alpha), the
bounds it reports agreeing with its decisions, and `tasks_to_decide`."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate
from scipy.stats import beta

from judge.stats.sequential import (
    bounds,
    log_evidence_above,
    log_evidence_below,
    tasks_to_decide,
)


def _evidence_by_quad(s: int, n: int, theta: float, m: float, above: bool) -> float:
    """The mixture likelihood ratio integrated numerically (scipy.integrate.quad)."""
    a, b = m * theta, m * (1 - theta)
    lo, hi = (theta, 1.0) if above else (0.0, theta)
    mass = beta.sf(theta, a, b) if above else beta.cdf(theta, a, b)

    def lr(q: float) -> float:
        return math.exp(s * math.log(q / theta) + (n - s) * math.log((1 - q) / (1 - theta))
                        + beta.logpdf(q, a, b)) if 0 < q < 1 else 0.0

    value, _ = integrate.quad(lr, lo, hi, limit=200, epsabs=0, epsrel=1e-10)
    return value / mass


@pytest.mark.parametrize(("s", "n", "theta"), [(9, 10, 0.8), (45, 50, 0.8), (30, 50, 0.8),
                                               (0, 5, 0.5), (7, 7, 0.9), (180, 250, 0.8)])
def test_evidence_is_the_mixture_integral(s: int, n: int, theta: float) -> None:
    for m in (5.0, 20.0):
        above = _evidence_by_quad(s, n, theta, m, above=True)
        below = _evidence_by_quad(s, n, theta, m, above=False)
        assert math.exp(log_evidence_above(s, n, theta, m)) == pytest.approx(above, rel=1e-6)
        assert math.exp(log_evidence_below(s, n, theta, m)) == pytest.approx(below, rel=1e-6)


@pytest.mark.parametrize("theta", [0.6, 0.8, 0.9])
def test_at_the_threshold_no_test_fires_more_than_alpha_over_every_look(theta: float) -> None:
    """Known truth p = θ, a look after every 10 tasks up to 1,000 (100 looks): a fixed-sample
    95% bound would cross θ at some look far more often than 5%; these tests, each at most
    alpha over all the looks together."""
    rng = np.random.default_rng(int(theta * 100))
    runs, alpha = 600, 0.05
    promoted = rolled_back = naive = 0
    for _ in range(runs):
        x = rng.random(1000) < theta
        s = np.cumsum(x)
        hit_up = hit_down = hit_naive = False
        for n in range(10, 1001, 10):
            k = int(s[n - 1])
            hit_up = hit_up or log_evidence_above(k, n, theta) >= math.log(1 / alpha)
            hit_down = hit_down or log_evidence_below(k, n, theta) >= math.log(1 / alpha)
            se = math.sqrt(theta * (1 - theta) / n)
            hit_naive = hit_naive or k / n - 1.645 * se > theta
        promoted += hit_up
        rolled_back += hit_down
        naive += hit_naive
    assert promoted / runs <= alpha + 0.015
    assert rolled_back / runs <= alpha + 0.015
    assert naive / runs > 2 * alpha  # what looking again and again does to a fixed bound


@given(st.integers(0, 300), st.integers(0, 300), st.sampled_from([0.5, 0.7, 0.8, 0.95]))
@settings(max_examples=150, deadline=None)
def test_bounds_agree_with_the_decisions(k: int, extra: int, theta: float) -> None:
    n = k + extra
    b = bounds(k, n, theta)
    assert 0.0 <= b.lower <= b.upper <= 1.0
    if n:
        assert b.lower <= k / n <= b.upper
    assert not (b.above and b.below)
    # the lower bound clears θ exactly when the promote test fires (up to the root's tolerance)
    if b.above:
        assert b.lower >= theta - 1e-6
    elif abs(b.lower - theta) > 1e-6:
        assert b.lower < theta
    if b.below:
        assert b.upper <= theta + 1e-6
    elif abs(b.upper - theta) > 1e-6:
        assert b.upper > theta


def test_tasks_to_decide_is_the_fewest() -> None:
    for s, n, rate in [(9, 9, 1.0), (40, 50, 0.0), (45, 50, None), (0, 0, 1.0), (3, 10, 0.0)]:
        k = tasks_to_decide(s, n, 0.8, rate=rate)
        assert k is not None
        r = (s / n) if rate is None else rate
        test = log_evidence_above if r > 0.8 else log_evidence_below
        need = math.log(20)
        assert test(min(s + round(r * k), n + k), n + k, 0.8) >= need
        if k:
            assert test(min(s + round(r * (k - 1)), n + k - 1), n + k - 1, 0.8) < need
    assert tasks_to_decide(8, 10, 0.8) is None  # at the threshold: nothing decides
    assert tasks_to_decide(5, 5, 0.8, rate=1.0) == tasks_to_decide(5, 5, 0.8)


def test_bad_arguments() -> None:
    with pytest.raises(ValueError):
        bounds(3, 2, 0.5)
    with pytest.raises(ValueError):
        bounds(1, 2, 1.0)
    with pytest.raises(ValueError):
        bounds(1, 2, 0.5, alpha=0.0)
