"""Agreement statistics between a grader and expert raters (pure, vectorized).

Inputs are numpy arrays: a score vector per rater, or an items x raters matrix with NaN for a
missing rating. The public functions return a float or a typed, JSON-ready result of
`stats.agreement_types` (Python floats, NaN -> None; `to_dict()` for the stored shape).
Each statistic names its reference in its docstring; docs/agreement.md lists them all.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import special, stats

from stats.agreement_types import (
    ICC,
    Absolute,
    Alpha,
    AltExpert,
    AltSensitivity,
    AltTest,
    BlandAltman,
    Confusion,
    GraderICC,
    ICCForm,
    Interval,
    Kendall,
    Pearson,
    Spearman,
    interval,
    plain_float,
)
from stats.intervals import share_interval

Z95 = 1.959963984540054  # standard normal 97.5% quantile


# ---------------------------------------------------------------- helpers


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


def bootstrap_weights(
    n_items: int, n_resamples: int, seed: int | np.random.Generator = 0,
    clusters: np.ndarray | None = None
) -> np.ndarray:
    """Resampling counts, shape (n_resamples, n_items): how often each item is drawn (`seed`
    may be a generator that several draws share).

    Items are drawn with replacement (Efron & Tibshirani 1993, ch. 6); with `clusters` (one label
    per item, e.g. the case) whole clusters are drawn and every item of a drawn cluster counts,
    the cluster bootstrap of Davison & Hinkley 1997, sec. 3.8. Single ratings are never resampled.
    """
    rng = np.random.default_rng(seed)
    if clusters is None:
        units, n_units = None, n_items
    else:
        _, units = np.unique(np.asarray(clusters), return_inverse=True)
        n_units = int(units.max()) + 1
    draws = rng.integers(0, n_units, size=(n_resamples, n_units))
    draws += (np.arange(n_resamples) * n_units)[:, None]  # row b counts in slots b*n .. b*n+n-1
    counts = np.bincount(draws.ravel(), minlength=n_resamples * n_units).astype(float)
    counts = counts.reshape(n_resamples, n_units)
    return counts if units is None else counts[:, units]


# ---------------------------------------------------------------- correlation

CI_METHODS = ("studentized_z", "bca")
MIN_R_ITEMS = 3  # r is not given from fewer items (two points always lie on a line: r = +/-1)
MIN_R_CASES = 20  # an r interval from fewer cases carries `few_cases_warning`


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


def few_cases_warning(units: int, cases: bool = True, statistic: str = "r") -> str | None:
    """The warning an interval of `statistic` (r, and every case-clustered interval of
    `clustered_interval`'s kind) carries when it stands on fewer than `MIN_R_CASES` cases
    (items when there are no cases): its coverage falls short of 95% there (about 93% for r
    with 10 cases of 6 items, `benchmarks/bench_pearson_coverage.py`; 93-94% for ICC(2,1) with
    10 cases of 5 items, `benchmarks/bench_agreement_clustered.py`; docs/agreement.md)."""
    if units >= MIN_R_CASES:
        return None
    what = "cases" if cases else "items"
    return (f"the {statistic} interval stands on {units} {what}, fewer than {MIN_R_CASES}: it "
            f"covers less than 95% with so few {what} (docs/agreement.md)")


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


# ---------------------------------------------------------------- case-clustered intervals
#
# Items of one case share its record and images, so they are not independent: every interval
# of the gate's statistics resamples whole cases, as r's does. Statistics that are smooth
# functions of per-item sums (ICC, the Bland-Altman bias and limits, the Alt-Test's advantage
# probability) get the delete-one-case jackknife with t on G - 1 degrees of freedom; the
# Alt-Test's winning rate (a share of tests that reject) the percentile interval of the same
# case resamples as r. Without cases every item is its own unit.

MIN_CLUSTER_UNITS = MIN_R_ITEMS  # no clustered interval from fewer than 3 cases (or items)


def case_units(n_items: int, clusters: np.ndarray | None) -> tuple[np.ndarray, int]:
    """Each item's unit index (its case, else itself) and the number of units."""
    if clusters is None:
        return np.arange(n_items), n_items
    units = np.unique(np.asarray(clusters), return_inverse=True)[1].ravel()
    return units, int(units.max()) + 1 if units.size else 0


def unit_sums(cols: np.ndarray, units: np.ndarray, n_units: int) -> np.ndarray:
    """(n_units, p): the per-unit sums of each column of `cols` (items x p)."""
    return np.stack([np.bincount(units, c, minlength=n_units) for c in np.asarray(cols).T],
                    axis=1)


def jackknife_interval(point: float, replicates: np.ndarray, confidence: float = 0.95, *,
                       fisher_z: bool = False) -> tuple[float, float]:
    """The delete-one-group jackknife interval (Quenouille 1956; Tukey 1958; Efron & Tibshirani
    1993, ch. 11; for clustered data, one case deleted at a time, Davison & Hinkley 1997, sec.
    3.8): `replicates` holds the statistic with each of the G cases left out in turn, se^2 =
    (G - 1) / G sum (theta_(c) - mean)^2, and the interval theta -/+ t(G - 1) se, on Fisher's
    z = atanh (Fisher 1921) with `fisher_z` and back. NaN when fewer than two replicates are
    finite."""
    r = np.asarray(replicates, dtype=float)
    r = r[np.isfinite(r)]
    g = r.size
    if g < 2 or not math.isfinite(point):
        return (math.nan, math.nan)
    if fisher_z:
        edge = 1 - 1e-15
        point, r = math.atanh(min(max(point, -edge), edge)), np.arctanh(np.clip(r, -edge, edge))
    se = math.sqrt((g - 1) / g * float(((r - r.mean()) ** 2).sum()))
    half = float(stats.t.ppf(0.5 + confidence / 2, g - 1)) * se
    lo, hi = point - half, point + half
    return (math.tanh(lo), math.tanh(hi)) if fisher_z else (lo, hi)


def _icc2_from_sums(s: np.ndarray, k: int) -> np.ndarray:
    """ICC(2,1) (Shrout & Fleiss 1979) from the summed columns (last axis) 1, x_1 .. x_k,
    (sum_j x_j)^2 and sum_j x_j^2 of an items x k matrix: the two-way ANOVA of `_mean_squares`
    from its sums, so that it can be evaluated on every case-jackknife or resample at once."""
    n, cols, r2, q = s[..., 0], s[..., 1:1 + k], s[..., 1 + k], s[..., 2 + k]
    with np.errstate(invalid="ignore", divide="ignore"):
        c = cols.sum(axis=-1) ** 2 / (n * k)
        ss_r, ss_c = r2 / k - c, (cols ** 2).sum(axis=-1) / n - c
        ss_e = q - c - ss_r - ss_c
        msr, msc, mse = ss_r / (n - 1), ss_c / (k - 1), ss_e / ((n - 1) * (k - 1))
        return (msr - mse) / (msr + (k - 1) * mse + k * (msc - mse) / n)


def spearman(x: np.ndarray, y: np.ndarray) -> Spearman:
    """Spearman's rank correlation rho (Spearman 1904), via scipy.stats.spearmanr; ties averaged."""
    xs, ys = _pair(x, y)
    if len(xs) < 3 or xs.std() == 0 or ys.std() == 0:
        return Spearman(rho=None, p=None, n=len(xs))
    res = stats.spearmanr(xs, ys)
    return Spearman(rho=plain_float(res.statistic), p=plain_float(res.pvalue), n=len(xs))


def kendall(x: np.ndarray, y: np.ndarray) -> Kendall:
    """Kendall's tau-b (Kendall 1945, tie-corrected), via scipy.stats.kendalltau."""
    xs, ys = _pair(x, y)
    if len(xs) < 3 or xs.std() == 0 or ys.std() == 0:
        return Kendall(tau_b=None, p=None, n=len(xs))
    res = stats.kendalltau(xs, ys, variant="b")
    return Kendall(tau_b=plain_float(res.statistic), p=plain_float(res.pvalue), n=len(xs))


# ---------------------------------------------------------------- ICC

ICC_FORMS = ("ICC1", "ICC2", "ICC3", "ICC1k", "ICC2k", "ICC3k")
_EPS = np.finfo(float).eps


def _mean_squares(x: np.ndarray) -> tuple[float, float, float, float]:
    """MSR (items), MSC (raters), MSE (residual) and MSW (within items) of a complete items x
    raters matrix, two-way ANOVA without replication (Shrout & Fleiss 1979, Table 1). A sum of
    squares within rounding error of zero is exactly zero, so that 0/0 is recognised."""
    n, k = x.shape
    grand = x.mean()
    rows, cols = x.mean(axis=1), x.mean(axis=0)
    tol = x.size * (64 * _EPS * np.abs(x).max()) ** 2
    ss = [k * ((rows - grand) ** 2).sum(), n * ((cols - grand) ** 2).sum(),
          ((x - rows[:, None] - cols[None, :] + grand) ** 2).sum()]
    ss_r, ss_c, ss_e = (0.0 if v <= tol else float(v) for v in ss)
    return ss_r / (n - 1), ss_c / (k - 1), ss_e / ((n - 1) * (k - 1)), (ss_c + ss_e) / (n * (k - 1))


def _icc_intervals(n: int, k: int, msr: float, msc: float, mse: float, msw: float,
                   icc2: float | None, confidence: float) -> dict[str, tuple[float, float]]:
    """F-based CIs of the six forms (Shrout & Fleiss 1979; McGraw & Wong 1996, Table 7), written
    with 1/F so that perfect agreement within every item (F infinite) gives [1, 1] for all six,
    the limit of every bound. Needs msr > 0."""
    q = 1 - (1 - confidence) / 2
    df_r, df_e, df_w = n - 1, (n - 1) * (k - 1), n * (k - 1)

    def single(h: float) -> float:  # (F' - 1) / (F' + k - 1) with h = 1 / F'
        return (1 - h) / (1 + (k - 1) * h)

    out = {}
    for form, ms, df in (("1", msw, df_w), ("3", mse, df_e)):
        g = ms / msr
        lo_h, hi_h = g * stats.f.ppf(q, df_r, df), g / stats.f.ppf(q, df, df_r)
        out[f"ICC{form}"] = (single(lo_h), single(hi_h))
        out[f"ICC{form}k"] = (1 - lo_h, 1 - hi_h)
    if icc2 is None:
        l2 = u2 = math.nan
    elif mse == 0 and msc == 0:
        l2 = u2 = 1.0
    else:  # Satterthwaite df (McGraw & Wong 1996, Table 7, case 2A), F_j = MSC / MSE cleared
        b = n * (1 + (k - 1) * icc2) - k * icc2
        v = df_e * (k * icc2 * msc + b * mse) ** 2 / (df_r * (k * icc2 * msc) ** 2 + (b * mse) ** 2)
        f2u, f2l = stats.f.ppf(q, df_r, v), stats.f.ppf(q, v, df_r)
        c = k * msc + (k * n - k - n) * mse
        l2 = n * (msr - f2u * mse) / (f2u * c + n * msr)
        u2 = n * (f2l * msr - mse) / (c + n * f2l * msr)
    out["ICC2"] = (l2, u2)
    out["ICC2k"] = (l2 * k / (1 + l2 * (k - 1)), u2 * k / (1 + u2 * (k - 1)))
    return out


def icc(ratings: np.ndarray, confidence: float = 0.95, *,
        raters: Sequence[str] | None = None) -> ICC:
    """The six intraclass correlations of Shrout & Fleiss (1979) on complete items.

    ICC1/ICC1k: one-way random; ICC2/ICC2k: two-way random, absolute agreement; ICC3/ICC3k:
    two-way mixed, consistency (k = mean of k raters). F tests and CIs follow Shrout & Fleiss
    (1979) and McGraw & Wong (1996, Table 7), as pingouin does. A rater (column) with no score
    at all is left out, with a note naming it (`raters` gives the names), as pingouin does; then
    items with a missing rating are dropped listwise (`dropped` counts them). A form whose
    value is undefined (a zero denominator, e.g. 0/0 when items do not differ and raters
    agree) is None, as is an interval that cannot be formed; `reasons` says why for each.
    """
    x = np.asarray(ratings, dtype=float)
    if x.ndim != 2:
        raise ValueError(f"expected an items x raters matrix, got shape {x.shape}")
    names = list(raters) if raters is not None else [f"rater {j}" for j in range(x.shape[1])]
    empty = ~np.isfinite(x).any(axis=0)
    left_out = [names[j] for j in np.flatnonzero(empty)]
    x = x[:, ~empty]
    total = x.shape[0]
    x = x[np.isfinite(x).all(axis=1)]
    n, k = x.shape
    notes = [f"rater {name!r} has no score and is left out" for name in left_out]
    if n < 2 or k < 2:
        why = (f"needs 2 raters with scores, found {k}" if k < 2
               else f"needs 2 items scored by every rater, found {n}")
        return ICC(n, k, left_out, notes, dict.fromkeys(ICC_FORMS, why), dropped=total - n)
    msr, msc, mse, msw = _mean_squares(x)
    fractions = {
        "ICC1": (msr - msw, msr + (k - 1) * msw),
        "ICC2": (msr - mse, msr + (k - 1) * mse + k * (msc - mse) / n),
        "ICC3": (msr - mse, msr + (k - 1) * mse),
        "ICC1k": (msr - msw, msr),
        "ICC2k": (msr - mse, msr + (msc - mse) / n),
        "ICC3k": (msr - mse, msr),
    }
    scale = msr + msc + mse + msw
    values: dict[str, float | None] = {}
    reasons: dict[str, str] = {}
    tiny = 64 * _EPS * scale
    for name, (num, den) in fractions.items():
        values[name] = num / den if abs(den) > tiny else None
        if values[name] is None:
            why = ("every score is the same" if scale == 0 else
                   "the items' mean scores do not differ (MSR = 0)" if msr == 0 else
                   "its denominator is 0")
            reasons[name] = f"{'0/0' if abs(num) <= tiny else 'division by 0'}: {why}"
    if msr > 0:
        cis = _icc_intervals(n, k, msr, msc, mse, msw, values["ICC2"], confidence)
    else:
        cis = dict.fromkeys(ICC_FORMS, (math.nan, math.nan))
    with np.errstate(divide="ignore", invalid="ignore"):
        f1, f3 = np.float64(msr) / msw, np.float64(msr) / mse
    df_r, df_e, df_w = n - 1, (n - 1) * (k - 1), n * (k - 1)
    p1, p3 = stats.f.sf(f1, df_r, df_w), stats.f.sf(f3, df_r, df_e)
    forms: dict[str, ICCForm | None] = {}
    for name in ICC_FORMS:
        if values[name] is None:
            forms[name.lower()] = None
            continue
        ci: list[float | None] | None = interval(cis[name])
        if None in ci:
            ci = None
            reasons[name] = ("no interval: F = 0, the items' mean scores do not differ"
                             if msr == 0 else "no interval: the F bounds are undefined")
        one_way = name.startswith("ICC1")
        forms[name.lower()] = ICCForm(
            icc=plain_float(values[name]), ci95=ci, F=plain_float(f1 if one_way else f3), df1=df_r,
            df2=df_w if one_way else df_e, p=plain_float(p1 if one_way else p3))
    return ICC(n, k, left_out, notes, reasons, **forms, dropped=total - n)



def icc_grader_vs_mean(grader: np.ndarray, experts: np.ndarray, *,
                       clusters: np.ndarray | None = None,
                       confidence: float = 0.95) -> GraderICC:
    """ICC(2,1), two-way random, absolute agreement (Shrout & Fleiss 1979; McGraw & Wong
    1996, case 2A), of the grader against the per-item mean of the experts: the gate's ICC. An
    item without a grade or without any expert score is dropped listwise (`dropped` counts
    them). Its interval is case-clustered: the delete-one-case jackknife of ICC(2,1) on Fisher's
    z with t(G - 1) (`jackknife_interval`; `clusters`: each item's case, else every item its own
    unit), none from fewer than `MIN_CLUSTER_UNITS` units, `warning` below `MIN_R_CASES`; McGraw
    & Wong's F interval, which takes the items as independent, is kept beside it (`ci95_f`)."""
    g = np.asarray(grader, dtype=float)
    e = np.asarray(experts, dtype=float).reshape(len(g), -1)
    present = np.isfinite(e)
    cnt = present.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        ref = np.where(cnt > 0, np.where(present, e, 0).sum(axis=1) / np.maximum(cnt, 1), np.nan)
    ok = np.isfinite(g) & np.isfinite(ref)
    x = np.column_stack([g, ref])[ok]
    units_all, _ = case_units(len(g), clusters)
    units = np.unique(units_all[ok], return_inverse=True)[1].ravel()
    n_units = int(units.max()) + 1 if units.size else 0
    unit = "item" if clusters is None else "case"
    base = icc(x, confidence)
    form = base.icc2
    if form is None:
        return GraderICC(None, None, None, int(ok.sum()), int((~ok).sum()), n_units, unit,
                         reason=base.reasons.get("ICC2"))
    ci = None
    if n_units >= MIN_CLUSTER_UNITS:
        xc = x - x.mean()
        cols = np.column_stack([np.ones(len(xc)), xc, xc.sum(axis=1) ** 2, (xc ** 2).sum(axis=1)])
        per_unit = unit_sums(cols, units, n_units)
        replicates = _icc2_from_sums(per_unit.sum(axis=0) - per_unit, 2)
        ci = interval(jackknife_interval(form.icc, replicates, confidence, fisher_z=True))
        ci = None if None in ci else ci
    return GraderICC(form.icc, ci, form.ci95, int(ok.sum()), int((~ok).sum()), n_units, unit,
                     few_cases_warning(n_units, clusters is not None, "ICC(2,1)"),
                     None if ci else f"no clustered interval from {n_units} {unit}s")


# ---------------------------------------------------------------- Krippendorff

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


# ---------------------------------------------------------------- kappa family

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


def percentile_ci(values: np.ndarray, confidence: float = 0.95) -> list[float] | None:
    """The percentile bootstrap interval (Efron & Tibshirani 1993, ch. 13), NaN resamples
    left out; None when fewer than half the resamples define the statistic."""
    v = values[np.isfinite(values)]
    if v.size < values.size / 2:
        return None
    tail = (1 - confidence) / 2 * 100
    return [float(x) for x in np.percentile(v, [tail, 100 - tail])]


# ---------------------------------------------------------------- differences


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


# ---------------------------------------------------------------- alt-test


def _benjamini_yekutieli(p: np.ndarray, q: float) -> np.ndarray:
    """Rejections of the Benjamini-Yekutieli (2001) step-up FDR procedure at level q."""
    m = len(p)
    reject = np.zeros(m, dtype=bool)
    if m == 0:
        return reject
    order = np.argsort(p)
    harmonic = np.sum(1.0 / np.arange(1, m + 1))
    thresholds = np.arange(1, m + 1) / m * q / harmonic
    below = np.nonzero(p[order] <= thresholds)[0]
    if below.size:
        reject[order[: below[-1] + 1]] = True
    return reject


def _cluster_t_p(m: np.ndarray, epsilon: float) -> np.ndarray:
    """One-sided p-values of H0: mean(d) >= epsilon from the summed unit moments `m` (last
    axis: n, sum d, sum over units of S_u^2, S_u n_u, n_u^2, and the number of units G, for
    unit sums S_u of d over n_u items): t = (mean - epsilon) / se with the cluster-robust
    variance G / (G - 1) sum_u (S_u - n_u mean)^2 / n^2 on G - 1 degrees of freedom (Liang &
    Zeger 1986; Cameron & Miller 2015, J Hum Resour 50:317-372, CR1). With one item per unit it
    is the one-sample t-test of the Alternative Annotator Test. Constant differences: the sign
    decides (p 0 or 1)."""
    n, s1, ss, sn, nn, g = np.moveaxis(m, -1, 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = s1 / n
        dev = np.maximum(ss - 2 * mean * sn + mean * mean * nn, 0.0)
        t = (mean - epsilon) / np.sqrt(g / (g - 1) * dev / (n * n))
        p = stats.t.cdf(t, g - 1)
    constant = dev <= 1e-9 * np.maximum(nn, 1.0)
    return np.where(constant, np.where(mean < epsilon, 0.0, 1.0), p)


def _by_rejections(p: np.ndarray, q: float) -> np.ndarray:
    """The number of Benjamini-Yekutieli rejections in each row of p (resamples x tests)."""
    m = p.shape[-1]
    thresholds = np.arange(1, m + 1) / m * q / np.sum(1.0 / np.arange(1, m + 1))
    below = np.sort(p, axis=-1) <= thresholds
    return np.where(below.any(axis=-1), m - np.argmax(below[..., ::-1], axis=-1), 0)


def alt_test(
    grader: np.ndarray,
    experts: np.ndarray,
    *,
    epsilon: float = 0.2,
    q: float = 0.05,
    scoring: str = "neg_rmse",
    min_items: int = 30,
    clusters: np.ndarray | None = None,
    weights: np.ndarray | None = None,
    confidence: float = 0.95,
) -> AltTest:
    """The Alternative Annotator Test (Calderon, Reichart & Dror, ACL 2025, "The Alternative
    Annotator Test for LLM-as-a-Judge").

    For each expert j (leave one out), on items rated by j and at least one other expert, the
    alignment of the grader and of expert j with the remaining experts is scored (`neg_rmse`
    for numeric scores, `accuracy` for labels); W_f = [grader >= expert], W_h = [expert >=
    grader]. H0: mean(W_h - W_f) >= epsilon, tested one-sided (one-sample t); the p-values are
    corrected by Benjamini-Yekutieli at level q. Winning rate = share of experts whose H0 is
    rejected; advantage probability = mean of the per-expert mean W_f; passed when the winning
    rate >= 0.5. Experts with fewer than `min_items` items are skipped, as in the paper.

    With `clusters` (each item's case) the t-test is the cluster-robust one (`_cluster_t_p`,
    G - 1 df for G cases; the paper's test when every case has one item), and the advantage
    probability gets the delete-one-case jackknife interval (`jackknife_interval`, the results'
    share rule `stats.intervals.share_interval` on its variance); with `weights`
    (`bootstrap_weights` drawn by the same clusters) the winning rate gets the percentile
    interval of the whole procedure rerun on every case resample (Efron & Tibshirani 1993, ch.
    13). None from fewer than `MIN_CLUSTER_UNITS` cases; `warning` below `MIN_R_CASES`.
    """
    g = np.asarray(grader, dtype=float)
    e = np.asarray(experts, dtype=float)
    present = np.isfinite(e)
    n_present = present.sum(axis=1)
    units, n_units = case_units(len(g), clusters)
    per_expert: list[tuple[int, int, float, float, float] | AltExpert] = []
    p_values = []
    moments, favour = [], []  # per tested expert: unit moments of d, unit sums of (rows, W_f)
    for j in range(e.shape[1]):
        others = present.copy()
        others[:, j] = False
        m_others = others.sum(axis=1)
        rows = present[:, j] & (m_others >= 1) & np.isfinite(g) & (n_present >= 2)
        if rows.sum() < min_items:
            per_expert.append(AltExpert(expert=j, n_items=int(rows.sum()), skipped=True))
            continue
        ref = np.where(others[rows], e[rows], np.nan)
        cnt = m_others[rows]
        if scoring == "neg_rmse":
            s_f = -np.sqrt(np.nansum((g[rows, None] - ref) ** 2, axis=1) / cnt)
            s_h = -np.sqrt(np.nansum((e[rows, j, None] - ref) ** 2, axis=1) / cnt)
        elif scoring == "accuracy":
            s_f = np.nansum(np.where(others[rows], ref == g[rows, None], 0), axis=1) / cnt
            s_h = np.nansum(np.where(others[rows], ref == e[rows, j, None], 0), axis=1) / cnt
        else:
            raise ValueError(f"unknown alt-test scoring {scoring!r}")
        w_f = (s_f >= s_h).astype(float)
        w_h = (s_h >= s_f).astype(float)
        d = w_h - w_f
        u = units[rows]
        size = np.bincount(u, minlength=n_units).astype(float)
        total = np.bincount(u, d, minlength=n_units)
        unit_m = np.column_stack([size, total, total * total, total * size, size * size,
                                  (size > 0).astype(float)])
        p = float(_cluster_t_p(unit_m.sum(axis=0), epsilon))
        moments.append(unit_m)
        favour.append(np.column_stack([size, np.bincount(u, w_f, minlength=n_units)]))
        p_values.append(p)
        per_expert.append((j, int(rows.sum()), float(w_f.mean()), float(w_h.mean()), p))
    tested = [r for r in per_expert if not isinstance(r, AltExpert)]
    reject = _benjamini_yekutieli(np.asarray(p_values), q)
    wins = iter(reject)
    experts_out = [r if isinstance(r, AltExpert) else
                   AltExpert(expert=r[0], n_items=r[1], rho_f=plain_float(r[2]), rho_h=plain_float(r[3]),
                             p=plain_float(r[4]), llm_wins=bool(next(wins)))
                   for r in per_expert]
    winning = float(reject.mean()) if tested else math.nan
    advantage = float(np.mean([r[2] for r in tested])) if tested else math.nan
    used = [k for k in range(n_units) if any(m[k, 0] > 0 for m in moments)]
    g_units = len(used) if clusters is not None else n_units
    rate_ci = advantage_ci = None
    if tested and g_units >= MIN_CLUSTER_UNITS:
        f = np.stack(favour)[:, used]  # (experts, units, 2)
        left = f.sum(axis=1, keepdims=True) - f  # each unit left out in turn
        with np.errstate(invalid="ignore", divide="ignore"):
            reps = np.nanmean(left[..., 1] / left[..., 0], axis=0)
        v = (len(used) - 1) / len(used) * float(np.nansum((reps - np.nanmean(reps)) ** 2))
        ci = share_interval(advantage, v, len(used) - 1, cases=len(used),
                            confidence=confidence)
        advantage_ci = interval(ci)
        if weights is not None:
            w = weights[:, np.unique(units, return_index=True)[1]]  # resamples x units
            drawn = np.einsum("bu,eup->bep", w, np.stack(moments), optimize=False)
            rejected = _by_rejections(_cluster_t_p(drawn, epsilon), q)
            rate_ci = percentile_ci(rejected / len(tested), confidence)
    return AltTest(epsilon=epsilon, q=q, scoring=scoring, winning_rate=plain_float(winning),
                   advantage_probability=plain_float(advantage),
                   passed=bool(len(tested) and winning >= 0.5), experts=experts_out,
                   winning_rate_ci95=rate_ci, advantage_probability_ci95=advantage_ci,
                   units=g_units, unit="item" if clusters is None else "case",
                   warning=few_cases_warning(g_units, clusters is not None, "Alt-Test")
                   if tested else None)


def alt_test_sensitivity(grader: np.ndarray, experts: np.ndarray, *,
                         epsilons: Sequence[float] = (0.1, 0.15, 0.2), q: float = 0.05,
                         min_items: int = 30,
                         clusters: np.ndarray | None = None) -> list[AltSensitivity]:
    """The Alt-Test's winning rate and verdict at each margin epsilon (Calderon et al. 2025
    take 0.2 for experts, 0.1 and 0.15 for stricter use): how much the verdict rests on the
    margin chosen."""
    out = []
    for eps in epsilons:
        res = alt_test(grader, experts, epsilon=eps, q=q, min_items=min_items,
                       clusters=clusters)
        out.append(AltSensitivity(eps, res.winning_rate, res.passed))
    return out
