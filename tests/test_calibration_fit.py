"""Calibrator fitting, method choice, and the simulation with known truth."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.isotonic import IsotonicRegression

from judge.calibration import TooFewLabelsError, build_record, fit_calibrator
from judge.calibration.fit import IsotonicCalibrator, fit_isotonic, fit_platt

TARGET = 0.95


def judge_sample(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """An overconfident judge: true P(agree | conf) = conf ** 3; confidence mostly high."""
    conf = rng.beta(4, 0.35, n)
    agreed = (rng.random(n) < conf**3).astype(float)
    human_fail = rng.random(n) < 0.4
    return conf, agreed, human_fail


def test_isotonic_matches_sklearn_predict_inside_margin() -> None:
    rng = np.random.default_rng(3)
    x = rng.random(500)
    y = (rng.random(500) < x).astype(float)
    ours = fit_isotonic(x, y)
    ref = IsotonicRegression(y_min=0, y_max=1, out_of_bounds="clip").fit(x, y)
    grid = np.linspace(-0.1, 1.1, 301)
    margin = 1 / 502
    # equal to scikit-learn's except that certainty is kept `margin` away from 0 and 1
    assert np.max(np.abs(ours.predict(grid) - ref.predict(grid))) <= margin + 1e-12
    inner = (ref.predict(grid) > 0.2) & (ref.predict(grid) < 0.8)
    assert ours.predict(grid)[inner] == pytest.approx(ref.predict(grid)[inner])
    assert ours.predict(grid).min() >= margin and ours.predict(grid).max() <= 1 - margin
    assert np.all(np.diff(ours.predict(grid)) >= 0)


def test_platt_recovers_a_logistic_truth() -> None:
    rng = np.random.default_rng(4)
    x = rng.random(50_000)
    y = (rng.random(x.size) < 1 / (1 + np.exp(-(6 * x - 3)))).astype(float)
    p = fit_platt(x, y)
    assert p.coef == pytest.approx(6, abs=0.3)
    assert p.intercept == pytest.approx(-3, abs=0.2)
    const = fit_platt(x[:10], np.ones(10))
    assert const.coef == 0.0 and 0.99 < float(const.predict(0.3)) < 1.0


def test_method_chosen_by_cross_validated_log_loss() -> None:
    rng = np.random.default_rng(5)
    x = rng.random(4000)
    logistic = (rng.random(x.size) < 1 / (1 + np.exp(-(8 * x - 4)))).astype(float)
    fit = fit_calibrator(x, logistic)
    assert fit.method == "platt"
    assert fit.cv_log_loss["platt"] < fit.cv_log_loss["isotonic"]
    # a step function: isotonic wins
    step = (rng.random(x.size) < np.where(x > 0.5, 0.97, 0.1)).astype(float)
    fit2 = fit_calibrator(x, step)
    assert fit2.method == "isotonic"
    assert isinstance(fit2.calibrator, IsotonicCalibrator)
    # held-out predictions differ from the final in-sample fit
    assert not np.allclose(fit2.oof_prob, fit2.calibrator.predict(x))
    assert sorted(set(fit2.fold.tolist())) == list(range(5))


def test_refusal_says_how_many_more() -> None:
    rng = np.random.default_rng(6)
    conf, agreed, _ = judge_sample(rng, 100)
    human_fail = np.r_[np.ones(12, bool), np.zeros(88, bool)]
    with pytest.raises(TooFewLabelsError) as info:
        build_record(conf, agreed, human_fail, rubric="r", prompt_version="v1",
                     prompt_hash="h", model="m", label_set_hash="x")
    assert info.value.missing == {"pass": 0, "fail": 18}
    assert "18 more" in info.value.message and info.value.exit_code == 2


def test_simulation_auto_accepted_agreement_holds_on_fresh_samples() -> None:
    """Known truth P(agree) = conf**3: fit on 1,500 labelled items, route a fresh 100,000.

    Auto-accepted agreement on the fresh sample must be >= target - 0.01 in >= 95% of seeds.
    """
    seeds = range(60)
    achieved, review = [], []
    for seed in seeds:
        rng = np.random.default_rng(1000 + seed)
        conf, agreed, human_fail = judge_sample(rng, 1500)
        rec = build_record(conf, agreed, human_fail, rubric="r", prompt_version="v1",
                           prompt_hash="h", model="m", label_set_hash="x", seed=seed,
                           target=TARGET)
        assert rec.threshold is not None
        fresh_conf, fresh_agreed, _ = judge_sample(rng, 100_000)
        accepted = rec.calibrate(fresh_conf) >= rec.threshold
        achieved.append(fresh_agreed[accepted].mean())
        review.append(1 - accepted.mean())
        # the expected review share is an honest estimate of the fresh one
        assert abs(rec.expected_review_share - (1 - accepted.mean())) < 0.08
    ok = np.mean(np.array(achieved) >= TARGET - 0.01)
    print(f"share of seeds >= target-0.01: {ok:.3f}; min {min(achieved):.4f}; "
          f"median {np.median(achieved):.4f}; mean review share {np.mean(review):.3f}")
    assert ok >= 0.95
    # and the threshold is not trivially "review everything": the truth allows accepting
    # conf >= 0.983 (about 42% of items); we must accept a real share
    assert np.mean(review) < 0.75


@pytest.mark.parametrize("outcome", ["all_agree", "all_disagree", "same_confidence"])
def test_degenerate_outcomes_give_defined_records(outcome: str) -> None:
    rng = np.random.default_rng(7)
    n = 100
    conf = np.full(n, 0.9) if outcome == "same_confidence" else rng.random(n)
    agreed = np.zeros(n) if outcome == "all_disagree" else np.ones(n)
    human_fail = np.arange(n) < 50
    rec = build_record(conf, agreed, human_fail, rubric="r", prompt_version="v1",
                       prompt_hash=None, model="m", label_set_hash="x")
    assert all(np.isfinite([rec.metrics.ece, rec.metrics.brier, rec.metrics.log_loss]))
    if outcome == "all_disagree":
        assert rec.threshold is None and rec.expected_review_share == 1.0
        assert not rec.auto_accepts(1.0)
    else:
        # 100 agreements out of 100 prove >= 0.95 (0.05 ** (1/100) = 0.970): accept all
        assert rec.threshold is not None and rec.expected_review_share == 0.0
        assert rec.auto_accepts(float(conf.min()))
