"""Calibration metrics equal scikit-learn's on test vectors, degenerate cases included."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.calibration import calibration_curve
from sklearn.metrics import brier_score_loss
from sklearn.metrics import log_loss as sk_log_loss

from judge.calibration.metrics import (
    accepted_counts,
    brier_score,
    coverage_curve,
    expected_calibration_error,
    log_loss,
    reliability_curve,
)
from judge.calibration.threshold import choose_threshold, clopper_pearson_lower


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("n_bins", [1, 5, 10, 17])
def test_metrics_match_sklearn(seed: int, n_bins: int) -> None:
    rng = np.random.default_rng(seed)
    p = rng.random(300)
    p[:5] = [0.0, 1.0, 0.5, 0.1, 0.9]  # bin edges
    y = (rng.random(300) < p).astype(float)
    assert brier_score(p, y) == pytest.approx(brier_score_loss(y, p))
    assert log_loss(p, y) == pytest.approx(sk_log_loss(y, p, labels=[0, 1]))
    prob_true, prob_pred = calibration_curve(y, p, n_bins=n_bins, strategy="uniform")
    bins = reliability_curve(p, y, n_bins)
    assert [b.frac_agreed for b in bins] == pytest.approx(prob_true)
    assert [b.mean_prob for b in bins] == pytest.approx(prob_pred)
    assert sum(b.count for b in bins) == 300
    counts = np.array([b.count for b in bins])
    ece = float(np.sum(counts * np.abs(prob_true - prob_pred)) / 300)
    assert expected_calibration_error(p, y, n_bins) == pytest.approx(ece)


def test_perfectly_calibrated_large_sample_has_small_ece() -> None:
    rng = np.random.default_rng(1)
    p = rng.random(200_000)
    y = (rng.random(p.size) < p).astype(float)
    ece = expected_calibration_error(p, y)
    assert ece is not None and ece < 0.01
    y_bad = (rng.random(p.size) < p**3).astype(float)
    bad = expected_calibration_error(p, y_bad)
    assert bad is not None and bad > 0.1


def test_degenerate_inputs_are_defined() -> None:
    assert brier_score([], []) is None
    assert log_loss([], []) is None
    assert expected_calibration_error([], []) is None
    assert reliability_curve([], []) == []
    assert coverage_curve([], []) == []
    # a single item, one class only
    assert brier_score([0.7], [1]) == pytest.approx(0.09)
    assert expected_calibration_error([0.7], [1]) == pytest.approx(0.3)
    assert log_loss([1.0], [0]) == pytest.approx(-np.log(1e-15), rel=1e-3)  # clipped, finite
    with pytest.raises(ValueError):
        brier_score([1.2], [1])
    with pytest.raises(ValueError):
        brier_score([0.2], [2])
    with pytest.raises(ValueError):
        brier_score([0.2, 0.3], [1])


def test_accepted_counts_and_coverage() -> None:
    p = np.array([0.2, 0.9, 0.9, 0.5, 0.7])
    y = np.array([0, 1, 0, 1, 1], dtype=float)
    t, n_acc, n_agree = accepted_counts(p, y)
    assert t.tolist() == [0.2, 0.5, 0.7, 0.9]
    assert n_acc.tolist() == [5, 4, 3, 2]
    assert n_agree.tolist() == [3, 3, 2, 1]
    cov = coverage_curve(p, y)
    assert [c.coverage for c in cov] == pytest.approx([1.0, 0.8, 0.6, 0.4])
    assert [c.agreement for c in cov] == pytest.approx([0.6, 0.75, 2 / 3, 0.5])
    thinned = coverage_curve(np.linspace(0, 1, 1000), np.ones(1000), max_points=11)
    assert len(thinned) == 11 and thinned[0].coverage == 1.0


def test_clopper_pearson_lower_bound() -> None:
    from scipy.stats import binomtest

    for k, n in [(95, 100), (50, 50), (1, 10), (300, 310)]:
        ours = float(clopper_pearson_lower(k, n, 0.05))
        ref = binomtest(k, n).proportion_ci(confidence_level=0.90, method="exact").low
        assert ours == pytest.approx(ref, abs=1e-9)
    assert float(clopper_pearson_lower(0, 5)) == 0.0
    # all n agree: lower bound is alpha ** (1 / n)
    assert float(clopper_pearson_lower(20, 20)) == pytest.approx(0.05 ** (1 / 20))


def test_threshold_is_lowest_qualifying() -> None:
    # 200 items at 0.99 all agree; 200 items at 0.5 agree half the time
    p = np.r_[np.full(200, 0.99), np.full(200, 0.5)]
    y = np.r_[np.ones(200), np.tile([0.0, 1.0], 100)]
    c = choose_threshold(p, y, target=0.95)
    assert c.threshold == 0.99
    assert c.review_share == pytest.approx(0.5)
    assert c.n_accepted == 200 and c.agreement == 1.0
    assert c.lower_bound is not None and c.lower_bound >= 0.95
    # with a lax target the lower threshold qualifies and nothing goes to review
    lax = choose_threshold(p, y, target=0.6)
    assert lax.threshold == 0.5 and lax.review_share == 0.0


def test_threshold_none_when_unreachable() -> None:
    p = np.full(50, 0.9)
    y = np.r_[np.ones(45), np.zeros(5)]
    c = choose_threshold(p, y, target=0.95)
    assert c.threshold is None and c.review_share == 1.0
    assert choose_threshold([], [], target=0.95).threshold is None
    # a small perfect set cannot prove 0.95 (lower bound 0.05**(1/20) = 0.86)
    assert choose_threshold(np.full(20, 0.99), np.ones(20)).threshold is None
