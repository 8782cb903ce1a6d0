"""From paired arrays to a CalibrationRecord: refuse too few labels, fit, threshold, metrics.

The refusal counts items per HUMAN REFERENCE class (pass and fail): a calibration must have
seen the judge on enough passing and enough failing items, whatever its agreement rate.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from judge.calibration.fit import METHODS, Method, fit_calibrator
from judge.calibration.metrics import (
    as_arrays,
    brier_score,
    expected_calibration_error,
    log_loss,
    reliability_curve,
)
from judge.calibration.record import CalibrationMetrics, CalibrationRecord, ReliabilityPoint
from judge.calibration.threshold import choose_threshold
from judge.errors import ConfigError

MIN_PER_CLASS = 30


class TooFewLabelsError(ConfigError):
    """Fewer than the minimum labelled items in a human class; says how many more are needed."""

    def __init__(self, what: str, counts: dict[str, int], minimum: int) -> None:
        self.counts = counts
        self.minimum = minimum
        self.missing = {k: max(0, minimum - v) for k, v in counts.items()}
        short = ", ".join(
            f"{counts[k]} human-{k} (need {self.missing[k]} more)"
            for k in sorted(counts)
            if self.missing[k] > 0
        )
        super().__init__(
            f"{what}: too few labels to calibrate: {short}; at least {minimum} per class"
        )


def class_counts(human_fail: ArrayLike) -> dict[str, int]:
    hf = np.asarray(human_fail, dtype=bool).ravel()
    return {"pass": int((~hf).sum()), "fail": int(hf.sum())}


def check_enough(what: str, human_fail: ArrayLike, minimum: int = MIN_PER_CLASS) -> dict[str, int]:
    """Raise TooFewLabelsError unless both human classes have at least `minimum` items."""
    counts = class_counts(human_fail)
    if min(counts.values()) < minimum:
        raise TooFewLabelsError(what, counts, minimum)
    return counts


def _finite(value: float | None) -> float:
    if value is None or not math.isfinite(value):
        raise ValueError("metric is not finite")
    return value


def _points(prob: ArrayLike, agreed: ArrayLike, n_bins: int) -> list[ReliabilityPoint]:
    return [
        ReliabilityPoint(
            lo=b.lo, hi=b.hi, count=b.count, mean_prob=b.mean_prob, frac_agreed=b.frac_agreed
        )
        for b in reliability_curve(prob, agreed, n_bins)
    ]


def build_record(
    conf: ArrayLike,
    agreed: ArrayLike,
    human_fail: ArrayLike,
    *,
    rubric: str,
    prompt_version: str,
    prompt_hash: str | None,
    model: str,
    label_set_hash: str,
    n_labelled: int | None = None,
    target: float = 0.95,
    alpha: float = 0.05,
    n_folds: int = 5,
    seed: int = 0,
    n_bins: int = 10,
    min_per_class: int = MIN_PER_CLASS,
    methods: tuple[Method, ...] = METHODS,
) -> CalibrationRecord:
    """Calibrate one (rubric, prompt, model) from raw confidences and agreement outcomes.

    `conf[i]` is the judge's raw confidence on item i, `agreed[i]` 1 when its label equals the
    human reference, `human_fail[i]` 1 when the reference label is fail.
    """
    x, y = as_arrays(conf, agreed)
    hf = np.asarray(human_fail, dtype=bool).ravel()
    if hf.size != x.size:
        raise ValueError("human_fail differs in length from conf")
    what = f"rubric {rubric} (prompt {prompt_version}, model {model})"
    counts = check_enough(what, hf, min_per_class)
    # the judge said fail where it agreed with a fail reference or disagreed with a pass
    judge_fail = np.where(y == 1.0, hf, ~hf)
    fit = fit_calibrator(x, y, n_folds=n_folds, seed=seed, methods=methods,
                         judge_fail=judge_fail)
    choice = choose_threshold(fit.oof_prob, y, target=target, alpha=alpha)
    metrics = CalibrationMetrics(
        agreement=float(y.mean()),
        n_agreed=int(y.sum()),
        n_disagreed=int(y.size - y.sum()),
        ece_raw=_finite(expected_calibration_error(x, y, n_bins)),
        brier_raw=_finite(brier_score(x, y)),
        log_loss_raw=_finite(log_loss(x, y)),
        ece=_finite(expected_calibration_error(fit.oof_prob, y, n_bins)),
        brier=_finite(brier_score(fit.oof_prob, y)),
        log_loss=_finite(log_loss(fit.oof_prob, y)),
        cv_log_loss={m: (v if math.isfinite(v) else None) for m, v in fit.cv_log_loss.items()},
        n_bins=n_bins,
        reliability_raw=_points(x, y, n_bins),
        reliability=_points(fit.oof_prob, y, n_bins),
    )
    return CalibrationRecord(
        rubric=rubric,
        prompt_version=prompt_version,
        prompt_hash=prompt_hash,
        model=model,
        label_set_hash=label_set_hash,
        n=int(x.size),
        n_per_class=counts,
        n_labelled=int(n_labelled if n_labelled is not None else x.size),
        metrics=metrics,
        method=fit.method,
        calibrator=fit.calibrator,
        n_folds=fit.n_folds,
        seed=seed,
        target=target,
        alpha=alpha,
        threshold=choice.threshold,
        expected_review_share=choice.review_share,
        held_out_accepted_agreement=choice.agreement,
        held_out_lower_bound=choice.lower_bound,
    )
