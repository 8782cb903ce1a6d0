"""The corrected pass rate: the formula, its degenerate cases, and its interval's coverage."""

from __future__ import annotations

import numpy as np
import pytest

from judge.stats import compute_agreement, corrected_pass_rate


def test_formula_recovers_the_true_rate_from_exact_rates() -> None:
    # true pass rate 0.7, tpr 0.8, tnr 0.9: observed pass = 0.7 * 0.9 + 0.3 * (1 - 0.8)
    p_obs = 0.7 * 0.9 + 0.3 * 0.2
    assert float(corrected_pass_rate(p_obs, 0.8, 0.9)) == pytest.approx(0.7)


def test_clipped_and_undefined() -> None:
    got = corrected_pass_rate([0.99, 0.01, 0.5, 0.5, np.nan], [0.8, 0.8, 0.5, 0.3, 0.9],
                              [0.9, 0.9, 0.5, 0.6, 0.9])
    assert got[0] == 1.0 and got[1] == 0.0  # clipped to [0, 1]
    assert np.isnan(got[2]) and np.isnan(got[3]) and np.isnan(got[4])  # tpr + tnr <= 1


def test_estimate_in_agreement_output() -> None:
    human = ["fail"] * 10 + ["pass"] * 10
    judge = ["fail"] * 8 + ["pass"] * 2 + ["pass"] * 9 + ["fail"]  # tpr 0.8, tnr 0.9
    judge_all = ["pass"] * 69 + ["fail"] * 31
    out = compute_agreement(human, judge, judge_all=judge_all, n_boot=200, seed=0)
    assert out["corrected_pass_rate"]["estimate"] == pytest.approx((0.69 + 0.8 - 1) / 0.7)
    lo, hi = out["corrected_pass_rate"]["ci"]
    assert lo < out["corrected_pass_rate"]["estimate"] < hi


def simulate_coverage(theta: float, tpr: float, tnr: float, n_labelled: int, n_judged: int,
                      n_boot: int, studies: int, seed: int) -> float:
    """Share of simulated studies whose 95% interval covers the true pass rate.

    Each study draws a judged set and an independent labelled sample from one process with
    a known pass rate, judge tpr and tnr; the human label is the truth.
    """
    rng = np.random.default_rng(seed)
    hits = 0
    for study in range(studies):
        def draw(n: int) -> tuple[np.ndarray, np.ndarray]:
            truth_pass = rng.random(n) < theta
            u = rng.random(n)
            judge_pass = np.where(truth_pass, u < tnr, u >= tpr)
            return truth_pass, judge_pass
        _, judged = draw(n_judged)
        truth, judge = draw(n_labelled)
        out = compute_agreement(np.where(truth, "pass", "fail"), np.where(judge, "pass", "fail"),
                                judge_all=np.where(judged, "pass", "fail"),
                                n_boot=n_boot, seed=study)
        cpr = out["corrected_pass_rate"]
        if cpr is not None and cpr["ci"] is not None and cpr["ci"][0] <= theta <= cpr["ci"][1]:
            hits += 1
    return hits / studies


@pytest.mark.slow
def test_interval_covers_the_true_rate_in_93_to_97_percent_of_1000_studies() -> None:
    coverage = simulate_coverage(theta=0.8, tpr=0.8, tnr=0.9, n_labelled=200, n_judged=1000,
                                 n_boot=400, studies=1000, seed=2026)
    assert 0.93 <= coverage <= 0.97, coverage
