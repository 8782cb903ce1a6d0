"""compute_agreement equals scikit-learn on test vectors, degenerate cases included."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest
from sklearn.metrics import (
    accuracy_score,
    cohen_kappa_score,
    confusion_matrix,
    f1_score,
    precision_score,
    recall_score,
)

from judge.stats import (
    compute_agreement,
    grouped_agreement,
    percentile_interval,
    resample_counts,
)


def sklearn_reference(human: list[str], judge: list[str]) -> dict[str, float]:
    """What scikit-learn says on the items both scored (fail = 1), nan where undefined."""
    pairs = [(h, j) for h, j in zip(human, judge, strict=True)
             if h != "unsure" and j != "unscored"]
    y = np.array([1 if h == "fail" else 0 for h, _ in pairs], dtype=int)
    p = np.array([1 if j == "fail" else 0 for _, j in pairs], dtype=int)
    if y.size == 0:
        return {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tn, fp, fn, tp = confusion_matrix(y, p, labels=[0, 1]).ravel()
        return {
            "accuracy": accuracy_score(y, p),
            "cohen_kappa": cohen_kappa_score(y, p, labels=[0, 1]),
            "tpr": recall_score(y, p, zero_division=np.nan),
            "recall": recall_score(y, p, zero_division=np.nan),
            "tnr": recall_score(y, p, pos_label=0, zero_division=np.nan),
            "precision": precision_score(y, p, zero_division=np.nan),
            "f1": f1_score(y, p, zero_division=np.nan),
            "tp": tp, "fp": fp, "fn": fn, "tn": tn,
        }


def assert_matches(human: list[str], judge: list[str]) -> dict[str, object]:
    out = compute_agreement(human, judge, judge_all=judge, n_boot=50, seed=1)
    json.dumps(out, allow_nan=False)  # never NaN or inf in JSON
    ref = sklearn_reference(human, judge)
    assert out["n_unscored"] == judge.count("unscored")
    assert out["n_unsure"] == human.count("unsure")
    if not ref:
        assert out["n_items"] == 0
        for key in ("accuracy", "cohen_kappa", "tpr", "tnr", "precision", "f1"):
            assert out[key] is None and out["reasons"][key]
        return out
    assert out["confusion"] == {k: int(ref[k]) for k in ("tp", "fp", "fn", "tn")}
    for key in ("accuracy", "cohen_kappa", "tpr", "tnr", "precision", "recall", "f1"):
        want = ref[key]
        if math.isnan(want):
            assert out[key] is None, key
            assert out["reasons"][key], key
        else:
            assert out[key] == pytest.approx(want, abs=1e-12), key
    return out


VECTORS = [
    (["fail", "pass", "fail", "pass"], ["fail", "pass", "pass", "fail"]),
    (["fail"] * 5, ["fail", "fail", "pass", "fail", "pass"]),  # no human pass
    (["pass"] * 5, ["pass", "fail", "pass", "pass", "pass"]),  # no human fail
    (["pass"] * 4, ["pass"] * 4),  # one class everywhere: kappa, tpr, precision, f1 undefined
    (["fail"] * 3, ["fail"] * 3),
    (["fail"], ["pass"]),  # a single item
    (["pass"], ["pass"]),
    (["fail", "pass"], ["unscored", "unscored"]),  # all unscored
    (["unsure", "unsure"], ["pass", "fail"]),  # all unsure
    ([], []),
    (["fail", "unsure", "pass", "pass"], ["fail", "fail", "unscored", "pass"]),
]


@pytest.mark.parametrize(("human", "judge"), VECTORS)
def test_equals_sklearn_on_fixed_vectors(human: list[str], judge: list[str]) -> None:
    assert_matches(human, judge)


def test_equals_sklearn_on_random_vectors() -> None:
    rng = np.random.default_rng(7)
    for _ in range(100):
        n = int(rng.integers(1, 40))
        human = rng.choice(["pass", "fail", "unsure"], size=n, p=rng.dirichlet([1, 1, 0.3]))
        judge = rng.choice(["pass", "fail", "unscored"], size=n, p=rng.dirichlet([1, 1, 0.3]))
        assert_matches(human.tolist(), judge.tolist())


def test_unscored_counted_and_left_out() -> None:
    out = compute_agreement(["fail", "pass", "fail"], ["fail", "pass", "unscored"],
                            judge_all=["fail", "pass", "unscored", "pass"], n_boot=20)
    assert out["n_items"] == 2 and out["n_unscored"] == 1
    assert out["n_judged"] == 3  # unscored never counts as pass or fail
    assert out["p_obs"] == pytest.approx(2 / 3)


def test_key_and_evidence_agreement_over_items_both_call_fail() -> None:
    human = ["fail", "fail", "fail", "pass", "fail"]
    judge = ["fail", "fail", "fail", "fail", "pass"]
    out = compute_agreement(
        human, judge, judge_all=judge, n_boot=20,
        human_keys=["a", "b", None, None, "z"], judge_keys=["a", "c", "d", "e", None],
        human_evidence=[4, 5, 6, None, 1], judge_evidence=[4, 5, 7, 2, None])
    # both fail: items 0, 1, 2; the human named no key on item 2, so keys compare on 0 and 1
    assert out["key_agreement"] == pytest.approx(0.5) and out["key_agreement_n"] == 2
    assert out["evidence_agreement"] == pytest.approx(2 / 3)
    assert out["evidence_agreement_n"] == 3


def test_key_agreement_null_with_reason_when_no_item_both_fail() -> None:
    out = compute_agreement(["fail", "pass"], ["pass", "pass"], judge_all=["pass"], n_boot=10,
                            human_keys=["k", None], judge_keys=[None, None])
    assert out["key_agreement"] is None
    assert "both call fail" in out["reasons"]["key_agreement"]


def test_every_formats_key_present() -> None:
    out = compute_agreement(["fail", "pass"], ["fail", "pass"], judge_all=["fail", "pass"],
                            n_boot=10)
    for key in ("n_items", "n_unscored", "n_tied", "n_unsure", "accuracy", "cohen_kappa", "tpr",
                "tnr", "precision", "recall", "f1", "confusion", "human_fail_rate",
                "judge_fail_rate", "key_agreement", "evidence_agreement", "ci",
                "corrected_pass_rate"):
        assert key in out
    assert set(out["ci"]) == {"accuracy", "cohen_kappa", "tpr", "tnr"}


def test_bootstrap_is_seeded_and_reproducible() -> None:
    rng = np.random.default_rng(3)
    human = rng.choice(["pass", "fail"], 500).tolist()
    judge = [h if rng.random() < 0.8 else ("pass" if h == "fail" else "fail") for h in human]
    a = compute_agreement(human, judge, judge_all=judge, n_boot=300, seed=11)
    b = compute_agreement(human, judge, judge_all=judge, n_boot=300, seed=11)
    c = compute_agreement(human, judge, judge_all=judge, n_boot=300, seed=12)
    assert a == b
    assert a["ci"] != c["ci"]
    lo, hi = a["ci"]["accuracy"]
    assert lo < a["accuracy"] < hi


def test_resample_counts_match_explicit_resampling() -> None:
    codes = np.array([0, 1, 1, 2, 3, 3, 3])
    counts = resample_counts(codes, 4, 5, np.random.default_rng(0))
    rng = np.random.default_rng(0)
    idx = rng.integers(0, codes.size, size=(5, codes.size), dtype=np.int32)
    want = np.stack([np.bincount(codes[row], minlength=4) for row in idx])
    np.testing.assert_array_equal(counts, want)
    assert (counts.sum(axis=1) == codes.size).all()


def test_ci_uses_defined_resamples_and_refuses_when_most_are_undefined() -> None:
    # one human fail among 50: about 36% of resamples hold no fail, so tpr is nan there
    human = ["fail"] + ["pass"] * 49
    out = compute_agreement(human, human, judge_all=human, n_boot=200, seed=0)
    assert out["tpr"] == 1.0 and out["ci"]["tpr"] == [1.0, 1.0]
    json.dumps(out, allow_nan=False)
    mostly_nan = np.array([np.nan] * 6 + [0.2, 0.4, 0.6, 0.8])
    assert percentile_interval(mostly_nan) is None
    assert percentile_interval(mostly_nan, min_defined=0.4) == pytest.approx((0.215, 0.785))


def test_corrected_pass_rate_null_with_reason_when_no_better_than_chance() -> None:
    out = compute_agreement(["fail", "pass"], ["pass", "fail"], judge_all=["pass"] * 3,
                            n_boot=20)
    assert out["corrected_pass_rate"] is None
    assert "no better than chance" in out["reasons"]["corrected_pass_rate"]
    none = compute_agreement(["fail", "pass"], ["fail", "pass"], judge_all=None, n_boot=20)
    assert none["corrected_pass_rate"] is None and none["reasons"]["corrected_pass_rate"]


def test_grouped_agreement_equals_per_group_calls() -> None:
    groups = ["a", "b", "a", "b", "a"]
    human = ["fail", "pass", "pass", "pass", "fail"]
    judge = ["fail", "fail", "pass", "pass", "pass"]
    out = grouped_agreement(groups, human, judge, n_boot=30, seed=2,
                            groups_all=["a", "b", "a", "b", "a", "b"],
                            judge_all=[*judge, "pass"])
    assert list(out) == ["a", "b"]
    want_a = compute_agreement(["fail", "pass", "fail"], ["fail", "pass", "pass"],
                               judge_all=["fail", "pass", "pass"], n_boot=30, seed=2)
    assert out["a"] == want_a
    assert out["b"]["n_judged"] == 3


def test_rejects_labels_outside_the_vocabulary() -> None:
    with pytest.raises(ValueError, match="outside"):
        compute_agreement(["fail", "maybe"], ["fail", "pass"], judge_all=None)
    with pytest.raises(ValueError, match="outside"):
        compute_agreement(["fail"], ["unsure"], judge_all=None)
