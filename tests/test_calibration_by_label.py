"""Calibration from the raw confidence and the judge's label: when a judge's confidence means
something different on its fails than on its passes, per-label calibrators win on held-out log
loss, and routing uses the verdict's label."""

from __future__ import annotations

import numpy as np
import pytest

from judge.calibration import build_record, fit_calibrator
from judge.formats import Verdict
from judge.routing import route_verdict


def simulate(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Known truth: on fail verdicts P(agree) = conf; on pass verdicts P(agree) = conf**4."""
    rng = np.random.default_rng(seed)
    conf = rng.uniform(0.5, 1.0, n)
    judge_fail = rng.random(n) < 0.4
    p_agree = np.where(judge_fail, conf, conf ** 4)
    agreed = (rng.random(n) < p_agree).astype(float)
    return conf, agreed, judge_fail


def test_per_label_methods_win_when_labels_matter() -> None:
    conf, agreed, judge_fail = simulate(3000, 1)
    fit = fit_calibrator(conf, agreed, judge_fail=judge_fail)
    assert fit.method.endswith("_by_label")
    pooled = min(v for m, v in fit.cv_log_loss.items() if not m.endswith("_by_label"))
    assert fit.cv_log_loss[fit.method] < pooled
    # the per-label calibrator recovers the two truths at conf = 0.9
    x = np.array([0.9, 0.9])
    got = fit.calibrator.predict(x, np.array([True, False]))
    assert got[0] == pytest.approx(0.9, abs=0.06)
    assert got[1] == pytest.approx(0.9 ** 4, abs=0.06)


def test_without_labels_only_pooled_methods_compete() -> None:
    conf, agreed, _ = simulate(500, 2)
    fit = fit_calibrator(conf, agreed)
    assert set(fit.cv_log_loss) == {"isotonic", "platt"}


def test_without_a_label_effect_a_pooled_method_is_kept() -> None:
    wins = 0
    for seed in range(10):
        rng = np.random.default_rng(seed)
        conf = rng.uniform(0.5, 1.0, 1500)
        agreed = (rng.random(1500) < conf).astype(float)
        judge_fail = rng.random(1500) < 0.5
        wins += not fit_calibrator(conf, agreed, judge_fail=judge_fail).method.endswith(
            "_by_label")
    assert wins >= 9  # a per-label fit must earn its extra parameters on held-out items


def test_record_and_routing_use_the_verdict_label() -> None:
    conf, agreed, judge_fail = simulate(3000, 3)
    human_fail = np.where(agreed == 1.0, judge_fail, ~judge_fail)
    record = build_record(conf, agreed, human_fail, rubric="scope_fidelity",
                          prompt_version="v1", prompt_hash="sha256:x", model="m",
                          label_set_hash="sha256:l", target=0.8)
    assert record.needs_label and record.threshold is not None
    fail_v = Verdict(item_id="t#1:scope_fidelity", label="fail", violated_key="k",
                     confidence=0.97, model="m", prompt_hash="sha256:x",
                     rubric="scope_fidelity")
    pass_v = fail_v.model_copy(update={"label": "pass", "violated_key": None})
    r_fail = route_verdict(fail_v, vetoed=False, calibration=record)
    r_pass = route_verdict(pass_v, vetoed=False, calibration=record)
    assert r_fail.calibrated_confidence is not None and r_pass.calibrated_confidence is not None
    # the same raw confidence is worth more on a fail than on a pass here
    assert r_fail.calibrated_confidence > r_pass.calibrated_confidence + 0.1
    # without a label (e.g. a report over raw confidences) the pooled calibrator answers
    assert 0.0 < record.calibrate(0.9) < 1.0


def _constant_confidence(seed: int, p_fail: float, p_pass: float, n: int = 1100
                         ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A judge that reports no confidence (every one 1.0): only its label says anything."""
    rng = np.random.default_rng(seed)
    judge_fail = rng.random(n) < 0.62
    agreed = (rng.random(n) < np.where(judge_fail, p_fail, p_pass)).astype(float)
    return np.ones(n), agreed, judge_fail


def test_a_label_effect_is_seen_when_confidence_says_nothing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Agreement 0.927 on fails and 0.846 on passes (the DevAI judge's): the held-out
    likelihood gain takes the per-label fit far more often than the paired test alone."""
    from judge.calibration import fit as fit_module

    def taken() -> int:
        return sum(fit_calibrator(*_constant_confidence(s, 0.927, 0.846)[:2],
                                  judge_fail=_constant_confidence(s, 0.927, 0.846)[2]
                                  ).method.endswith("_by_label") for s in range(20))

    both = taken()
    monkeypatch.setattr(fit_module, "HELD_OUT_GAIN_NATS", float("inf"))
    paired_alone = taken()
    assert both >= 13 and both >= paired_alone + 4, (both, paired_alone)


def test_no_label_effect_with_constant_confidence_keeps_one_calibrator() -> None:
    for seed in range(20):
        conf, agreed, judge_fail = _constant_confidence(100 + seed, 0.9, 0.9)
        assert not fit_calibrator(conf, agreed, judge_fail=judge_fail).method.endswith(
            "_by_label"), seed


def test_the_devai_judge_gets_a_threshold_from_its_labels() -> None:
    """The published gray-box judge (examples/devai) reports no confidence; its fails agree
    with the people 92.7% of the time, its passes 84.6%: calibrated per label, its fails are
    auto-accepted at target 0.9 and its passes go to people (one pooled calibrator, 89.6%
    for everything, would send everything to people)."""
    from pathlib import Path

    from judge.calibration import calibrate_files

    root = Path(__file__).resolve().parents[1]
    (record,) = calibrate_files(root / "labels" / "devai.jsonl",
                                root / "examples" / "devai" / "verdicts.jsonl", target=0.9)
    assert record.needs_label and record.threshold is not None
    assert record.calibrate(1.0, True) >= record.threshold > record.calibrate(1.0, False)
    assert record.expected_review_share == pytest.approx(415 / 1098, abs=0.01)
    assert record.held_out_lower_bound is not None and record.held_out_lower_bound >= 0.9
