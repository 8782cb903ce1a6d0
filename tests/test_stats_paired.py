"""The held-out gain's interval (judge.stats.paired): Newcombe's paired interval against a
published implementation's figures, and both intervals by simulation with known truth —
coverage, and how often a gain of 0 is called one (the `--accept` gate's false acceptance)."""

from __future__ import annotations

import numpy as np
import pytest

from judge.stats.drift import newcombe_difference
from judge.stats.paired import cluster_interval, newcombe_paired, paired_difference


def test_newcombe_paired_matches_contingencytables() -> None:
    # ocbe-uio/contingencytables, tests/testthat/test-ch8.R (Fagerland, Lydersen & Laake,
    # "Statistical Analysis of Contingency Tables", the Cavo et al. 2012 table):
    # Newcombe_square_and_add_CI_paired_2x2(matrix(c(59, 6, 16, 80), 2, byrow=TRUE))
    # -> estimate -0.0621 (95% CI -0.1186 to -0.0046)
    d, lo, hi = newcombe_paired(59, 6, 16, 80)
    assert (round(d, 4), round(lo, 4), round(hi, 4)) == (-0.0621, -0.1186, -0.0046)
    d2, lo2, hi2 = newcombe_paired(59, 16, 6, 80)  # the sides swapped: the mirror image
    assert (d2, lo2, hi2) == pytest.approx((-d, -hi, -lo))


def test_without_correlation_it_is_the_independent_newcombe_interval() -> None:
    # both*neither - new_only*old_only between 0 and n/2: the corrected correlation is 0
    both, new_only, old_only, neither = 10, 12, 9, 11
    n = both + new_only + old_only + neither
    assert 0 <= both * neither - new_only * old_only <= n / 2
    assert newcombe_paired(both, new_only, old_only, neither) == pytest.approx(
        newcombe_difference(both + new_only, n, both + old_only, n))


def test_few_flips_are_not_a_gain() -> None:
    """4 fixed and 0 broken of 100: an exact sign test says p = 0.125; the interval must
    include 0 (a normal interval alone would not: it is why Newcombe's is there)."""
    new = np.ones(100, dtype=bool)
    old = new.copy()
    old[:4] = False
    d = paired_difference(new, old)
    assert d.fixed == 4 and d.broke == 0 and d.estimate == pytest.approx(0.04)
    assert d.clustered is not None and d.clustered[0] > 0
    assert d.ci[0] <= 0 < d.ci[1]


def test_nothing_changed_is_a_zero_gain_with_an_interval_around_it() -> None:
    right = np.array([True] * 70 + [False] * 30)
    d = paired_difference(right, right)
    assert d.estimate == 0 and d.ci[0] < 0 < d.ci[1] and d.clustered == (0.0, 0.0)


def _simulate_independent(n: int, p_old: float, gain: float, reps: int,
                          rng: np.random.Generator) -> tuple[float, float]:
    """(coverage of the true gain, share of runs whose interval lies above 0)."""
    covered = above = 0
    for _ in range(reps):
        old = rng.random(n) < p_old
        # the new side: each old-wrong item fixed, each old-right one broken, at rates that
        # give the true gain exactly in expectation
        fix = rng.random(n) < (0.1 + max(gain, 0) / (1 - p_old))
        brk = rng.random(n) < (0.1 * (1 - p_old) / p_old + max(-gain, 0) / p_old)
        new = np.where(old, ~brk, fix)
        true = (1 - p_old) * (0.1 + max(gain, 0) / (1 - p_old)) \
            - p_old * (0.1 * (1 - p_old) / p_old + max(-gain, 0) / p_old)
        d = paired_difference(new, old)
        covered += d.ci[0] <= true <= d.ci[1]
        above += d.ci[0] > 0
    return covered / reps, above / reps


@pytest.mark.parametrize("n, gain", [(60, 0.0), (150, 0.0), (150, 0.05), (400, 0.02)])
def test_coverage_with_known_truth(n: int, gain: float) -> None:
    rng = np.random.default_rng(7)
    coverage, above = _simulate_independent(n, 0.75, gain, 300, rng)
    assert coverage >= 0.94, coverage
    if gain == 0:
        assert above <= 0.03, above  # a gain of 0 is accepted at most ~2.5% of the time


@pytest.mark.parametrize("groups, size", [(30, 6), (20, 8)])
def test_clustered_flips_need_the_cluster_interval(groups: int, size: int) -> None:
    """Items of a group flip together (a prompt change helps or hurts a whole trace): with a
    true gain of 0, an item-level interval calls a gain far more often than 2.5%; the
    reported interval, which also accounts for the groups, does not."""
    rng = np.random.default_rng(11)
    reps = 300
    item_level = reported = 0
    for _ in range(reps):
        names = np.repeat(np.arange(groups), size).astype(str)
        old = rng.random(groups * size) < 0.5  # even odds: moving up or down is a gain of 0
        moved = np.repeat(rng.random(groups) < 0.3, size)  # these groups' verdicts move
        up = np.repeat(rng.random(groups) < 0.5, size)  # all to right, or all to wrong
        new = np.where(moved, up, old)
        d = paired_difference(new, old, list(names))
        item_level += d.newcombe[0] > 0
        reported += d.ci[0] > 0
    assert item_level / reps > 0.06
    assert reported / reps <= 0.035, reported / reps


def test_cluster_interval_needs_two_groups() -> None:
    assert cluster_interval([1, 0, 1], ["a", "a", "a"]) is None
    with pytest.raises(ValueError):
        cluster_interval([1, 0], ["a"])
