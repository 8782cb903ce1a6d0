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

Method = Literal["isotonic", "platt"]
METHODS: tuple[Method, ...] = ("isotonic", "platt")


class IsotonicCalibrator(BaseModel):
    """Piecewise-linear map through (x_thresholds, y_thresholds); flat beyond the ends."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["isotonic"] = "isotonic"
    x_thresholds: list[float]
    y_thresholds: list[float]

    def predict(self, raw: ArrayLike) -> FloatArray:
        x = np.asarray(raw, dtype=np.float64)
        return np.asarray(np.interp(x, self.x_thresholds, self.y_thresholds), dtype=np.float64)


class PlattCalibrator(BaseModel):
    """sigmoid(coef * raw + intercept)."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["platt"] = "platt"
    coef: float
    intercept: float

    def predict(self, raw: ArrayLike) -> FloatArray:
        x = np.asarray(raw, dtype=np.float64)
        z = self.coef * x + self.intercept
        return np.asarray(1.0 / (1.0 + np.exp(-z)), dtype=np.float64)


Calibrator = Annotated[IsotonicCalibrator | PlattCalibrator, Field(discriminator="kind")]


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


@dataclass(frozen=True)
class CalibrationFit:
    method: Method
    calibrator: IsotonicCalibrator | PlattCalibrator  # refitted on every item
    cv_log_loss: dict[str, float]  # per method, on held-out folds
    oof_prob: FloatArray  # the winner's held-out prediction for each item
    fold: np.ndarray  # which fold held each item out
    n_folds: int


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
) -> CalibrationFit:
    """Choose among `methods` by cross-validated log loss; refit the winner on all items."""
    x, y = as_arrays(conf, agreed)
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
            model = FITTERS[method](x[~held], y[~held])
            pred[held] = model.predict(x[held])
        oof[method] = pred
        loss = log_loss(pred, y)
        losses[method] = float(loss) if loss is not None else math.inf
    best: Method = min(methods, key=lambda m: (losses[m], METHODS.index(m)))
    final = FITTERS[best](x, y)
    return CalibrationFit(
        method=best, calibrator=final, cv_log_loss=losses, oof_prob=oof[best], fold=fold, n_folds=k
    )
