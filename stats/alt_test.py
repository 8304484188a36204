"""The Alternative Annotator Test (Calderon, Reichart & Dror, ACL 2025): can the grader take an
expert's place? Per-expert one-sided t-tests (cluster-robust with cases: Liang & Zeger 1986;
Cameron & Miller 2015), the Benjamini-Yekutieli correction (Benjamini & Yekutieli 2001), the
winning rate and advantage probability with case-resampled intervals, and the verdict's
sensitivity to the margin epsilon. Results: `stats.agreement_types`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import stats

from stats.agreement_types import AltExpert, AltSensitivity, AltTest, interval, plain_float
from stats.intervals import share_interval
from stats.resample import (
    MIN_CLUSTER_UNITS,
    case_units,
    few_cases_warning,
    percentile_ci,
)


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
