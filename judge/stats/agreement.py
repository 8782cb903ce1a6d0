"""Judge-versus-human agreement over plain arrays (formats §5). Positive class: fail.

`compute_agreement` returns every key of formats §5. A value that is undefined on the data
(e.g. tpr with no human fail) is None, and `reasons[key]` says why: JSON never holds NaN.
Intervals are 95% percentile bootstrap intervals (seeded, reproducible, vectorized): the
labelled pairs are resampled (index matrices) for the agreement metrics, tpr and tnr; the
judged set (`judge_all`) is resampled independently for p_obs (its resampled pass count is
drawn from its exact bootstrap distribution, Binomial(N, p_obs)); the corrected pass rate of
resample b pairs the labelled resample b with the judged resample b.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from judge.stats.bootstrap import percentile_interval, resample_counts
from judge.stats.corrected import corrected_pass_rate
from judge.stats.interrater import kappa_from_counts

HUMAN_LABELS = frozenset({"pass", "fail", "unsure"})
JUDGE_LABELS = frozenset({"pass", "fail", "unscored"})
CI_METHOD = "percentile bootstrap, 95%"

Values = ArrayLike | Sequence[Any]  # per-item values; None (or nan) where not named

REASONS = {
    "empty": "no item has both a scored verdict and a pass/fail human label",
    "accuracy": "no item has both a scored verdict and a pass/fail human label",
    "cohen_kappa": "undefined: human and judge gave every item the same single label "
                   "(chance agreement is 1)",
    "tpr": "undefined: no item has a human fail label",
    "tnr": "undefined: no item has a human pass label",
    "precision": "undefined: the judge called no item fail",
    "f1": "undefined: neither human nor judge called any item fail",
}


def _as_str_array(values: ArrayLike, allowed: frozenset[str], name: str) -> NDArray[np.str_]:
    arr = np.asarray(values, dtype=str)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-d array of labels")
    bad = np.setdiff1d(np.unique(arr), np.array(sorted(allowed)))
    if bad.size:
        raise ValueError(f"{name} holds labels outside {sorted(allowed)}: {bad.tolist()[:3]}")
    return arr


def _num(x: float) -> float | None:
    return None if not math.isfinite(x) else float(x)


def metrics_from_counts(
    tp: ArrayLike, fp: ArrayLike, fn: ArrayLike, tn: ArrayLike
) -> dict[str, NDArray[np.float64]]:
    """Every count-based metric, elementwise over arrays of confusion tables (nan if undefined)."""
    tp_, fp_, fn_, tn_ = (np.asarray(x, dtype=np.float64) for x in (tp, fp, fn, tn))
    n = tp_ + fp_ + fn_ + tn_

    def ratio(num: NDArray[np.float64], den: NDArray[np.float64]) -> NDArray[np.float64]:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.asarray(np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan))

    return {
        "accuracy": ratio(tp_ + tn_, n),
        "cohen_kappa": kappa_from_counts(tp_, fp_, fn_, tn_),
        "tpr": ratio(tp_, tp_ + fn_),
        "tnr": ratio(tn_, tn_ + fp_),
        "precision": ratio(tp_, tp_ + fp_),
        "f1": ratio(2.0 * tp_, 2.0 * tp_ + fp_ + fn_),
        "human_fail_rate": ratio(tp_ + fn_, n),
        "judge_fail_rate": ratio(tp_ + fp_, n),
    }


def _match_share(
    both_fail: NDArray[np.bool_], left: Values | None, right: Values | None, what: str,
    reasons: dict[str, str], key: str,
) -> tuple[float | None, int]:
    """Among items both call fail and both name a value: share naming the same value."""
    if left is None or right is None:
        reasons[key] = f"no {what} given"
        return None, 0
    lv = np.asarray(left, dtype=object)[both_fail]
    rv = np.asarray(right, dtype=object)[both_fail]
    named = np.array([a is not None and b is not None and a == a and b == b
                      for a, b in zip(lv, rv, strict=True)], dtype=bool)
    n = int(named.sum())
    if n == 0:
        reasons[key] = f"no item that both call fail names a {what} on both sides"
        return None, 0
    same = np.array([a == b for a, b in zip(lv[named], rv[named], strict=True)], dtype=bool)
    return float(same.mean()), n


def compute_agreement(
    human: ArrayLike,
    judge: ArrayLike,
    *,
    judge_all: ArrayLike | None,
    human_keys: Values | None = None,
    judge_keys: Values | None = None,
    human_evidence: Values | None = None,
    judge_evidence: Values | None = None,
    n_tied: int = 0,
    n_boot: int = 1000,
    seed: int = 0,
) -> dict[str, Any]:
    """Agreement of a judge with human reference labels, with every key of formats §5.

    `human[i]` (pass/fail/unsure) and `judge[i]` (pass/fail/unscored) label the same item i.
    `judge_all` holds the label of every verdict, labelled or not (for the corrected pass
    rate; None leaves it out with a reason). Keys and evidence arrays (aligned with `human`,
    None for not named) give key and evidence agreement. `n_tied` is passed through (items
    left out because annotators tied). Items with an unsure human label (`n_unsure`) or an
    unscored verdict (`n_unscored`) are left out of every metric; `n_items` counts the rest.
    Intervals: 95% percentile bootstrap with `n_boot` resamples from `seed`.
    """
    h = _as_str_array(human, HUMAN_LABELS, "human")
    j = _as_str_array(judge, JUDGE_LABELS, "judge")
    if h.shape != j.shape:
        raise ValueError("human and judge must have the same length")
    reasons: dict[str, str] = {}
    unsure = h == "unsure"
    unscored = j == "unscored"
    keep = ~unsure & ~unscored
    hf = h[keep] == "fail"
    jf = j[keep] == "fail"
    n = int(keep.sum())
    tp = int(np.count_nonzero(hf & jf))
    fp = int(np.count_nonzero(~hf & jf))
    fn = int(np.count_nonzero(hf & ~jf))
    tn = n - tp - fp - fn
    point = {k: float(v) for k, v in metrics_from_counts(tp, fp, fn, tn).items()}

    out: dict[str, Any] = {
        "n_items": n,
        "n_unscored": int(unscored.sum()),
        "n_tied": int(n_tied),
        "n_unsure": int(unsure.sum()),
    }
    for key in ("accuracy", "cohen_kappa", "tpr", "tnr", "precision"):
        out[key] = _num(point[key])
        if out[key] is None:
            reasons[key] = REASONS["empty"] if n == 0 else REASONS[key]
    out["recall"] = out["tpr"]
    if out["recall"] is None:
        reasons["recall"] = reasons["tpr"]
    out["f1"] = _num(point["f1"])
    if out["f1"] is None:
        reasons["f1"] = REASONS["empty"] if n == 0 else REASONS["f1"]
    out["confusion"] = {"tp": tp, "fp": fp, "fn": fn, "tn": tn}
    for key in ("human_fail_rate", "judge_fail_rate"):
        out[key] = _num(point[key])
        if out[key] is None:
            reasons[key] = REASONS["empty"]

    both_fail = np.zeros(h.shape, dtype=bool)
    both_fail[keep] = hf & jf
    out["key_agreement"], out["key_agreement_n"] = _match_share(
        both_fail, human_keys, judge_keys, "violated_key", reasons, "key_agreement")
    out["evidence_agreement"], out["evidence_agreement_n"] = _match_share(
        both_fail, human_evidence, judge_evidence, "evidence_event", reasons,
        "evidence_agreement")

    rng = np.random.default_rng(seed)
    counts = resample_counts(2 * hf.astype(np.int64) + jf, 4, n_boot, rng)
    boot = metrics_from_counts(counts[:, 3], counts[:, 1], counts[:, 2], counts[:, 0])
    ci: dict[str, list[float] | None] = {}
    for key in ("accuracy", "cohen_kappa", "tpr", "tnr"):
        interval = percentile_interval(boot[key]) if out[key] is not None else None
        ci[key] = list(interval) if interval else None
        if out[key] is not None and interval is None:
            reasons[f"ci.{key}"] = "undefined in most bootstrap resamples (too few items)"
    out["ci"] = ci

    out["corrected_pass_rate"] = None
    out["p_obs"] = None
    out["n_judged"] = 0
    if judge_all is None:
        reasons["corrected_pass_rate"] = "no judged set given"
    else:
        ja = _as_str_array(judge_all, JUDGE_LABELS, "judge_all")
        scored = ja[ja != "unscored"]
        out["n_judged"] = int(scored.size)
        passed = scored == "pass"
        out["p_obs"] = float(passed.mean()) if scored.size else None
        out["corrected_pass_rate"] = _corrected(
            out, passed, boot["tpr"], boot["tnr"], n_boot, rng, reasons)
    out["ci_method"] = CI_METHOD
    out["n_boot"] = n_boot
    out["seed"] = seed
    out["reasons"] = reasons
    return out


def _corrected(
    out: dict[str, Any], passed: NDArray[np.bool_], boot_tpr: NDArray[np.float64],
    boot_tnr: NDArray[np.float64], n_boot: int, rng: np.random.Generator,
    reasons: dict[str, str],
) -> dict[str, Any] | None:
    if passed.size == 0:
        reasons["corrected_pass_rate"] = "the verdicts hold no scored verdict"
        return None
    tpr, tnr = out["tpr"], out["tnr"]
    if tpr is None or tnr is None:
        reasons["corrected_pass_rate"] = "tpr or tnr is undefined on the labelled items"
        return None
    if tpr + tnr <= 1.0:
        reasons["corrected_pass_rate"] = (
            f"tpr + tnr = {tpr + tnr:.3f} <= 1: the judge is no better than chance")
        return None
    estimate = float(corrected_pass_rate(out["p_obs"], tpr, tnr))
    # Resampling the judged set changes only its pass count, whose bootstrap distribution is
    # exactly Binomial(N, p_obs): drawn directly, O(n_boot) instead of O(n_boot * N).
    p_boot = rng.binomial(passed.size, out["p_obs"], size=n_boot) / passed.size
    interval = percentile_interval(corrected_pass_rate(p_boot, boot_tpr, boot_tnr))
    if interval is None:
        reasons["corrected_pass_rate.ci"] = "tpr + tnr <= 1 in most bootstrap resamples"
    return {"estimate": estimate, "ci": list(interval) if interval else None}


def _take(values: NDArray[Any] | None, mask: NDArray[np.bool_]) -> NDArray[Any] | None:
    return None if values is None else values[mask]


def grouped_agreement(
    groups: ArrayLike,
    human: ArrayLike,
    judge: ArrayLike,
    *,
    groups_all: ArrayLike | None = None,
    judge_all: ArrayLike | None = None,
    human_keys: Values | None = None,
    judge_keys: Values | None = None,
    human_evidence: Values | None = None,
    judge_evidence: Values | None = None,
    n_boot: int = 200,
    seed: int = 0,
) -> dict[str, dict[str, Any]]:
    """`compute_agreement` per group, groups in sorted order.

    `groups[i]` names the group of labelled item i; `groups_all[k]` that of `judge_all[k]`
    (both given: each group gets the corrected pass rate over its own judged verdicts).
    """
    g = np.asarray(groups, dtype=str)
    h = np.asarray(human, dtype=str)
    j = np.asarray(judge, dtype=str)
    ga = None if groups_all is None else np.asarray(groups_all, dtype=str)
    ja = None if judge_all is None else np.asarray(judge_all, dtype=str)
    extras: dict[str, Values | None] = {"human_keys": human_keys, "judge_keys": judge_keys,
              "human_evidence": human_evidence, "judge_evidence": judge_evidence}
    arrays: dict[str, NDArray[Any] | None] = {
        k: (None if v is None else np.asarray(v, dtype=object)) for k, v in extras.items()}
    result: dict[str, dict[str, Any]] = {}
    for name in sorted(set(g.tolist())):
        mask = g == name
        sub_all = ja[ga == name] if ja is not None and ga is not None else None
        result[name] = compute_agreement(
            h[mask], j[mask], judge_all=sub_all, n_boot=n_boot, seed=seed,
            human_keys=_take(arrays["human_keys"], mask),
            judge_keys=_take(arrays["judge_keys"], mask),
            human_evidence=_take(arrays["human_evidence"], mask),
            judge_evidence=_take(arrays["judge_evidence"], mask),
        )
    return result
