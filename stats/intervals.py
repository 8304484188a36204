"""The results' interval rule, from the variance of case-cluster resamples: a share gets a
Wilson score interval with an effective sample size, a difference a t interval.

Both start from the bootstrap variance of the estimate over resamples of cases (the clusters,
`stats.resample`), scaled by n / (n - 1) for n resampling units (the bootstrap variance of a
mean of n independent units is the plug-in variance, low by that factor; Davison & Hinkley
1997, sec. 2.3 and 3.8), with n - 1 degrees of freedom for the small-sample quantile.

- A share or a score on 0-1 (pass@1, pass@k, top-k, the rubric score): the Wilson score
  interval (Wilson 1927) at the effective sample size n* = p(1 - p) / v of the design-based
  variance v, shrunk by (z / t_{n-1})^2 so the interval has the width of a t interval where the
  normal one would be right: Korn & Graubard 1998 (Survey Methodology 24:193-201), with the
  Wilson form that Dean & Pagano 2015 (J. Surv. Stat. Methodol. 3:484-503) found to cover in
  clustered samples. Where no spread was seen (p = 0 or 1, or v = 0), n* is the number of units,
  as if each case were one observation: the interval keeps a width of its own, never [1, 1].
- A difference of two estimates (`nmb results --compare`): d +/- t_{n-1} sqrt(v).

Below `MIN_CASES` cases there is no interval at all (`TOO_FEW`): docs/results.md, and the
coverage simulations of `benchmarks/bench_interval_coverage.py`.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special, stats

MIN_CASES = 5
TOO_FEW = "too few cases"
CONFIDENCE = 0.95
NO_SPREAD = 1e-12  # a variance at most this is rounding error: no spread was seen


def design_variance(resampled: np.ndarray, units: int) -> float:
    """The variance of the finite resamples, scaled by units / (units - 1)."""
    v = np.asarray(resampled, dtype=float)
    v = v[np.isfinite(v)]
    if units < 2 or v.size < 2:
        return math.nan
    return float(v.var() * units / (units - 1))


def _quantiles(units: int, confidence: float) -> tuple[float, float]:
    """(z, t with units - 1 degrees of freedom) for a two-sided `confidence` interval."""
    return float(special.ndtri(0.5 + confidence / 2)), float(stats.t.ppf(0.5 + confidence / 2,
                                                                         units - 1))


def wilson(p: float, n: float, z: float) -> list[float]:
    """The Wilson score interval of a share p observed on n (possibly effective) trials."""
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z / denominator * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return [max(0.0, centre - half), min(1.0, centre + half)]


def share_interval(p: float, variance: float, units: int, *,
                   confidence: float = CONFIDENCE) -> list[float]:
    """The Wilson interval of a share (or a 0-1 score) `p` whose design-based variance is
    `variance`, from `units` resampling units (at least 2)."""
    z, t = _quantiles(units, confidence)
    spread = 0 < p < 1 and math.isfinite(variance) and variance > NO_SPREAD
    n_eff = p * (1 - p) / variance if spread else float(units)
    return wilson(p, n_eff * (z / t) ** 2, z)


def difference_interval(d: float, variance: float, units: int, *,
                        confidence: float = CONFIDENCE) -> list[float]:
    """d +/- t_{units-1} sqrt(variance)."""
    _, t = _quantiles(units, confidence)
    half = t * math.sqrt(max(variance, 0.0))
    return [d - half, d + half]
