"""Scores as the agreement statistics take them: two raters' scores paired on the items both
scored, and scores snapped to the rubric's allowed values (its codes).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def _pair(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The two vectors as float arrays, restricted to items where both are present."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"expected two 1-D arrays of equal length, got {x.shape} and {y.shape}")
    ok = np.isfinite(x) & np.isfinite(y)
    return x[ok], y[ok]


def snap_to_domain(values: np.ndarray, domain: Sequence[float]) -> np.ndarray:
    """Each value replaced by the nearest allowed rubric value (ties go to the lower one); NaN kept."""
    d = np.asarray(sorted(domain), dtype=float)
    v = np.asarray(values, dtype=float)
    idx = np.searchsorted(d, v)  # d[idx - 1] < v <= d[idx]
    lo, hi = d[np.clip(idx - 1, 0, len(d) - 1)], d[np.clip(idx, 0, len(d) - 1)]
    with np.errstate(invalid="ignore"):
        out = np.where(v - lo <= hi - v, lo, hi)
    out[~np.isfinite(v)] = np.nan
    return out


def _domain_index(codes: np.ndarray, domain: Sequence[float]) -> np.ndarray:
    """Position of each code in the sorted domain (codes must already lie in the domain)."""
    d = np.asarray(sorted(domain), dtype=float)
    idx = np.searchsorted(d, codes)
    idx = np.clip(idx, 0, len(d) - 1)
    if not np.allclose(d[idx], codes):
        raise ValueError("codes outside the value domain; snap them with snap_to_domain first")
    return idx
