"""The results' interval rule, from the variance of case-cluster resamples: a share gets a
Wilson score interval with an effective sample size, a difference a t interval.

Both start from the bootstrap variance of the estimate over resamples of cases (the clusters,
`stats.resample`), scaled by n / (n - 1) for n cases (the bootstrap variance of a mean of n
independent units is the plug-in variance, low by that factor; Davison & Hinkley 1997, sec.
2.3 and 3.8), with n - 1 degrees of freedom for the small-sample quantile; for a human group,
whose people and cases are crossed, `combined_variance` sums the variance components read
off the people, case and interaction terms of the pigeonhole resamples (`crossed_terms`, Owen
2007) without counting the interaction three times, a component estimated negative set to
zero, with Satterthwaite's degrees of freedom over the terms that remain; a paired difference
adds each human side's own people and interaction terms to the cases' term of the differences.

- A share or a score on 0-1 (pass@1, pass@k, top-k, the rubric score): the Wilson score
  interval (Wilson 1927) at the effective sample size n* = p(1 - p) / v of the design-based
  variance v, shrunk by (z / t_df)^2 so the interval has the width of a t interval where the
  normal one would be right: Korn & Graubard 1998 (Survey Methodology 24:193-201), with the
  Wilson form that Dean & Pagano 2015 (J. Surv. Stat. Methodol. 3:484-503) found to cover in
  clustered samples; algebraically, Wilson's formula at n* with t_df in place of z. (Their
  shrinking factor is (t_{n-1} / t_df)^2 for n observations; z, its limit, is within 3% of
  t_{n-1} from 50 answers on, so this interval is slightly wider than theirs.) As Korn &
  Graubard do, the design effect is floored at 1: v is at least the variance the answers would
  have as a simple random sample, s^2 / n for n answers of plug-in variance s^2, so that for
  0/1 answers n* is at most n (answers that share a case carry no more information than
  independent ones). Near 0 or 1 a case-resampled v falls with the estimate (an estimate of
  0.95 from 12 cases has few cases with a wrong answer), so p(1 - p) / v can exceed n;
  docs/methods.md, "The coverage criterion", has the simulation. Where no
  spread was seen (v = 0 with p inside (0, 1)), n* is df + 1 (the number of cases), as if each
  case were one observation; where every answer agrees (p = 0 or 1) the interval is the exact
  Clopper-Pearson one with each case one trial (`cluster_clopper_pearson`), e.g. [0.478, 1] at
  5 cases: a width of its own, never [1, 1], and never wider than exact.
- A difference of two estimates (`nmb results --compare`): d +/- t_df sqrt(v).

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


def one_way_variance(resampled: np.ndarray, units: int) -> float:
    """The variance of the finite resamples of one factor's `units` (cases), scaled by
    units / (units - 1)."""
    v = np.asarray(resampled, dtype=float)
    v = v[np.isfinite(v)]
    if units < 2 or v.size < 2:
        return math.nan
    return float(v.var() * units / (units - 1))


def crossed_terms(both: np.ndarray, people_only: np.ndarray, cases_only: np.ndarray,
                  people: int, cases: int) -> tuple[float, float]:
    """(people term, interaction term) of a human group's estimate from its pigeonhole
    resamples (`both`: people and cases drawn) and the same draws of one factor alone.

    Owen 2007 (Ann. Appl. Stat. 1:386-411) shows that the pigeonhole variance is the sum of a
    people term, a case term and the person x case interaction term, each a plug-in estimate,
    so that it counts the interaction about three times where the estimate's variance has it
    once. The terms are read off the resamples (people alone, cases alone, the rest is the
    interaction) as the mean squares of a balanced crossed design divided by RC, for R people
    and C cases: vP = MS_people / RC, vPC = MS_error / RC (and vC = MS_cases / RC, the
    `one_way_variance` of the cases alone), each scaled from its plug-in form; a negative
    interaction is zero."""
    p_term = one_way_variance(people_only, people)
    c_term = one_way_variance(cases_only, cases)
    full = np.asarray(both, dtype=float)
    full = full[np.isfinite(full)]
    interaction = ((full.var() if full.size > 1 else 0.0) - p_term * (people - 1) / people
                   - c_term * (cases - 1) / cases) * people * cases / ((people - 1) * (cases - 1))
    return p_term, max(interaction, 0.0)


def combined_variance(groups: list[tuple[float, float, int]], case_term: float,
                      cases: int) -> tuple[float, float]:
    """(variance, degrees of freedom) of an estimate on C cases (or a paired difference of two,
    the same cases drawn for both) from the `case_term` vC of the cases alone (C - 1 df) and,
    for each human group in it, its `crossed_terms` (vP, vPC) and number of people R.

    The unbiased moment estimator of the crossed design is the sum of the variance components,
    v = sum over groups of (vP - vPC) + (vC - sum of vPC) + sum of vPC: vC holds each group's
    interaction once, as each vP holds its own. A component estimated negative is set to zero,
    as is usual for ANOVA estimates (Searle, Casella & McCulloch 1992, Variance Components), so
    a single group's v is vP + vC - vPC, or vC (vP) where the people (case) component is
    negative. Its degrees of freedom are Satterthwaite's (1946) over the mean squares that
    remain, sum(coefficient x term)^2 / sum((coefficient x term)^2 / df) with R - 1, C - 1 and
    (R - 1)(C - 1) df: a single remaining term keeps its own. v is never below a one-way term
    (vC, any vP), which then stands alone with its own df."""
    if cases < 2 or any(r < 2 for _, _, r in groups):
        return math.nan, math.nan
    interactions = sum(i for _, i, _ in groups)
    case_kept = case_term > interactions
    terms = [(case_term if case_kept else 0.0, cases - 1)]
    for p_term, interaction, r in groups:
        people_kept = p_term > interaction
        terms.append((p_term if people_kept else 0.0, r - 1))
        terms.append((interaction * (1 - people_kept - case_kept), (r - 1) * (cases - 1)))
    v = sum(t for t, _ in terms)
    one_way = [(case_term, cases - 1)] + [(p, r - 1) for p, _, r in groups]
    top, top_df = max(one_way, key=lambda t: t[0])
    if not v >= top:
        return top, float(top_df)
    denominator = sum(t * t / df for t, df in terms)
    fewest = min([cases] + [r for _, _, r in groups])
    df = v * v / denominator if denominator > 0 else float(fewest - 1)
    return v, max(1.0, min(df, float(cases * max(1, sum(r for _, _, r in groups)) - 1)))


def crossed_variance(both: np.ndarray, people_only: np.ndarray, cases_only: np.ndarray,
                     people: int, cases: int) -> tuple[float, float]:
    """(variance, degrees of freedom) of a human group's estimate from its pigeonhole resamples
    (`both`: people and cases drawn) and the same draws of one factor alone: `combined_variance`
    of its `crossed_terms`."""
    if people < 2 or cases < 2:
        return math.nan, math.nan
    return combined_variance([(*crossed_terms(both, people_only, cases_only, people, cases),
                               people)], one_way_variance(cases_only, cases), cases)


def _quantiles(df: float, confidence: float) -> tuple[float, float]:
    """(z, t with `df` degrees of freedom) for a two-sided `confidence` interval."""
    return (float(special.ndtri(0.5 + confidence / 2)),
            float(stats.t.ppf(0.5 + confidence / 2, df)))


def wilson(p: float, n: float, z: float) -> list[float]:
    """The Wilson score interval of a share p observed on n (possibly effective) trials."""
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z / denominator * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return [max(0.0, centre - half), min(1.0, centre + half)]


def cluster_clopper_pearson(p: float, cases: int, *,
                            confidence: float = CONFIDENCE) -> list[float]:
    """The exact interval of a share seen as 0 or 1 on `cases` cases, each case one trial
    (Clopper & Pearson 1934, Biometrika 26:404-413, with x = 0 or n; the cluster-level bound of
    Korn & Graubard 1998 when every answer agrees): [(a/2)^(1/C), 1] for p = 1 and
    [0, 1 - (a/2)^(1/C)] for p = 0, a = 1 - confidence."""
    bound = ((1 - confidence) / 2) ** (1 / cases)
    return [bound, 1.0] if p >= 1 else [0.0, 1 - bound]


def share_interval(p: float, variance: float, df: float, *, cases: int | None = None,
                   srs_variance: float | None = None,
                   confidence: float = CONFIDENCE) -> list[float]:
    """The Wilson interval of a share (or a 0-1 score) `p` whose design-based variance is
    `variance`, with `df` degrees of freedom (df + 1 units stand in where no spread was seen),
    the variance at least `srs_variance` (that of its answers as a simple random sample, s^2 /
    n: the design effect floored at 1, Korn & Graubard 1998; the effective size is set to the
    sample size where larger, as in Parker et al. 2017, NCHS Data Presentation Standards for
    Proportions, Vital Health Stat 2(175)) where given; for n answers of 0 or 1,
    n* = min(n, p(1 - p) / v). Where every answer agrees (p exactly 0 or 1) it is
    `cluster_clopper_pearson` on `cases` (default df + 1) trials: exact at the cluster level,
    never wider."""
    if p <= 0 or p >= 1:
        return cluster_clopper_pearson(p, cases if cases is not None else int(round(df)) + 1,
                                       confidence=confidence)
    z, t = _quantiles(df, confidence)
    spread = math.isfinite(variance) and variance > NO_SPREAD
    n_eff = p * (1 - p) / variance if spread else df + 1
    if srs_variance is not None and srs_variance > NO_SPREAD:
        n_eff = min(n_eff, p * (1 - p) / srs_variance)
    return wilson(p, n_eff * (z / t) ** 2, z)


def difference_interval(d: float, variance: float, df: float, *,
                        confidence: float = CONFIDENCE) -> list[float]:
    """d +/- t_df sqrt(variance)."""
    _, t = _quantiles(df, confidence)
    half = t * math.sqrt(max(variance, 0.0))
    return [d - half, d + half]


def holm(differences: list[tuple[float, float, float]], *,
         confidence: float = CONFIDENCE) -> list[tuple[list[float], float, float]]:
    """Holm-adjusted intervals and p-values of m differences d +/- t_df se, given as (d, se,
    df) (Holm 1979, Scand J Stat 6:65-70): each difference's two-sided p-value from t =
    d / se on df degrees of freedom; taken in order of increasing p, the i-th is tested at
    a / (m - i + 1), a = 1 - confidence, until one is not rejected, and that step's level holds
    for every later one. Its interval is d +/- t(1 - level / 2, df) se at the level of its step,
    so it leaves out 0 exactly when Holm's procedure rejects (the step-down intervals of
    Strassburger & Bretz 2008, Stat Med 27:4914-4927, in their two-sided form; simultaneous
    coverage is guaranteed by Bonferroni's a / m, which the first step is). The adjusted p-value
    is max over j <= i of min(1, (m - j + 1) p_(j)). Returns, in the given order, (interval,
    p, adjusted p)."""
    alpha, m = 1 - confidence, len(differences)
    if m == 0:
        return []
    p = [2 * float(stats.t.sf(abs(d) / se, df)) if se > 0 else (0.0 if d else 1.0)
         for d, se, df in differences]
    order = sorted(range(m), key=lambda i: p[i])
    out: list[tuple[list[float], float, float]] = [([], 0.0, 0.0)] * m
    level, stopped, running = alpha / m, False, 0.0
    for step, i in enumerate(order):
        if not stopped:
            level = alpha / (m - step)
            stopped = p[i] > level
        running = max(running, min(1.0, (m - step) * p[i]))
        d, se, df = differences[i]
        half = float(stats.t.ppf(1 - level / 2, df)) * se
        out[i] = ([d - half, d + half], p[i], running)
    return out
