"""Rank correlation across few units (models), with a permutation p and a bootstrap interval.

- Spearman's rho (Spearman 1904): Pearson's r of the average ranks (ties share their mean
  rank), computed here without scipy so a test can check it against `scipy.stats.spearmanr`.
- Kendall's tau-b (Kendall 1945): (concordant - discordant) / sqrt((n0 - n1)(n0 - n2)),
  ties in either variable corrected.
- p: the permutation test of no association (Pitman 1937): every permutation of one variable
  when n <= `EXACT_UP_TO` (8! = 40,320: exact), else `PERMUTATIONS` random ones with
  p = (b + 1) / (m + 1) (Phipson & Smyth 2010); two-sided, |statistic| at least the observed.
  With few models the permutation distribution is coarse, and the p honest: with 4 models no
  p is below 1/12.
- Interval: the percentile bootstrap over units (Efron & Tibshirani 1993, ch. 13): units drawn
  with replacement, the statistic of each resample (undefined when a resample's ranks are all
  equal; left out); none from fewer than `MIN_UNITS` units, where the bootstrap distribution is
  too coarse to mean anything (with 4 models, 35 distinct resamples).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
from scipy.stats import rankdata

EXACT_UP_TO = 8
PERMUTATIONS = 20_000
RESAMPLES = 4_000
MIN_UNITS = 5
TOO_FEW = f"no interval from fewer than {MIN_UNITS} models"


@dataclass(frozen=True)
class RankCorrelation:
    n: int
    spearman: float | None
    kendall: float | None
    spearman_p: float | None
    kendall_p: float | None
    p_method: str  # "exact permutation (n! orderings)" or "permutation (m random orderings)"
    spearman_ci: list[float] | None
    kendall_ci: list[float] | None
    note: str | None = None  # why something is missing


def ranks(values: np.ndarray, *, descending: bool = False) -> np.ndarray:
    """Average ranks along the last axis, 1 = smallest (`descending`: 1 = largest)."""
    return rankdata(-values if descending else values, method="average", axis=-1)


def _spearman_rows(rx: np.ndarray, ry: np.ndarray) -> np.ndarray:
    """Pearson's r of each row pair of rank matrices (NaN where a row is constant)."""
    dx = rx - rx.mean(axis=-1, keepdims=True)
    dy = ry - ry.mean(axis=-1, keepdims=True)
    den = np.sqrt((dx * dx).sum(-1) * (dy * dy).sum(-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, (dx * dy).sum(-1) / np.where(den > 0, den, 1), np.nan)


def _kendall_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall's tau-b of each row pair (NaN where a row is constant)."""
    i, j = np.triu_indices(x.shape[-1], k=1)
    sx = np.sign(x[..., i] - x[..., j])
    sy = np.sign(y[..., i] - y[..., j])
    s = (sx * sy).sum(-1)
    tx = (sx != 0).sum(-1)  # n0 - n1: pairs not tied in x
    ty = (sy != 0).sum(-1)
    den = np.sqrt(tx.astype(float) * ty)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, s / np.where(den > 0, den, 1), np.nan)


def spearman(x: np.ndarray, y: np.ndarray) -> float | None:
    r = float(_spearman_rows(ranks(np.asarray(x, float)), ranks(np.asarray(y, float))))
    return None if math.isnan(r) else r


def kendall(x: np.ndarray, y: np.ndarray) -> float | None:
    r = float(_kendall_rows(np.asarray(x, float), np.asarray(y, float)))
    return None if math.isnan(r) else r


def _p(stat: np.ndarray, observed: float, exact: bool) -> float:
    hits = int((np.abs(stat) >= abs(observed) - 1e-12).sum())
    return hits / stat.size if exact else (hits + 1) / (stat.size + 1)


def rank_correlation(x: np.ndarray, y: np.ndarray, *, seed: int = 0,
                     resamples: int = RESAMPLES) -> RankCorrelation:
    """Spearman and Kendall between paired `x` and `y` (one value per unit), each with its
    permutation p and bootstrap interval (see the module's docstring)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    n = len(x)
    rho, tau = (spearman(x, y), kendall(x, y)) if n >= 3 else (None, None)
    if rho is None or tau is None:
        return RankCorrelation(n, rho, tau, None, None, "", None, None,
                               "fewer than 3 models, or every model tied on one axis")
    rng = np.random.default_rng(seed)
    exact = n <= EXACT_UP_TO
    if exact:
        order = np.array(list(itertools.permutations(range(n))))
        method = f"exact permutation ({math.factorial(n):,} orderings)"
    else:
        order = np.argsort(rng.random((PERMUTATIONS, n)), axis=1)
        method = f"permutation ({PERMUTATIONS:,} random orderings)"
    yp = y[order]
    rx = ranks(x)
    sp_p = _p(_spearman_rows(np.broadcast_to(rx, yp.shape), ranks(yp)), rho, exact)
    kd_p = _p(_kendall_rows(np.broadcast_to(x, yp.shape), yp), tau, exact)
    if n < MIN_UNITS:
        return RankCorrelation(n, rho, tau, sp_p, kd_p, method, None, None, TOO_FEW)
    draw = rng.integers(0, n, size=(resamples, n))
    bx, by = x[draw], y[draw]
    sp_b = _spearman_rows(ranks(bx), ranks(by))
    kd_b = _kendall_rows(bx, by)
    return RankCorrelation(n, rho, tau, sp_p, kd_p, method, _percentile(sp_b), _percentile(kd_b))


def _percentile(values: np.ndarray) -> list[float] | None:
    v = values[np.isfinite(values)]
    if v.size < values.size / 2:
        return None
    return [float(q) for q in np.percentile(v, [2.5, 97.5])]
