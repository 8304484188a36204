"""Correlation between two raters' scores: Pearson's r (Pearson 1896) with Fisher's z interval
(Fisher 1921) and a bootstrap interval over items or whole cases (studentized on Fisher's z:
Hall 1988, Davison & Hinkley 1997; or BCa: Efron 1987), Spearman's rho (Spearman 1904) and
Kendall's tau-b (Kendall 1945), each also row-wise (`spearman_rows`, `kendall_rows`) for the
permutations and resamples of `stats.rank_correlation`.

Inputs: a score vector per rater, NaN for a missing rating; results: the typed, JSON-ready
results of `stats.agreement_types`. docs/agreement.md lists every statistic with its
reference.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import special, stats

from stats.agreement_types import Kendall, Pearson, Spearman, interval, plain_float
from stats.resample import bootstrap_weights, few_cases_warning
from stats.scores import _pair

CI_METHODS = ("studentized_z", "bca")
MIN_R_ITEMS = 3  # r is not given from fewer items (two points always lie on a line: r = +/-1)


def fisher_ci(r: float, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """CI of a Pearson r by Fisher's z transform (Fisher 1921): tanh(atanh r -/+ z / sqrt(n-3))."""
    if n <= 3 or not math.isfinite(r):
        return (math.nan, math.nan)
    if abs(r) >= 1:
        return (r, r)
    z = special.ndtri(0.5 + confidence / 2)
    c = math.atanh(r)
    h = z / math.sqrt(n - 3)
    return (math.tanh(c - h), math.tanh(c + h))


def _unit_moments(x: np.ndarray, y: np.ndarray, ok: np.ndarray, units: np.ndarray,
                  n_units: int) -> np.ndarray:
    """Per resampling unit, the sums of (1, x, y, x^2, xy, y^2) over its items where `ok`; x and
    y standardized on those items, so every sum stays of the order of the item count."""
    xs, ys = x[ok], y[ok]
    xs = (xs - xs.mean()) / xs.std()
    ys = (ys - ys.mean()) / ys.std()
    cols = (np.ones_like(xs), xs, ys, xs * xs, xs * ys, ys * ys)
    return np.stack([np.bincount(units[ok], c, minlength=n_units) for c in cols], axis=1)


def _r_from_sums(s: np.ndarray) -> np.ndarray:
    """Pearson r from summed moment columns (last axis: n, sx, sy, sxx, sxy, syy)."""
    n, sx, sy, sxx, sxy, syy = np.moveaxis(s, -1, 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (n * sxy - sx * sy) / np.sqrt((n * sxx - sx * sx) * (n * syy - sy * sy))


_ROW, _COL = np.triu_indices(6)  # the 21 distinct products of two moment sums
_TWICE_OFF_DIAGONAL = np.where(_ROW == _COL, 1.0, 2.0)


def _moment_products(units: np.ndarray) -> np.ndarray:
    """(..., G, 21): for each unit, the distinct products of two of its six moment sums."""
    return units[..., _ROW] * units[..., _COL]


def _r_and_se(sums: np.ndarray, products: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pearson r and its nonparametric delta-method standard error, from weighted moment sums.

    `sums` (..., 6): the unit moment sums (`_unit_moments`) totalled with each unit's weight
    (its count in a resample); `products` (..., 21): the same for `_moment_products`. The
    influence value of item j is x~ y~ - r (x~^2 + y~^2) / 2 on the scores standardized in that
    sample (Devlin, Gnanadesikan & Kettenring 1975); a unit's value L_u, the sum over its items,
    is c . U_u, linear in its moment sums U_u, so se^2 = sum_u w_u L_u^2 / N^2 (Davison &
    Hinkley 1997, sec. 2.7.2 and 3.8) = c' (sum_u w_u U_u U_u') c / N^2 needs only the totals.
    """
    n, sx, sy, sxx, sxy, syy = np.moveaxis(sums, -1, 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mx, my = sx / n, sy / n
        vx, vy = sxx / n - mx * mx, syy / n - my * my
        sd = np.sqrt(vx * vy)
        r = (sxy / n - mx * my) / sd
        c = np.stack([mx * my / sd - r / 2 * (mx * mx / vx + my * my / vy),
                      r * mx / vx - my / sd, r * my / vy - mx / sd,
                      -r / (2 * vx), 1 / sd, -r / (2 * vy)], axis=-1)
        quad = (_TWICE_OFF_DIAGONAL * c[..., _ROW] * c[..., _COL] * products).sum(axis=-1)
        return r, np.sqrt(quad) / n


_BLOCK_FLOATS = 4_000_000  # pairs share one matrix product up to ~32 MB of columns or sums


def _resample_sums(weights: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """weights @ cols; small products skip BLAS, whose thread start-up dominates them."""
    if weights.size < 1_000_000:
        return np.einsum("bn,nk->bk", weights, cols, optimize=False)
    return weights @ cols


def _bca_interval(
    r: float, rb: np.ndarray, r_jack: np.ndarray, confidence: float
) -> tuple[float, float]:
    """Bias-corrected and accelerated bootstrap interval (Efron 1987; Efron & Tibshirani 1993,
    ch. 14): percentiles of the resamples shifted by the bias z0 and the jackknife acceleration."""
    z0 = special.ndtri((np.sum(rb < r) + 0.5 * np.sum(rb == r)) / rb.size)
    dev = r_jack.mean() - r_jack
    denom = 6 * np.sum(dev**2) ** 1.5
    a = np.sum(dev**3) / denom if denom > 0 else 0.0
    if not np.isfinite(z0):
        return (math.nan, math.nan)
    zq = special.ndtri(np.array([(1 - confidence) / 2, (1 + confidence) / 2]))
    q = special.ndtr(z0 + (z0 + zq) / (1 - a * (z0 + zq)))
    lo, hi = np.quantile(rb, q)
    return (float(lo), float(hi))


def _studentized_z_interval(
    r: float, se: float, rb: np.ndarray, se_b: np.ndarray, confidence: float
) -> tuple[float, float]:
    """Studentized (bootstrap-t) interval on Fisher's z (Hall 1988, Ann Stat 16:927-953; Hall,
    Martin & Schucany 1989, J Stat Comput Simul 33:161-172; Davison & Hinkley 1997, sec. 5.2):
    t* = (z* - z) / se*(z) in every resample, se(z) = se(r) / (1 - r^2), and the interval
    tanh(z - t*_(1-a/2) se(z)), tanh(z - t*_(a/2) se(z)). NaN when fewer than half the
    resamples give a finite t*."""
    if abs(r) >= 1:
        return (r, r)
    if not se > 0:
        return (math.nan, math.nan)
    z, se_z = math.atanh(r), se / (1 - r * r)
    with np.errstate(invalid="ignore", divide="ignore"):
        t = (np.arctanh(rb) - z) / (se_b / (1 - rb * rb))
    t = t[np.isfinite(t)]
    if t.size < rb.size / 2:
        return (math.nan, math.nan)
    tail = (1 - confidence) / 2
    t_hi, t_lo = np.quantile(t, [1 - tail, tail])
    return (math.tanh(z - t_hi * se_z), math.tanh(z - t_lo * se_z))


def _bootstrap_ci(r: float, units: np.ndarray, sums: np.ndarray, method: str,
                  confidence: float) -> tuple[float, float]:
    """The `method` interval of r from the unit moment sums (G, 6) and, per resample, their
    totals (B, 6), followed for "studentized_z" by the totals of their products (B, 21)."""
    if method == "bca":
        rb = _r_from_sums(sums)
        r_jack = _r_from_sums(units.sum(axis=0) - units[units[:, 0] > 0])
        rb, r_jack = rb[np.isfinite(rb)], r_jack[np.isfinite(r_jack)]
        if rb.size and r_jack.size >= 2:
            return _bca_interval(r, rb, r_jack, confidence)
        return (math.nan, math.nan)
    rb, se_b = _r_and_se(sums[:, :6], sums[:, 6:])
    se = float(_r_and_se(units.sum(axis=0), _moment_products(units).sum(axis=0))[1])
    return _studentized_z_interval(r, se, rb, se_b, confidence)


def pearson_many(
    pairs: Sequence[tuple[np.ndarray, np.ndarray]],
    *,
    weights: np.ndarray | None = None,
    clusters: np.ndarray | None = None,
    confidence: float = 0.95,
    ci_method: str = "studentized_z",
) -> list[Pearson]:
    """`pearson` for several (x, y) pairs over the same items, sharing one set of resamples:
    the resampled moment sums of all pairs come from one matrix product (per block of pairs,
    so that memory stays bounded with many raters)."""
    if ci_method not in CI_METHODS:
        raise ValueError(f"unknown ci_method {ci_method!r}; choose from {', '.join(CI_METHODS)}")
    prepared = []
    for x, y in pairs:
        x = np.asarray(x, dtype=float)
        y = np.asarray(y, dtype=float)
        ok = np.isfinite(x) & np.isfinite(y)
        xs, ys = x[ok], y[ok]
        n = int(ok.sum())
        good = n >= MIN_R_ITEMS and xs.std() > 0 and ys.std() > 0
        r = float(np.corrcoef(xs, ys)[0, 1]) if good else math.nan
        prepared.append((x, y, ok, n, r))
    boots = [(math.nan, math.nan)] * len(prepared)
    todo = [i for i, (_, _, _, n, r) in enumerate(prepared) if n >= 3 and math.isfinite(r)]
    if weights is not None and todo:
        n_items = len(prepared[todo[0]][0])
        if weights.shape[1] != n_items:
            raise ValueError(f"bootstrap weights for {weights.shape[1]} items, data has {n_items}")
        units = (np.arange(n_items) if clusters is None
                 else np.unique(np.asarray(clusters), return_inverse=True)[1].ravel())
        first = np.unique(units, return_index=True)[1]
        w = weights[:, first]  # every item of a unit is drawn as often as its unit
        if clusters is not None and not np.array_equal(w[:, units], weights):
            raise ValueError("bootstrap weights were not drawn by the given clusters")
        width = 6 if ci_method == "bca" else 27
        block = max(1, _BLOCK_FLOATS // (width * max(w.shape)))  # pairs per matrix product
        for start in range(0, len(todo), block):
            chunk = todo[start: start + block]
            moments = [_unit_moments(*prepared[i][:3], units, len(first)) for i in chunk]
            cols = [m if width == 6 else np.hstack([m, _moment_products(m)]) for m in moments]
            sums = _resample_sums(w, np.concatenate(cols, axis=1))  # (B, width * len(chunk))
            for k, i in enumerate(chunk):
                boots[i] = _bootstrap_ci(prepared[i][4], moments[k],
                                         sums[:, width * k: width * (k + 1)], ci_method,
                                         confidence)
    out = []
    for (_, _, ok, n, r), boot in zip(prepared, boots, strict=True):
        units = n if clusters is None else len(np.unique(np.asarray(clusters)[ok]))
        out.append(Pearson(r=plain_float(r), n=n, ci95_fisher=interval(fisher_ci(r, n, confidence)),
                           ci95_bootstrap=interval(boot), units=int(units),
                           warning=few_cases_warning(units, clusters is not None)
                           if math.isfinite(r) else None))
    return out


def pearson(
    x: np.ndarray,
    y: np.ndarray,
    *,
    bootstrap: int = 2000,
    seed: int = 0,
    clusters: np.ndarray | None = None,
    weights: np.ndarray | None = None,
    confidence: float = 0.95,
    ci_method: str = "studentized_z",
) -> Pearson:
    """Pearson's r (Pearson 1896) with a Fisher-z CI (Fisher 1921) and a bootstrap CI that
    resamples items (or `clusters` of items, e.g. cases), never single ratings. `ci_method`:
    "studentized_z" (default; `_studentized_z_interval`, covers 95 % at rho = 0.9 with 60 items,
    docs/agreement.md) or "bca" (Efron 1987; Efron & Tibshirani 1993, ch. 14). Items missing in
    x or y are dropped; r is None from fewer than `MIN_R_ITEMS` items, and `warning` says when
    the interval stands on fewer than `MIN_R_CASES` cases (`units`: the cases, else items).
    `weights`: precomputed `bootstrap_weights` over all items, drawn with the same `clusters`
    (lets several statistics share one set of resamples). All resamples are evaluated at once
    by one matrix product.
    """
    if weights is None and bootstrap > 0:
        weights = bootstrap_weights(len(np.asarray(x)), bootstrap, seed, clusters)
    return pearson_many([(x, y)], weights=weights, clusters=clusters, confidence=confidence,
                        ci_method=ci_method)[0]


def ranks(values: np.ndarray, *, descending: bool = False) -> np.ndarray:
    """Average ranks along the last axis (ties share their mean rank), 1 = smallest
    (`descending`: 1 = largest)."""
    return stats.rankdata(-values if descending else values, method="average", axis=-1)


def spearman_rows(rx: np.ndarray, ry: np.ndarray) -> np.ndarray:
    """Spearman's rho (Spearman 1904) of each row pair of rank matrices (`ranks`): Pearson's r
    of the ranks, NaN where a row is constant. The one implementation of rho: `spearman` runs it
    on one pair, `stats.rank_correlation` on a pair, its permutations and its resamples."""
    dx = rx - rx.mean(axis=-1, keepdims=True)
    dy = ry - ry.mean(axis=-1, keepdims=True)
    den = np.sqrt((dx * dx).sum(-1) * (dy * dy).sum(-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, (dx * dy).sum(-1) / np.where(den > 0, den, 1), np.nan)


def kendall_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall's tau-b (Kendall 1945) of each row pair, from every pair of columns:
    (concordant - discordant) / sqrt(n0 - n1) / sqrt(n0 - n2), ties in either variable
    corrected, NaN where a row is constant. O(n^2) per row, for few units (`stats.rank_correlation`:
    a pair of models, its permutations and resamples); it ends in the arithmetic of
    `scipy.stats.kendalltau`, which `kendall` runs in O(n log n) on a long pair, so that both
    give the same tau-b bit for bit."""
    i, j = np.triu_indices(x.shape[-1], k=1)
    sx = np.sign(x[..., i] - x[..., j])
    sy = np.sign(y[..., i] - y[..., j])
    s = (sx * sy).sum(-1)
    tx = (sx != 0).sum(-1)  # n0 - n1: pairs not tied in x
    ty = (sy != 0).sum(-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = np.clip(s / np.sqrt(tx) / np.sqrt(ty), -1.0, 1.0)
    return np.where((tx > 0) & (ty > 0), tau, np.nan)


def spearman(x: np.ndarray, y: np.ndarray) -> Spearman:
    """Spearman's rank correlation rho (Spearman 1904): `spearman_rows` of the two raters' ranks
    (ties averaged), on the items both scored; p from scipy.stats.spearmanr (t approximation)."""
    xs, ys = _pair(x, y)
    if len(xs) < 3 or xs.std() == 0 or ys.std() == 0:
        return Spearman(rho=None, p=None, n=len(xs))
    rho = spearman_rows(ranks(xs), ranks(ys))
    p = stats.spearmanr(xs, ys).pvalue
    return Spearman(rho=plain_float(rho), p=plain_float(p), n=len(xs))


def kendall(x: np.ndarray, y: np.ndarray) -> Kendall:
    """Kendall's tau-b (Kendall 1945, tie-corrected), via scipy.stats.kendalltau (O(n log n); its
    row-wise form for permutations and resamples of few units is `kendall_rows`)."""
    xs, ys = _pair(x, y)
    if len(xs) < 3 or xs.std() == 0 or ys.std() == 0:
        return Kendall(tau_b=None, p=None, n=len(xs))
    res = stats.kendalltau(xs, ys, variant="b")
    return Kendall(tau_b=plain_float(res.statistic), p=plain_float(res.pvalue), n=len(xs))
