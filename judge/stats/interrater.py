"""Chance-corrected agreement between raters: Cohen's kappa (two) and Krippendorff's alpha.

Both take plain integer-coded arrays and return `nan` where the statistic is undefined
(callers turn that into null with a reason). Everything is vectorized with numpy.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

FloatArray = NDArray[np.float64]


def kappa_from_counts(tp: ArrayLike, fp: ArrayLike, fn: ArrayLike, tn: ArrayLike) -> FloatArray:
    """Cohen's kappa of a 2x2 confusion table, elementwise over arrays of tables.

    kappa = (p_o - p_e) / (1 - p_e), computed as (n(tp+tn) - S) / (n^2 - S) with
    S = (tp+fn)(tp+fp) + (tn+fp)(tn+fn). `nan` when undefined: no items, or both raters
    gave every item the same single label (p_e = 1).
    """
    tp_, fp_, fn_, tn_ = (np.asarray(x, dtype=np.float64) for x in (tp, fp, fn, tn))
    n = tp_ + fp_ + fn_ + tn_
    s = (tp_ + fn_) * (tp_ + fp_) + (tn_ + fp_) * (tn_ + fn_)
    num = n * (tp_ + tn_) - s
    den = n * n - s
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)
    return np.asarray(out, dtype=np.float64)


def cohen_kappa(a: NDArray[np.integer], b: NDArray[np.integer]) -> float:
    """Cohen's kappa of two raters' integer codes (any number of categories); nan if undefined."""
    a = np.asarray(a)
    b = np.asarray(b)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError("cohen_kappa needs two 1-d arrays of the same length")
    n = a.size
    if n == 0:
        return float("nan")
    cats, inv = np.unique(np.concatenate([a, b]), return_inverse=True)
    k = cats.size
    ia, ib = inv[:n], inv[n:]
    table = np.bincount(ia * k + ib, minlength=k * k).reshape(k, k).astype(np.float64)
    po = np.trace(table) / n
    pe = float(table.sum(axis=1) @ table.sum(axis=0)) / (n * n)
    if pe >= 1.0:
        return float("nan")
    return float((po - pe) / (1.0 - pe))


def krippendorff_alpha_nominal(data: NDArray[np.integer]) -> float:
    """Krippendorff's alpha for nominal data.

    `data` is a raters x units matrix of integer category codes >= 0, with -1 for missing.
    Units with fewer than two values are not pairable and are ignored. Uses the coincidence
    matrix: alpha = 1 - (n - 1) * (n - sum_c o_cc) / (n^2 - sum_c n_c^2).
    `nan` when undefined (fewer than two pairable values, or a single category used).
    """
    d = np.asarray(data)
    if d.ndim != 2:
        raise ValueError("krippendorff_alpha_nominal needs a raters x units matrix")
    present = d >= 0
    if not present.any():
        return float("nan")
    k = int(d[present].max()) + 1
    n_units = d.shape[1]
    unit_idx = np.broadcast_to(np.arange(n_units), d.shape)[present]
    counts = np.bincount(unit_idx * k + d[present], minlength=n_units * k)
    counts = counts.reshape(n_units, k).astype(np.float64)  # values per unit and category
    m = counts.sum(axis=1)
    pairable = m >= 2
    counts, m = counts[pairable], m[pairable]
    if counts.shape[0] == 0:
        return float("nan")
    # Coincidence matrix diagonal and marginals: o_cc = sum_u N_uc (N_uc - 1) / (m_u - 1),
    # n_c = sum_u N_uc (each value contributes m_u - 1 pairs, each weighted 1 / (m_u - 1)).
    o_diag = (counts * (counts - 1.0) / (m - 1.0)[:, None]).sum(axis=0)
    n_c = counts.sum(axis=0)
    n = float(n_c.sum())
    expected = n * n - float((n_c * n_c).sum())
    if expected <= 0:
        return float("nan")
    observed = n - float(o_diag.sum())
    return float(1.0 - (n - 1.0) * observed / expected)
