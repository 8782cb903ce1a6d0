"""Fit a calibrator from raw judge confidence to P(judge agrees with the human reference).

Two methods, both monotone non-decreasing in the raw confidence:
- isotonic: scikit-learn `IsotonicRegression`, flat outside the data, its outputs kept
  1/(n+2) away from 0 and 1;
- platt: a logistic curve sigmoid(coef * conf + intercept) fitted by `LogisticRegression`.
The method with the lower cross-validated log loss wins. The out-of-fold predictions of the
winner are kept: metrics and the routing threshold are computed on them, never on the data
a model was fitted to. The final calibrator is then refitted on every item.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Literal

import numpy as np
from numpy.typing import ArrayLike
from pydantic import BaseModel, ConfigDict, Field

# scikit-learn is imported where a fit happens: applying a stored calibrator (routing) needs
# only numpy, and importing scikit-learn costs about a second.
from judge.calibration.metrics import FloatArray, as_arrays, log_loss

Method = Literal["isotonic", "platt", "isotonic_by_label", "platt_by_label"]
METHODS: tuple[Method, ...] = ("isotonic", "platt")
#: tried as well when the judge's labels are given: one calibrator per judge label, since a
#: judge's confidence often means something different on its passes and on its fails
LABEL_METHODS: tuple[Method, ...] = ("isotonic_by_label", "platt_by_label")
ALL_METHODS: tuple[Method, ...] = METHODS + LABEL_METHODS


class IsotonicCalibrator(BaseModel):
    """Piecewise-linear map through (x_thresholds, y_thresholds); flat beyond the ends."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["isotonic"] = "isotonic"
    x_thresholds: list[float]
    y_thresholds: list[float]

    def predict(self, raw: ArrayLike, judge_fail: ArrayLike | None = None) -> FloatArray:
        x = np.asarray(raw, dtype=np.float64)
        return np.asarray(np.interp(x, self.x_thresholds, self.y_thresholds), dtype=np.float64)


class PlattCalibrator(BaseModel):
    """sigmoid(coef * raw + intercept)."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["platt"] = "platt"
    coef: float
    intercept: float

    def predict(self, raw: ArrayLike, judge_fail: ArrayLike | None = None) -> FloatArray:
        x = np.asarray(raw, dtype=np.float64)
        z = self.coef * x + self.intercept
        return np.asarray(1.0 / (1.0 + np.exp(-z)), dtype=np.float64)


Single = Annotated[IsotonicCalibrator | PlattCalibrator, Field(discriminator="kind")]


class ByLabelCalibrator(BaseModel):
    """One calibrator for the judge's fail verdicts and one for its passes."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["by_label"] = "by_label"
    on_fail: Single
    on_pass: Single
    pooled: Single  # for a caller that has no labels (e.g. a report over raw confidences)

    def predict(self, raw: ArrayLike, judge_fail: ArrayLike | None = None) -> FloatArray:
        x = np.asarray(raw, dtype=np.float64)
        if judge_fail is None:
            return self.pooled.predict(x)
        jf = np.broadcast_to(np.asarray(judge_fail, dtype=bool), x.shape)
        return np.asarray(np.where(jf, self.on_fail.predict(x), self.on_pass.predict(x)),
                          dtype=np.float64)


Calibrator = Annotated[IsotonicCalibrator | PlattCalibrator | ByLabelCalibrator,
                       Field(discriminator="kind")]


def fit_isotonic(conf: ArrayLike, agreed: ArrayLike) -> IsotonicCalibrator:
    x, y = as_arrays(conf, agreed)
    if x.size == 0:
        raise ValueError("cannot fit a calibrator on no items")
    from sklearn.isotonic import IsotonicRegression

    iso = IsotonicRegression(y_min=0.0, y_max=1.0, increasing=True, out_of_bounds="clip")
    iso.fit(x, y)
    # A finite sample never shows certainty: keep outputs 1/(n+2) away from 0 and 1, so one
    # held-out surprise costs a bounded log loss instead of 34 nats.
    margin = 1.0 / (x.size + 2.0)
    return IsotonicCalibrator(
        x_thresholds=[float(v) for v in iso.X_thresholds_],
        y_thresholds=[float(v) for v in np.clip(iso.y_thresholds_, margin, 1.0 - margin)],
    )


def fit_platt(conf: ArrayLike, agreed: ArrayLike) -> PlattCalibrator:
    x, y = as_arrays(conf, agreed)
    if x.size == 0:
        raise ValueError("cannot fit a calibrator on no items")
    if np.unique(y).size < 2:  # one outcome only: a constant at its (clipped) rate
        rate = min(max(float(y.mean()), 1e-6), 1.0 - 1e-6)
        return PlattCalibrator(coef=0.0, intercept=math.log(rate / (1.0 - rate)))
    # liblinear: same optimum as lbfgs here (C=1e6, one feature), several times faster
    from sklearn.linear_model import LogisticRegression

    lr = LogisticRegression(C=1e6, solver="liblinear", max_iter=1000)
    lr.fit(x.reshape(-1, 1), y.astype(np.int64))
    return PlattCalibrator(coef=float(lr.coef_[0, 0]), intercept=float(lr.intercept_[0]))


FITTERS: dict[str, Callable[[ArrayLike, ArrayLike], IsotonicCalibrator | PlattCalibrator]] = {
    "isotonic": fit_isotonic,
    "platt": fit_platt,
}

AnyCalibrator = IsotonicCalibrator | PlattCalibrator | ByLabelCalibrator


def fit_method(method: str, x: FloatArray, y: FloatArray,
               judge_fail: np.ndarray | None) -> AnyCalibrator:
    """Fit one method; `*_by_label` fits its base method per judge label (a label with
    fewer than 2 items borrows the model fitted on every item)."""
    if not method.endswith("_by_label"):
        return FITTERS[method](x, y)
    if judge_fail is None:
        raise ValueError(f"method {method} needs the judge's labels")
    base = FITTERS[method.removesuffix("_by_label")]
    pooled = base(x, y)
    parts = []
    for mask in (judge_fail, ~judge_fail):
        parts.append(base(x[mask], y[mask]) if int(mask.sum()) >= 2 else pooled)
    return ByLabelCalibrator(on_fail=parts[0], on_pass=parts[1], pooled=pooled)


#: half the 99.9% point of chi-square with one degree of freedom (10.83), in nats
HELD_OUT_GAIN_NATS = 5.414


def clear_gain(diff: FloatArray, *, constant_confidence: bool = False) -> bool:
    """Whether per-label calibrators (twice the parameters) earned their place: `diff` is,
    per item, the held-out log loss of the per-label fit minus the pooled fit's.

    The paired mean difference must lie two standard errors below zero. When every raw
    confidence is the same (`constant_confidence`: a judge that reports none, written as
    1.0), the pooled fit is one constant and the per-label fit two, so the question is only
    whether the judge's fails and passes agree with people at different rates; the paired
    test is weak there (its differences are few and large), and a held-out log-likelihood
    gain, -sum(diff), above 5.41 nats also counts: a cross-validated likelihood ratio (a
    held-out log likelihood is about the in-sample one less the number of parameters, so
    this asks the in-sample statistic for chi-square(1) at 99.9% and more). Simulated with
    1,100 items and a constant confidence (benchmarks/label_effect.py): with no label effect
    neither rule took the per-label fit (0 of 100 runs); with agreement 0.927 on fails and
    0.846 on passes (the DevAI judge's, examples/devai) the paired test alone took it in 42
    of 100 runs, with the gain rule 74."""
    if diff.size < 2:
        return False
    se = float(diff.std(ddof=1) / math.sqrt(diff.size))
    if float(diff.mean()) + 2.0 * se < 0.0:
        return True
    return constant_confidence and -float(diff.sum()) > HELD_OUT_GAIN_NATS


@dataclass(frozen=True)
class CalibrationFit:
    method: Method
    calibrator: AnyCalibrator  # refitted on every item
    cv_log_loss: dict[str, float]  # per method, on held-out folds
    oof_prob: FloatArray  # the winner's held-out prediction for each item
    fold: np.ndarray  # which fold held each item out
    n_folds: int


def _item_losses(prob: FloatArray, y: FloatArray) -> FloatArray:
    p = np.clip(prob, 1e-12, 1.0 - 1e-12)
    return np.asarray(-(y * np.log(p) + (1.0 - y) * np.log(1.0 - p)), dtype=np.float64)


def fold_ids(agreed: FloatArray, n_folds: int, seed: int) -> np.ndarray:
    """Stratified by outcome when each outcome has at least n_folds items, plain k-fold else."""
    n = agreed.size
    k = max(2, min(n_folds, n))
    counts = np.bincount(agreed.astype(np.int64), minlength=2)
    from sklearn.model_selection import KFold, StratifiedKFold

    splitter: StratifiedKFold | KFold
    if counts.min() >= k:
        splitter = StratifiedKFold(n_splits=k, shuffle=True, random_state=seed)
    else:
        splitter = KFold(n_splits=k, shuffle=True, random_state=seed)
    fold = np.empty(n, dtype=np.int64)
    for i, (_, test) in enumerate(splitter.split(np.zeros(n), agreed.astype(np.int64))):
        fold[test] = i
    return fold


def fit_calibrator(
    conf: ArrayLike,
    agreed: ArrayLike,
    *,
    n_folds: int = 5,
    seed: int = 0,
    methods: tuple[Method, ...] = METHODS,
    judge_fail: ArrayLike | None = None,
) -> CalibrationFit:
    """Choose among `methods` by cross-validated log loss; refit the winner on all items.

    With `judge_fail` (1 where the judge said fail), the per-label methods compete too."""
    x, y = as_arrays(conf, agreed)
    jf = None if judge_fail is None else np.asarray(judge_fail, dtype=bool).ravel()
    if jf is not None:
        if jf.size != x.size:
            raise ValueError("judge_fail differs in length from conf")
        methods = tuple(dict.fromkeys(methods + LABEL_METHODS))
    else:
        methods = tuple(m for m in methods if not m.endswith("_by_label"))
    if x.size < 2:
        raise ValueError("need at least 2 items to cross-validate a calibrator")
    if not methods:
        raise ValueError("no calibration method given")
    fold = fold_ids(y, n_folds, seed)
    k = int(fold.max()) + 1
    oof: dict[str, FloatArray] = {}
    losses: dict[str, float] = {}
    for method in methods:
        pred = np.empty_like(x)
        for i in range(k):
            held = fold == i
            model = fit_method(method, x[~held], y[~held],
                               None if jf is None else jf[~held])
            pred[held] = model.predict(x[held], None if jf is None else jf[held])
        oof[method] = pred
        loss = log_loss(pred, y)
        losses[method] = float(loss) if loss is not None else math.inf
    best: Method = min(methods, key=lambda m: (losses[m], ALL_METHODS.index(m)))
    pooled = [m for m in methods if not m.endswith("_by_label")]
    if best.endswith("_by_label") and pooled:
        simple: Method = min(pooled, key=lambda m: (losses[m], ALL_METHODS.index(m)))
        if not clear_gain(_item_losses(oof[best], y) - _item_losses(oof[simple], y),
                          constant_confidence=bool(np.all(x == x[0]))):
            best = simple
    final = fit_method(best, x, y, jf)
    return CalibrationFit(
        method=best, calibrator=final, cv_log_loss=losses, oof_prob=oof[best], fold=fold, n_folds=k
    )
