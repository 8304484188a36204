"""Agreement on the scores' own scale: the Bland-Altman bias and limits of agreement with their
intervals (Bland & Altman 1986, 1999; several observations per case: Bland & Altman 2007, by
the delete-one-case jackknife), and the mean absolute error with exact and within-one-level
agreement of rubric codes. Results: `stats.agreement_types`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import stats

from stats.agreement_types import Absolute, BlandAltman, Interval, interval, plain_float
from stats.resample import MIN_CLUSTER_UNITS, few_cases_warning, jackknife_interval, unit_sums
from stats.scores import _domain_index, _pair, snap_to_domain

Z95 = 1.959963984540054  # standard normal 97.5% quantile


def _ba_from_sums(s: np.ndarray, z: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(bias, lower limit, upper limit) from the summed columns 1, d, d^2 of the differences."""
    n, sd, sdd = s[..., 0], s[..., 1], s[..., 2]
    with np.errstate(invalid="ignore", divide="ignore"):
        bias = sd / n
        spread = z * np.sqrt(np.maximum(sdd - n * bias * bias, 0) / (n - 1))
    return bias, bias - spread, bias + spread


def bland_altman(a: np.ndarray, b: np.ndarray, *, z: float = Z95,
                 clusters: np.ndarray | None = None, confidence: float = 0.95) -> BlandAltman:
    """Bland-Altman agreement of a with b (Bland & Altman 1986, Lancet i:307-310; CIs per their
    1986 paper and 1999, Stat Methods Med Res 8:135-160): bias = mean(a - b), SD of the
    differences (n - 1 divisor), limits of agreement bias -/+ z SD with z = 1.959964, the
    standard normal 97.5 % quantile (Bland & Altman 1999, sec. 2; the 1986 paper rounds it to 2;
    not a t quantile), and 95 % CIs of the bias and of each limit with the t quantile t(0.975,
    n - 1), SE(bias) = SD/sqrt(n) and SE(limit) ~= SD sqrt(3/n).

    With `clusters` (each item's case) the items of a case are not taken as independent
    (several observations per subject, Bland & Altman 2007, J Biopharm Stat 17:571-582): the
    three CIs are the delete-one-case jackknife intervals of the bias and of each limit with
    t(G - 1) for G cases (`jackknife_interval`), none from fewer than `MIN_CLUSTER_UNITS` cases,
    with `warning` below `MIN_R_CASES`; the estimates are the same.
    """
    xa, xb = _pair(a, b)
    n = len(xa)
    if n < 2:
        return BlandAltman(n=n, bias=None, sd=None, loa=[None, None])
    d = xa - xb
    bias = float(d.mean())
    sd = float(d.std(ddof=1))
    lo, hi = bias - z * sd, bias + z * sd
    if clusters is not None:
        ok = np.isfinite(np.asarray(a, dtype=float)) & np.isfinite(np.asarray(b, dtype=float))
        units = np.unique(np.asarray(clusters)[ok], return_inverse=True)[1].ravel()
        g = int(units.max()) + 1
        cis: list[Interval | None] = [None, None, None]
        if g >= MIN_CLUSTER_UNITS:
            per_unit = unit_sums(np.column_stack([np.ones(n), d - bias, (d - bias) ** 2]),
                                 units, g)
            reps = _ba_from_sums(per_unit.sum(axis=0) - per_unit, z)
            cis = [interval(jackknife_interval(point - bias, rep, confidence)) for point, rep
                   in zip((bias, lo, hi), reps, strict=True)]
            cis = [[None if v is None else v + bias for v in ci] for ci in cis]
        return BlandAltman(n=n, bias=plain_float(bias), sd=plain_float(sd),
                           loa=interval((lo, hi)), bias_ci95=cis[0], loa_lower_ci95=cis[1],
                           loa_upper_ci95=cis[2], units=g, unit="case",
                           warning=few_cases_warning(g, True, "Bland-Altman"))
    t = stats.t.ppf(0.5 + confidence / 2, n - 1)
    se_bias = sd / math.sqrt(n)
    se_loa = sd * math.sqrt(3 / n)
    return BlandAltman(
        n=n, bias=plain_float(bias), sd=plain_float(sd), loa=interval((lo, hi)),
        bias_ci95=interval((bias - t * se_bias, bias + t * se_bias)),
        loa_lower_ci95=interval((lo - t * se_loa, lo + t * se_loa)),
        loa_upper_ci95=interval((hi - t * se_loa, hi + t * se_loa)),
    )


def absolute_agreement(a: np.ndarray, b: np.ndarray, *,
                       domain: Sequence[float] | None) -> Absolute:
    """Mean absolute error of a against b on raw scores, and the share of items whose rubric
    codes (both snapped to `domain`) agree exactly or differ by at most one level; those two
    are None for continuous scores (`domain` None)."""
    xa, xb = _pair(a, b)
    if len(xa) == 0:
        return Absolute(mae=None, exact=None, within_one=None, n=0)
    if domain is None:
        return Absolute(mae=plain_float(np.abs(xa - xb).mean()), exact=None, within_one=None,
                        n=len(xa))
    steps = np.abs(
        _domain_index(snap_to_domain(xa, domain), domain)
        - _domain_index(snap_to_domain(xb, domain), domain)
    )
    return Absolute(mae=plain_float(np.abs(xa - xb).mean()), exact=plain_float(np.mean(steps == 0)),
                    within_one=plain_float(np.mean(steps <= 1)), n=len(xa))
