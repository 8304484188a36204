"""Chance-corrected agreement on rubric codes and categories: Krippendorff's alpha
(Krippendorff 2011), weighted Cohen's kappa (Cohen 1968; Fleiss & Cohen 1973; Cicchetti &
Allison 1971), Cohen's kappa (Cohen 1960) and Gwet's AC1 (Gwet 2008); for binary error tags,
the confusion table with precision, recall and F1 (van Rijsbergen 1979), also in every
bootstrap resample at once. Results: `stats.agreement_types`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import stats

from stats.agreement_types import Alpha, Confusion, plain_float
from stats.scores import _domain_index, _pair, snap_to_domain

ALPHA_LEVELS = ("interval", "ordinal", "nominal")
CONTINUOUS = "continuous scores: no finite scale of levels"


def _alpha_interval(x: np.ndarray) -> float:
    """Interval alpha of pairable units (rows with >= 2 values, NaN = missing) from squared
    differences, without a value-by-value table: for the interval metric the sums over pairs of
    Krippendorff (2011) reduce to within-unit and total sums of squares,
    alpha = 1 - (n - 1) sum_u m_u SS_u / (m_u - 1) / (n SS_total)."""
    ok = np.isfinite(x)
    m = ok.sum(axis=1)
    mean_u = np.where(ok, x, 0).sum(axis=1) / m
    ss_u = (np.where(ok, x - mean_u[:, None], 0) ** 2).sum(axis=1)
    values = x[ok]
    n = values.size
    ss = ((values - values.mean()) ** 2).sum()
    return float(1 - (n - 1) * np.sum(m * ss_u / (m - 1)) / (n * ss))


def _alpha_nominal(x: np.ndarray) -> float:
    """Nominal alpha of pairable units from per-unit counts of equal values (Krippendorff 2011):
    D_o = sum_u (m_u^2 - sum_c n_uc^2) / (m_u - 1) / n, D_e = (n^2 - sum_c n_c^2) / (n (n - 1))."""
    unit, col = np.nonzero(np.isfinite(x))
    _, code = np.unique(x[unit, col], return_inverse=True)
    q = int(code.max()) + 1
    cells, counts = np.unique(unit * q + code, return_counts=True)
    same = np.bincount(cells // q, weights=counts.astype(float) ** 2, minlength=len(x))
    m = np.isfinite(x).sum(axis=1)
    n = m.sum()
    d_o = np.sum((m * m - same) / (m - 1)) / n
    d_e = (n * n - np.sum(np.bincount(code).astype(float) ** 2)) / (n * (n - 1))
    return float(1 - d_o / d_e)


def krippendorff_alpha(
    ratings: np.ndarray,
    *,
    domain: Sequence[float] | None,
    levels: Sequence[str] = ALPHA_LEVELS,
) -> Alpha:
    """Krippendorff's alpha (Krippendorff 2011, "Computing Krippendorff's Alpha-Reliability")
    for each level of measurement, in O(N log N) without a value-by-value coincidence table.

    `ratings`: items x raters, NaN = missing (allowed). `domain`: the rubric's allowed values;
    ratings are snapped to the nearest allowed value (a grader's mean of several samples becomes
    a rubric code); None for continuous scores. Interval: `_alpha_interval`. Ordinal: the
    ordinal metric of Krippendorff (2011), (sum_{g=c..k} n_g - (n_c + n_k)/2)^2, is the squared
    difference of the values' mid-ranks among all pairable values, so ordinal alpha is interval
    alpha on mid-ranks. Nominal: `_alpha_nominal`, only on a domain (with continuous scores it
    would make every distinct value a category). A None alpha has its reason in `reasons`.
    """
    if unknown := [level for level in levels if level not in ALPHA_LEVELS]:
        raise ValueError(f"unknown level of measurement {unknown[0]!r}")
    x = np.asarray(ratings, dtype=float)
    if domain is not None:
        x = snap_to_domain(x, domain)
    x = x[np.isfinite(x).sum(axis=1) >= 2]
    values = x[np.isfinite(x)]
    why = ("no item has two ratings" if values.size == 0
           else "0/0: only one value occurs" if values.min() == values.max() else None)
    out: dict[str, float | None] = {}
    reasons: dict[str, str] = {}
    for level in levels:
        if why is None and level == "nominal" and domain is None:
            out[level], reasons[level] = None, CONTINUOUS
        elif why is not None:
            out[level], reasons[level] = None, why
        elif level == "interval":
            out[level] = _alpha_interval(x)
        elif level == "ordinal":
            ranks = np.full(x.shape, np.nan)
            ranks[np.isfinite(x)] = stats.rankdata(values)
            out[level] = _alpha_interval(ranks)
        else:
            out[level] = _alpha_nominal(x)
    return Alpha(levels=tuple(levels), reasons=reasons,
                 **{level: plain_float(v) for level, v in out.items()})


KAPPA_WEIGHTS = ("quadratic", "linear")


def _weighted_kappa(a: np.ndarray, b: np.ndarray, domain: Sequence[float] | None,
                    weights: str) -> tuple[float | None, str | None]:
    """`weighted_kappa` and, when it is None, why."""
    if weights not in KAPPA_WEIGHTS:
        raise ValueError(f"unknown kappa weights {weights!r}; choose from {KAPPA_WEIGHTS}")
    if domain is None:
        return None, CONTINUOUS
    xa, xb = _pair(a, b)
    q = len(domain)
    if len(xa) == 0:
        return None, "no item scored by both"
    if q < 2:
        return None, "the scale has a single level"
    ia = _domain_index(snap_to_domain(xa, domain), domain)
    ib = _domain_index(snap_to_domain(xb, domain), domain)
    observed = np.bincount(ia * q + ib, minlength=q * q).reshape(q, q).astype(float)
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0)) / observed.sum()
    pos = np.arange(q)
    steps = np.abs(pos[:, None] - pos[None, :]) / (q - 1)
    w = steps if weights == "linear" else steps**2
    denom = (w * expected).sum()
    if denom == 0:
        return None, "0/0: both raters use a single level"
    return plain_float(1 - (w * observed).sum() / denom), None


def weighted_kappa(a: np.ndarray, b: np.ndarray, *, domain: Sequence[float] | None,
                   weights: str = "quadratic") -> float | None:
    """Weighted Cohen's kappa between two raters on the rubric's ordinal codes (Cohen 1968):
    disagreement weight (i - j)^2 / (q - 1)^2 ("quadratic", Fleiss & Cohen 1973) or |i - j| /
    (q - 1) ("linear", Cicchetti & Allison 1971) on domain positions i, j. Scores are snapped to
    the domain; items missing in either rater are dropped. None for continuous scores (`domain`
    None), with no common item, or when undefined (0/0).
    """
    return _weighted_kappa(a, b, domain, weights)[0]


def cohen_kappa(a: np.ndarray, b: np.ndarray) -> float | None:
    """Unweighted Cohen's kappa (Cohen 1960) between two raters' categorical codes."""
    xa, xb = _pair(a, b)
    if len(xa) == 0:
        return None
    cats, inv = np.unique(np.concatenate([xa, xb]), return_inverse=True)
    ia, ib = inv[: len(xa)], inv[len(xa) :]
    q = len(cats)
    pa = float(np.mean(ia == ib))
    pe = float(np.bincount(ia, minlength=q) @ np.bincount(ib, minlength=q)) / len(xa) ** 2
    return plain_float((pa - pe) / (1 - pe)) if pe < 1 else None


def gwet_ac1(a: np.ndarray, b: np.ndarray) -> float | None:
    """Gwet's AC1 between two raters' categorical codes (Gwet 2008, Br J Math Stat Psychol 61:29-48):
    (pa - pe) / (1 - pe), pe = sum_k pi_k (1 - pi_k) / (q - 1), pi_k = mean of the two raters'
    marginal proportions. Stays stable when a category is rare (no "kappa paradox").
    """
    xa, xb = _pair(a, b)
    if len(xa) == 0:
        return None
    cats, inv = np.unique(np.concatenate([xa, xb]), return_inverse=True)
    ia, ib = inv[: len(xa)], inv[len(xa) :]
    q = max(len(cats), 2)  # a binary tag seen in one class only still has two categories
    pa = float(np.mean(ia == ib))
    pi = (np.bincount(ia, minlength=q) + np.bincount(ib, minlength=q)) / (2 * len(xa))
    pe = float((pi * (1 - pi)).sum()) / (q - 1)
    return plain_float((pa - pe) / (1 - pe)) if pe < 1 else None


def binary_confusion(pred: np.ndarray, truth: np.ndarray) -> Confusion:
    """Confusion table, precision, recall and F1 of binary `pred` against binary `truth` (van
    Rijsbergen 1979)."""
    p, t = _pair(pred, truth)
    p, t = p > 0.5, t > 0.5
    tp, fp = int(np.sum(p & t)), int(np.sum(p & ~t))
    fn, tn = int(np.sum(~p & t)), int(np.sum(~p & ~t))
    precision = tp / (tp + fp) if tp + fp else math.nan
    recall = tp / (tp + fn) if tp + fn else math.nan
    f1 = 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else math.nan
    return Confusion(tp=tp, fp=fp, fn=fn, tn=tn, precision=plain_float(precision),
                     recall=plain_float(recall), f1=plain_float(f1))


def binary_stats_resampled(pred: np.ndarray, truth: np.ndarray, weights: np.ndarray) -> dict:
    """Cohen's kappa, Gwet's AC1 and F1 of binary `pred` against `truth` in each resample:
    `weights` (resamples x items, `bootstrap_weights`) count how often each item is drawn, so
    the confusion counts of all resamples are one matrix product. Items with a missing value
    are left out; a statistic undefined in a resample is NaN there."""
    ok = np.isfinite(pred) & np.isfinite(truth)
    p, t, w = np.asarray(pred)[ok] > 0.5, np.asarray(truth)[ok] > 0.5, weights[:, ok]
    n = w.sum(axis=1)
    tp, fp, fn = w @ (p & t), w @ (p & ~t), w @ (~p & t)
    with np.errstate(divide="ignore", invalid="ignore"):
        agree = (n - fp - fn) / n
        share_p, share_t = (tp + fp) / n, (tp + fn) / n
        chance = share_p * share_t + (1 - share_p) * (1 - share_t)  # Cohen 1960
        pi = (share_p + share_t) / 2
        chance_g = 2 * pi * (1 - pi)  # Gwet 2008 with two categories
        return {"kappa": np.where(chance < 1, (agree - chance) / (1 - chance), np.nan),
                "ac1": np.where(chance_g < 1, (agree - chance_g) / (1 - chance_g), np.nan),
                "f1": 2 * tp / (2 * tp + fp + fn)}
