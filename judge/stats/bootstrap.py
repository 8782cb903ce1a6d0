"""Seeded, vectorized nonparametric bootstrap over category-coded items.

Every statistic this project bootstraps depends on the items only through how many fall in
each category (cells of a confusion table, pass/fail of a verdict). So a resample is an index
matrix row, and its statistic is computed from per-row category counts: numpy over all
resamples at once, in chunks that bound memory (about a million indices per chunk).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

CHUNK_ELEMENTS = 1_000_000  # cache-friendly; the index matrix of a chunk is about 4 MB


def resample_counts(
    codes: NDArray[np.integer], n_categories: int, n_boot: int, rng: np.random.Generator
) -> NDArray[np.int64]:
    """Category counts of `n_boot` bootstrap resamples of `codes` (values 0..n_categories-1).

    Returns an (n_boot, n_categories) array; row b counts the categories of n items drawn
    with replacement. Reproducible for a given generator state. Empty `codes` gives zeros.
    """
    codes = np.asarray(codes)
    n = codes.size
    out = np.zeros((n_boot, n_categories), dtype=np.int64)
    if n == 0 or n_boot <= 0:
        return out
    small = codes.astype(np.uint8 if n_categories <= 255 else np.int64)
    rows = max(1, CHUNK_ELEMENTS // n)
    index_dtype = np.int32 if n < 2**31 - 1 else np.int64
    for start in range(0, n_boot, rows):
        stop = min(n_boot, start + rows)
        idx = rng.integers(0, n, size=(stop - start, n), dtype=index_dtype)
        sampled = small[idx]
        for c in range(n_categories - 1):
            out[start:stop, c] = np.count_nonzero(sampled == c, axis=1)
    out[:, -1] = n - out[:, :-1].sum(axis=1)  # the last category is what is left
    return out


def percentile_interval(
    samples: NDArray[np.floating], level: float = 0.95, min_defined: float = 0.5
) -> tuple[float, float] | None:
    """Percentile bootstrap interval of the defined (non-nan) resample values.

    None when fewer than `min_defined` of the resamples define the statistic: an interval
    made from a minority of resamples would hide how unstable the statistic is.
    """
    s = np.asarray(samples, dtype=np.float64)
    defined = s[np.isfinite(s)]
    if s.size == 0 or defined.size < max(1, min_defined * s.size):
        return None
    alpha = (1.0 - level) / 2.0
    lo, hi = np.quantile(defined, [alpha, 1.0 - alpha])
    return float(lo), float(hi)
