"""Resampling: the helpers every agreement statistic's interval shares (item or case bootstrap
weights, per-case sums, the delete-one-case jackknife, the percentile interval, the few-cases
warning), and the results' estimators below.

A group's mean with its 95% interval, cases resampled: over cases (with their tasks) for a
model or one person, over people and cases together for a human group; and the paired
difference of two groups on the tasks both answered.

Tasks share cases (a case's differential, lesion and rationale tasks read the same record and
images), so the unit of resampling is the case: a resample draws cases with replacement and
keeps every task of a drawn case (the cluster bootstrap, Davison & Hinkley 1997, sec. 3.8).

A model answers every task (several samples each): its estimate is the mean over tasks of a
per-task value; in a resample it is the mean over the drawn cases' tasks.

A human group's people answer the same exam, so its answers are crossed by person and case:
the estimate is the mean over people of each person's mean over their answers, and the
resamples come from the pigeonhole bootstrap (Owen 2007, Ann. Appl. Stat. 1:386-411), which
draws people and cases independently with replacement and keeps the answers of drawn people to
the tasks of drawn cases (as often as both were drawn). It carries the spread between people
and between cases, with a case's difficulty shared by everyone who answered it; its variance
counts the person x case interaction about three times (Owen 2007), which
`stats.intervals.crossed_variance` takes apart.

The interval is computed from the resamples' variance by `stats.intervals` (a Wilson interval
with an effective sample size; for a human group the people, case and interaction terms of
the pigeonhole resamples combined by `crossed_variance`), and not given at all below
`MIN_CASES` cases.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy import stats

from stats.intervals import (
    MIN_CASES,
    TOO_FEW,
    combined_variance,
    crossed_terms,
    crossed_variance,
    difference_interval,
    one_way_variance,
    share_interval,
)

__all__ = ["DIGITS", "MIN_CASES", "MIN_CLUSTER_UNITS", "MIN_R_CASES", "NONE", "RESAMPLES",
           "TOO_FEW", "Difference", "Estimate", "Side", "bootstrap_weights", "case_units",
           "few_cases_warning", "group_mean", "jackknife_interval", "over_cases", "over_people",
           "paired", "percentile_ci", "pigeonhole", "pooled_share", "unit_sums"]

RESAMPLES = 2000
DIGITS = 4


# ------------------------------------------------------------------ resampling helpers
#
# Items of one case share its record and images, so they are not independent: every interval
# of the gate's statistics resamples whole cases, as r's does. Statistics that are smooth
# functions of per-item sums (ICC, the Bland-Altman bias and limits, the Alt-Test's advantage
# probability) get the delete-one-case jackknife with t on G - 1 degrees of freedom; the
# Alt-Test's winning rate (a share of tests that reject) the percentile interval of the same
# case resamples as r. Without cases every item is its own unit.

MIN_CLUSTER_UNITS = 3  # no clustered interval from fewer than 3 cases (or items), as no r
#                       from fewer than 3 items (`stats.correlation.MIN_R_ITEMS`)
MIN_R_CASES = 20  # an r interval from fewer cases carries `few_cases_warning`


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


def percentile_ci(values: np.ndarray, confidence: float = 0.95) -> list[float] | None:
    """The percentile bootstrap interval (Efron & Tibshirani 1993, ch. 13), NaN resamples
    left out; None when fewer than half the resamples define the statistic."""
    v = values[np.isfinite(values)]
    if v.size < values.size / 2:
        return None
    tail = (1 - confidence) / 2 * 100
    return [float(x) for x in np.percentile(v, [tail, 100 - tail])]


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


# ------------------------------------------------------------------ the results' estimators


def _round(x: float) -> float:
    return round(float(x), DIGITS)


@dataclass(frozen=True)
class Estimate:
    """A point estimate with its 95% interval; `note` says why there is none (`TOO_FEW`)."""

    value: float | None
    ci: list[float] | None = None
    note: str | None = None

    @classmethod
    def share(cls, value: float, variance: float, df: float, *, cases: int,
              answers: Sequence[float] | np.ndarray | None = None) -> Estimate:
        """`value` (on 0-1) with `stats.intervals.share_interval` of its design-based
        `variance` and `df` degrees of freedom, the variance at least that of `answers` (the
        0-1 values it stands on) as a simple random sample; none below `MIN_CASES` cases."""
        if cases < MIN_CASES or not df >= 1:
            return cls(_round(value), None, TOO_FEW)
        srs = None if answers is None else float(np.var(answers) / len(answers))
        ci = share_interval(float(value), variance, df, cases=cases, srs_variance=srs)
        return cls(_round(value), [_round(q) for q in ci])


NONE = Estimate(None)


@lru_cache(maxsize=16)
def _case_weights(n: int, resamples: int, seed: int) -> np.ndarray:
    """`bootstrap_weights` of n cases, shared by every measure of the same cases (read-only)."""
    weights = bootstrap_weights(n, resamples, seed)
    weights.flags.writeable = False
    return weights


def _index(labels: Sequence) -> np.ndarray:
    return np.unique(np.asarray(labels, dtype=object), return_inverse=True)[1].ravel()


def _over_cases(per_task: np.ndarray, case: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The resampled means of per-task values, cases (`case`: each task's case index) drawn
    by `weights` (resamples x cases)."""
    n = weights.shape[1]
    sums = np.bincount(case, weights=per_task, minlength=n)
    counts = np.bincount(case, minlength=n).astype(float)
    return (weights @ sums) / (weights @ counts)


def over_cases(per_task: Sequence[float], cases: Sequence, *,
               answers: Sequence[float] | np.ndarray | None = None,
               resamples: int = RESAMPLES, seed: int = 0) -> Estimate:
    """The mean of per-task values (one per task, `cases` naming each task's case), cases
    resampled with their tasks. `answers`: the values behind them (default the per-task values;
    a task's mean over 5 samples stands on 5 answers), whose variance as a simple random sample
    is the least the interval's can be (`stats.intervals.share_interval`)."""
    per_task = np.asarray(per_task, dtype=float)
    if per_task.size == 0:
        return NONE
    case = _index(cases)
    n = int(case.max()) + 1
    if n < MIN_CASES:
        return Estimate(_round(per_task.mean()), None, TOO_FEW)
    resampled = _over_cases(per_task, case, _case_weights(n, resamples, seed))
    return Estimate.share(per_task.mean(), one_way_variance(resampled, n), n - 1, cases=n,
                          answers=per_task if answers is None else answers)


def _crossed(person: Sequence, case: Sequence, values: Sequence[float]
             ) -> tuple[np.ndarray, np.ndarray]:
    """The person x case sums of `values` and their answer counts."""
    p, c = _index(person), _index(case)
    total = np.zeros((p.max() + 1, c.max() + 1))
    answered = np.zeros_like(total)
    np.add.at(total, (p, c), np.asarray(values, dtype=float))
    np.add.at(answered, (p, c), 1.0)
    return total, answered


def _pigeonhole(total: np.ndarray, answered: np.ndarray, people: np.ndarray,
                cases: np.ndarray) -> np.ndarray:
    """The resampled means over drawn people of each one's mean over the drawn cases they
    answered (a drawn person none of whose cases was drawn is left out; NaN if nobody is
    left)."""
    sums, counts = cases @ total.T, cases @ answered.T  # (resamples, people)
    drawn = people * (counts > 0)
    means = np.divide(sums, counts, out=np.zeros_like(sums), where=counts > 0)
    with np.errstate(invalid="ignore"):
        return (drawn * means).sum(axis=1) / drawn.sum(axis=1)


def _person_means(total: np.ndarray, answered: np.ndarray) -> float:
    return float(np.mean(total.sum(axis=1) / answered.sum(axis=1)))


def _pooled_pigeonhole(total: np.ndarray, answered: np.ndarray, people: np.ndarray,
                       cases: np.ndarray) -> np.ndarray:
    """The resampled pooled shares: the drawn people's sums over the drawn cases over their
    answer counts (NaN where nothing was drawn)."""
    sums, counts = cases @ total.T, cases @ answered.T  # (resamples, people)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (people * sums).sum(axis=1) / (people * counts).sum(axis=1)


def _parts(total: np.ndarray, answered: np.ndarray, people: np.ndarray,
           cases: np.ndarray, statistic=_pigeonhole) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The pigeonhole resamples of `statistic`, and the same draws of people alone (every case
    once) and of cases alone (every person once)."""
    return (statistic(total, answered, people, cases),
            statistic(total, answered, people, np.ones_like(cases)),
            statistic(total, answered, np.ones_like(people), cases))


def pigeonhole(person: Sequence, case: Sequence, values: Sequence[float], *,
               resamples: int = RESAMPLES, seed: int = 0) -> tuple[float, np.ndarray, int, int]:
    """(the mean over people of each person's mean value, its pigeonhole resamples, the number
    of people, the number of cases); one value per answer, `case` the case of its task. People
    are drawn first, then cases, from one generator seeded with `seed`."""
    total, answered = _crossed(person, case, values)
    rng = np.random.default_rng(seed)
    people = bootstrap_weights(total.shape[0], resamples, rng)
    cases = bootstrap_weights(total.shape[1], resamples, rng)
    return (_person_means(total, answered), _pigeonhole(total, answered, people, cases),
            total.shape[0], total.shape[1])


def _variance(both: np.ndarray, people_only: np.ndarray, cases_only: np.ndarray,
              people: int, cases: int) -> tuple[float, float]:
    """(variance, degrees of freedom): `crossed_variance` with two people or more, else the
    cases' one-way variance."""
    if people >= 2:
        return crossed_variance(both, people_only, cases_only, people, cases)
    return one_way_variance(cases_only, cases), cases - 1


def over_people(person: Sequence, case: Sequence, values: Sequence[float], *,
                resamples: int = RESAMPLES, seed: int = 0) -> Estimate:
    """The mean over people of each person's mean value, with the interval of its pigeonhole
    resamples (`stats.intervals.crossed_variance`)."""
    if len(values) == 0:
        return NONE
    total, answered = _crossed(person, case, values)
    if total.shape[1] < MIN_CASES:
        return Estimate(_round(_person_means(total, answered)), None, TOO_FEW)
    rng = np.random.default_rng(seed)
    people = bootstrap_weights(total.shape[0], resamples, rng)
    cases = bootstrap_weights(total.shape[1], resamples, rng)
    v, df = _variance(*_parts(total, answered, people, cases), *total.shape)
    return Estimate.share(_person_means(total, answered), v, df, cases=total.shape[1],
                          answers=values)


def group_mean(tasks: Sequence[str], values: Sequence[float],
               people: Sequence[str | None] | None = None, *, cases: Sequence | None = None,
               resamples: int = RESAMPLES, seed: int = 0) -> Estimate:
    """A row's estimate of per-response values: without `people` (a model, or one person), the
    mean over tasks of each task's mean (`over_cases`); with them (a human group), the mean over
    people of each person's mean (`over_people`; a response without a person is its own).
    `cases`: each response's case (default: every task its own case)."""
    cases = tasks if cases is None else cases
    if people is None:
        per_task: dict[str, list[float]] = defaultdict(list)
        case_of: dict[str, object] = {}
        for task, case, v in zip(tasks, cases, values, strict=True):
            per_task[task].append(v)
            case_of[task] = case
        return over_cases([sum(v) / len(v) for v in per_task.values()],
                          [case_of[t] for t in per_task], answers=values,
                          resamples=resamples, seed=seed)
    who = [p if p is not None else f"#{i}" for i, p in enumerate(people)]
    return over_people(who, cases, values, resamples=resamples, seed=seed)


def pooled_share(values: Sequence[float], cases: Sequence,
                 people: Sequence[str | None] | None = None, *, resamples: int = RESAMPLES,
                 seed: int = 0) -> Estimate:
    """The pooled share k/n of 0/1 `values` (one per unit, e.g. a conversation, `cases` its
    case), every unit weighted alike, with the interval of its resamples: without `people`,
    cases drawn with their units (the cluster bootstrap of a ratio estimator, Davison & Hinkley
    1997, sec. 3.8: `over_cases` of the units' values is exactly that); with them (a human
    group, a unit without a person its own person), the pigeonhole bootstrap (Owen 2007) of the
    same ratio, people and cases drawn, its variance taken apart by `crossed_variance`."""
    if len(values) == 0:
        return NONE
    if people is None:
        return over_cases(values, cases, resamples=resamples, seed=seed)
    who = [p if p is not None else f"#{i}" for i, p in enumerate(people)]
    total, answered = _crossed(who, cases, values)
    share = float(total.sum() / answered.sum())
    if total.shape[1] < MIN_CASES:
        return Estimate(_round(share), None, TOO_FEW)
    rng = np.random.default_rng(seed)
    drawn_people = bootstrap_weights(total.shape[0], resamples, rng)
    drawn_cases = bootstrap_weights(total.shape[1], resamples, rng)
    v, df = _variance(*_parts(total, answered, drawn_people, drawn_cases, _pooled_pigeonhole),
                      *total.shape)
    return Estimate.share(share, v, df, cases=total.shape[1], answers=values)


# ------------------------------------------------------------------ paired differences


@dataclass(frozen=True)
class Side:
    """One side of a comparison: one value per response, its task and case, and its person
    for a human group (None for a model: per-task means, averaged over tasks)."""

    task: Sequence[str]
    case: Sequence
    values: Sequence[float]
    person: Sequence[str] | None = None

    def on(self, tasks: set[str]) -> Side:
        keep = [i for i, t in enumerate(self.task) if t in tasks]
        return Side([self.task[i] for i in keep], [self.case[i] for i in keep],
                    [self.values[i] for i in keep],
                    None if self.person is None else [self.person[i] for i in keep])


@dataclass(frozen=True)
class Difference:
    """a - b on the tasks both answered, with its 95% interval (`note`: why none); `se` and
    `df` give the interval d +/- t_df se (None without one), `holm` the Holm-adjusted
    interval among the differences shown together (`stats.intervals.holm`, set by the
    caller), `p` and `p_holm` the two-sided p-values, unadjusted and adjusted."""

    a: float | None
    b: float | None
    difference: Estimate
    tasks: int
    cases: int
    se: float | None = None
    df: float | None = None
    holm: Estimate | None = None
    p: float | None = None
    p_holm: float | None = None


def _side(side: Side, case_index: dict, case_w: np.ndarray, rng: np.random.Generator
          ) -> tuple[float, tuple[np.ndarray, np.ndarray, np.ndarray], int | None]:
    """A side's estimate; its resamples under the shared case draws `case_w` (a human group's
    people drawn from `rng`): both factors, people alone, cases alone; its number of people
    (None for a model, whose 'people alone' resamples are its estimate)."""
    case = np.array([case_index[c] for c in side.case])
    n = case_w.shape[1]
    if side.person is None:
        per_task: dict[str, list[float]] = defaultdict(list)
        case_of: dict[str, int] = {}
        for t, c, v in zip(side.task, case, side.values, strict=True):
            per_task[t].append(v)
            case_of[t] = int(c)
        means = np.array([sum(v) / len(v) for v in per_task.values()])
        resampled = _over_cases(means, np.array([case_of[t] for t in per_task]), case_w)
        point = float(means.mean())
        return point, (resampled, np.full_like(resampled, point), resampled), None
    p = _index(side.person)
    total = np.zeros((p.max() + 1, n))
    answered = np.zeros_like(total)
    np.add.at(total, (p, case), np.asarray(side.values, dtype=float))
    np.add.at(answered, (p, case), 1.0)
    people = bootstrap_weights(total.shape[0], case_w.shape[0], rng)
    return (_person_means(total, answered), _parts(total, answered, people, case_w),
            total.shape[0])


def paired(a: Side, b: Side, *, resamples: int = RESAMPLES, seed: int = 0) -> Difference:
    """The difference of a's and b's estimates on the tasks both answered, with the interval
    of `stats.intervals.difference_interval` from paired resamples: the same cases drawn for
    both sides (one generator seeded with `seed` draws the cases, then a's people, then b's),
    so what the two share (a case's difficulty) cancels. Variance: `combined_variance` of the
    cases' one-way variance of the differences and, for each human side of two people or
    more, the people and interaction terms of its own resamples (`crossed_terms`); none below
    `MIN_CASES` cases."""
    common = set(a.task) & set(b.task)
    a, b = a.on(common), b.on(common)
    if not common:
        return Difference(None, None, NONE, 0, 0)
    labels = sorted(set(a.case) | set(b.case), key=str)
    case_index = {c: i for i, c in enumerate(labels)}
    rng = np.random.default_rng(seed)
    case_w = bootstrap_weights(len(labels), resamples, rng)
    pa, ra, na = _side(a, case_index, case_w, rng)
    pb, rb, nb = _side(b, case_index, case_w, rng)
    d, n = pa - pb, len(labels)
    if n < MIN_CASES:
        return Difference(_round(pa), _round(pb), Estimate(_round(d), None, TOO_FEW),
                          len(common), n)
    groups = [(*crossed_terms(*r, people, n), people) for r, people in ((ra, na), (rb, nb))
              if people is not None and people >= 2]
    v, df = combined_variance(groups, one_way_variance(ra[2] - rb[2], n), n)
    est = Estimate(_round(d), [_round(q) for q in difference_interval(d, v, df)])
    return Difference(_round(pa), _round(pb), est, len(common), n,
                      math.sqrt(max(v, 0.0)), float(df))
