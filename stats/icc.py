"""Intraclass correlations (Shrout & Fleiss 1979; F intervals: McGraw & Wong 1996, Table 7):
the six forms on complete items (`icc`), and the gate's ICC(2,1) of the grader against the
experts' per-item mean with its delete-one-case jackknife interval (`icc_grader_vs_mean`;
Quenouille 1956, Tukey 1958). Inputs: items x raters, NaN for a missing rating; results:
`stats.agreement_types`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import stats

from stats.agreement_types import ICC, GraderICC, ICCForm, interval, plain_float
from stats.resample import (
    MIN_CLUSTER_UNITS,
    case_units,
    few_cases_warning,
    jackknife_interval,
    unit_sums,
)

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
