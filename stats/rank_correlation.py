"""Rank correlation across few units (models), with a permutation p and a bootstrap interval.

- Spearman's rho (Spearman 1904) and Kendall's tau-b (Kendall 1945): `stats.correlation`'s
  row-wise `spearman_rows` and `kendall_rows` (the point estimates of `stats.correlation.spearman`
  and `kendall`, bit for bit), on the pair, its permutations and its resamples.
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

from stats.correlation import kendall_rows, ranks, spearman_rows

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


def _defined(value: np.ndarray) -> float | None:
    v = float(value)
    return None if math.isnan(v) else v


def _p(stat: np.ndarray, observed: float, exact: bool) -> float:
    hits = int((np.abs(stat) >= abs(observed) - 1e-12).sum())
    return hits / stat.size if exact else (hits + 1) / (stat.size + 1)


def rank_correlation(x: np.ndarray, y: np.ndarray, *, seed: int = 0,
                     resamples: int = RESAMPLES) -> RankCorrelation:
    """Spearman and Kendall between paired `x` and `y` (one value per unit), each with its
    permutation p and bootstrap interval (see the module's docstring)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    n = len(x)
    rho, tau = ((_defined(spearman_rows(ranks(x), ranks(y))), _defined(kendall_rows(x, y)))
                if n >= 3 else (None, None))
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
    sp_p = _p(spearman_rows(np.broadcast_to(rx, yp.shape), ranks(yp)), rho, exact)
    kd_p = _p(kendall_rows(np.broadcast_to(x, yp.shape), yp), tau, exact)
    if n < MIN_UNITS:
        return RankCorrelation(n, rho, tau, sp_p, kd_p, method, None, None, TOO_FEW)
    draw = rng.integers(0, n, size=(resamples, n))
    bx, by = x[draw], y[draw]
    sp_b = spearman_rows(ranks(bx), ranks(by))
    kd_b = kendall_rows(bx, by)
    return RankCorrelation(n, rho, tau, sp_p, kd_p, method, _percentile(sp_b), _percentile(kd_b))


def _percentile(values: np.ndarray) -> list[float] | None:
    v = values[np.isfinite(values)]
    if v.size < values.size / 2:
        return None
    return [float(q) for q in np.percentile(v, [2.5, 97.5])]
