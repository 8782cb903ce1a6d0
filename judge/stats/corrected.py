"""The corrected pass rate (formats §5): the judge's observed pass rate, corrected for its errors.

With positive class fail, tpr = P(judge fail | human fail), tnr = P(judge pass | human pass),
and p_obs the judge's observed pass rate over every scored verdict, the true pass rate is
theta = (p_obs + tpr - 1) / (tpr + tnr - 1) (Rogan-Gladen), clipped to [0, 1].
It is undefined when tpr + tnr <= 1 (the judge is no better than chance).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray


def corrected_pass_rate(p_obs: ArrayLike, tpr: ArrayLike, tnr: ArrayLike) -> NDArray[np.float64]:
    """Elementwise corrected pass rate; nan where any input is nan or tpr + tnr <= 1."""
    p = np.asarray(p_obs, dtype=np.float64)
    a = np.asarray(tpr, dtype=np.float64)
    b = np.asarray(tnr, dtype=np.float64)
    den = a + b - 1.0
    ok = np.isfinite(p) & np.isfinite(den) & (den > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        theta = np.where(ok, (p + a - 1.0) / np.where(ok, den, 1.0), np.nan)
    return np.asarray(np.clip(theta, 0.0, 1.0), dtype=np.float64)
