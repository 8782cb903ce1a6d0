"""Cohen's kappa and Krippendorff's alpha equal scikit-learn and the krippendorff package."""

from __future__ import annotations

import math
import warnings

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from judge.stats import cohen_kappa, krippendorff_alpha_nominal
from judge.stats.interrater import kappa_from_counts


def package_alpha(data: np.ndarray) -> float:
    """The krippendorff package's nominal alpha; nan where it refuses (undefined)."""
    rel = np.where(data >= 0, data, np.nan).astype(float)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # it divides 0 by 0 on some undefined inputs
            return float(krippendorff.alpha(reliability_data=rel,
                                            level_of_measurement="nominal"))
    except ValueError:
        return float("nan")


def same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b, abs=1e-10)


def test_cohen_kappa_equals_sklearn_on_random_vectors() -> None:
    rng = np.random.default_rng(5)
    for _ in range(200):
        n = int(rng.integers(1, 30))
        k = int(rng.integers(1, 4))
        a = rng.integers(0, k, n)
        b = np.where(rng.random(n) < 0.6, a, rng.integers(0, k, n))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = cohen_kappa_score(a, b)
        assert same(cohen_kappa(a, b), float(want)), (a, b)


def test_kappa_from_counts_is_vectorized_and_matches_sklearn() -> None:
    tables = np.array([[3, 1, 2, 4], [0, 0, 0, 5], [5, 0, 0, 0], [1, 2, 0, 0], [0, 0, 0, 0]])
    got = kappa_from_counts(*tables.T)
    for (tp, fp, fn, tn), value in zip(tables, got, strict=True):
        y = [1] * (tp + fn) + [0] * (fp + tn)
        p = [1] * tp + [0] * fn + [1] * fp + [0] * tn
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = cohen_kappa_score(y, p, labels=[0, 1]) if y else float("nan")
        assert same(float(value), float(want))


def test_alpha_equals_krippendorff_package_on_random_matrices() -> None:
    rng = np.random.default_rng(9)
    for _ in range(200):
        raters = int(rng.integers(2, 6))
        units = int(rng.integers(1, 25))
        k = int(rng.integers(2, 4))
        truth = rng.integers(0, k, units)
        noise = rng.integers(0, k, (raters, units))
        data = np.where(rng.random((raters, units)) < 0.7, truth, noise)
        data = np.where(rng.random((raters, units)) < 0.25, -1, data)
        assert same(krippendorff_alpha_nominal(data), package_alpha(data)), data


@pytest.mark.parametrize("data", [
    np.array([[1, 1, -1], [1, 1, 1]]),  # one category only: undefined
    np.array([[1, 0, -1], [-1, -1, 1]]),  # no unit with two values: undefined
    np.array([[0], [1]]),  # a single unit
    np.array([[-1, -1], [-1, -1]]),  # nothing at all
    np.array([[0, 1, 0, 1], [0, 1, 0, 1], [0, 1, 1, -1]]),
])
def test_alpha_degenerate_cases(data: np.ndarray) -> None:
    assert same(krippendorff_alpha_nominal(data), package_alpha(data))


def test_two_raters_full_data_alpha_close_to_kappa() -> None:
    rng = np.random.default_rng(1)
    a = rng.integers(0, 2, 400)
    b = np.where(rng.random(400) < 0.8, a, 1 - a)
    alpha = krippendorff_alpha_nominal(np.stack([a, b]))
    assert alpha == pytest.approx(cohen_kappa(a, b), abs=0.01)
