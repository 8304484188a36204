"""The results' interval rule (`stats.intervals`, `stats.resample`): cases resampled with their
tasks, no interval below five cases, a width of its own at 0 and 1, and paired differences
against a direct loop over the same resamples and against their exact distribution; Pearson's
r from three items, with a warning under twenty cases."""

import itertools
import math

import numpy as np
import pytest
from scipy import stats as sps
from statsmodels.stats.proportion import proportion_confint

from calibration.comparison import versus
from stats.correlation import pearson
from stats.intervals import MIN_CASES, TOO_FEW, crossed_variance, share_interval, wilson
from stats.resample import MIN_R_CASES, Side, bootstrap_weights, group_mean, over_cases, paired

Z = 1.959963984540054


@pytest.mark.parametrize(("count", "n"), [(0, 7), (3, 7), (7, 7), (18, 40)])
def test_wilson_matches_statsmodels(count: int, n: int) -> None:
    assert wilson(count / n, n, Z) == pytest.approx(
        list(proportion_confint(count, n, alpha=0.05, method="wilson")), abs=1e-12)


@pytest.mark.parametrize(("p", "v", "df"), [(0.9, 0.0025, 4), (0.5, 0.02, 11), (0.3, 0.001, 39)])
def test_the_share_interval_is_the_score_interval_with_t_in_place_of_z(p, v, df) -> None:
    """Wilson's interval at n* = p(1-p)/v shrunk by (z/t)^2 is the set of p0 with
    (p - p0)^2 <= t^2 p0 (1 - p0) / n*: the roots of (1 + t^2/n*) p0^2 - (2p + t^2/n*) p0 + p^2."""
    t = sps.t.ppf(0.975, df)
    k = t * t / (p * (1 - p) / v)
    assert share_interval(p, v, df) == pytest.approx(sorted(np.roots([1 + k, -(2 * p + k), p * p])),
                                                     abs=1e-12)


def test_the_cell_interval_from_a_direct_loop_over_the_same_case_resamples() -> None:
    """Seven cases of 1-3 tasks: each resample keeps every task of a drawn case; the interval
    is Wilson's at n* = p(1-p)/v, v the resamples' variance x 7/6 but at least the 11 values'
    variance as a simple random sample (the design effect floored at 1, Korn & Graubard 1998),
    shrunk by (z/t_6)^2."""
    case = ["c1", "c1", "c2", "c3", "c3", "c3", "c4", "c5", "c6", "c6", "c7"]
    per_task = [1, 0.5, 0, 1, 1, 0, 0.5, 1, 0, 1, 1]
    est = over_cases(per_task, case, resamples=500, seed=3)
    weights = bootstrap_weights(7, 500, 3)
    labels = sorted(set(case))
    drawn = []
    for row in weights:
        kept = [v for c, v in zip(case, per_task, strict=True)
                for _ in range(int(row[labels.index(c)]))]
        drawn.append(np.mean(kept))
    p = np.mean(per_task)
    v = max(np.var(drawn) * 7 / 6, np.var(per_task) / 11)
    assert v > np.var(drawn) * 7 / 6  # the floor holds here: the resamples' n* exceeds 11 x
    n_eff = p * (1 - p) / v * (Z / sps.t.ppf(0.975, 6)) ** 2
    assert est.value == round(p, 4) and est.note is None
    assert est.ci == [round(q, 4) for q in wilson(p, n_eff, Z)]


def test_no_interval_below_five_cases_however_many_tasks() -> None:
    assert MIN_CASES == 5
    one_case = over_cases([1.0, 0.0, 1.0, 1.0] * 10, ["case-1"] * 40)
    assert (one_case.value, one_case.ci, one_case.note) == (0.75, None, TOO_FEW)
    four = over_cases([1.0, 0.0, 1.0, 1.0], ["a", "b", "c", "d"])
    assert (four.ci, four.note) == (None, TOO_FEW)
    five = over_cases([1.0, 0.0, 1.0, 1.0, 0.0], ["a", "b", "c", "d", "e"])
    assert five.ci is not None and five.note is None
    # a human group: four cases answered by six people, then five
    people = [f"p{i}" for i in range(6) for _ in range(4)]
    tasks = [f"t{t}" for _ in range(6) for t in range(4)]
    values = [float((i + t) % 2) for i in range(6) for t in range(4)]
    assert group_mean(tasks, values, people, cases=tasks).note == TOO_FEW
    people5 = [f"p{i}" for i in range(6) for _ in range(5)]
    tasks5 = [f"t{t}" for _ in range(6) for t in range(5)]
    values5 = [float((i + t) % 2) for i in range(6) for t in range(5)]
    assert group_mean(tasks5, values5, people5).ci is not None


@pytest.mark.parametrize("cases", [5, 12, 40])
@pytest.mark.parametrize("value", [0.0, 1.0])
def test_a_share_at_0_or_1_has_the_exact_interval_of_its_cases(cases: int, value: float) -> None:
    """Every answer right (or wrong): Clopper-Pearson with each case one trial, never wider
    (issue 45: [0.478, 1] at 5 cases, where the Wilson rule gave [0.393, 1]); a width of its
    own, never [1, 1]."""
    est = over_cases([value] * (2 * cases), [f"c{i // 2}" for i in range(2 * cases)])
    low, high = est.ci
    assert high - low > 0.05 and low <= value <= high
    # the exact bound by scipy's beta quantile: x = n = cases successes (Clopper & Pearson 1934)
    exact = [sps.beta.ppf(0.025, cases, 1), 1.0] if value else [0.0, sps.beta.ppf(0.975, 1, cases)]
    if value:
        assert low >= round(exact[0], 4) and high == 1.0
    else:
        assert high <= round(exact[1], 4) and low == 0.0
    assert est.ci == [round(q, 4) for q in exact]
    people = [f"p{i}" for i in range(4) for _ in range(cases)]
    tasks = [f"t{t}" for _ in range(4) for t in range(cases)]
    group = group_mean(tasks, [value] * len(tasks), people)  # every case one trial here too
    assert group.ci == est.ci
    assert share_interval(value, 0.0, cases - 1) == pytest.approx(exact, abs=1e-12)
    if cases == 5 and value:
        assert est.ci == [0.4782, 1.0]


def _components(groups: list[tuple[float, float, int]], vc: float, c: int
                ) -> tuple[float, float]:
    """The variance components of a crossed design from the cases' term vc and each human
    group's (people term, interaction term, people), a negative component set to zero, never
    below a one-way term; Satterthwaite's df over the mean squares that remain."""
    kept_c = vc > sum(i for _, i, _ in groups)
    terms = [(vc * kept_c, c - 1)]
    for vp, ve, r in groups:
        terms += [(vp * (vp > ve), r - 1), (ve * (1 - (vp > ve) - kept_c), (r - 1) * (c - 1))]
    v = sum(t for t, _ in terms)
    top = max([(vc, c - 1)] + [(vp, r - 1) for vp, _, r in groups])
    if v < top[0]:
        return top
    return v, v * v / sum(t * t / df for t, df in terms)


def _crossed(both, people_only, cases_only, r: int, c: int) -> tuple[float, float, float]:
    """The people, case and interaction terms of a group's pigeonhole resamples (Owen 2007),
    each the mean square of a balanced crossed design over RC."""
    vp, vc = np.var(people_only) * r / (r - 1), np.var(cases_only) * c / (c - 1)
    ve = max(0.0, (np.var(both) - np.var(people_only) - np.var(cases_only))
             * r * c / ((r - 1) * (c - 1)))
    return vp, vc, ve


def _loop_difference(a: Side, b: Side, resamples: int, seed: int) -> tuple[float, list[float]]:
    """The paired difference and its interval, one resample at a time: the same cases drawn
    for both sides (one generator: cases, then a's people, then b's), each side's estimate of
    the drawn copies. The cases' term: the variance of the differences with the cases alone
    drawn x n/(n-1); each human side adds the people and interaction terms of its own
    resamples (`_crossed`), combined by `_components`; d +/- t_df sqrt(v)."""
    rng = np.random.default_rng(seed)
    labels = sorted(set(a.case) | set(b.case))
    case_w = bootstrap_weights(len(labels), resamples, rng)
    people_w = {id(s): bootstrap_weights(len(set(s.person)), resamples, rng)
                for s in (a, b) if s.person is not None}

    def estimate(s: Side, case_row: int | None, people_row: int | None) -> float:
        def cw(c: str) -> float:
            return 1.0 if case_row is None else case_w[case_row, labels.index(c)]

        if s.person is None:
            tasks = sorted(set(s.task))
            means = {t: np.mean([v for t2, v in zip(s.task, s.values, strict=True) if t2 == t])
                     for t in tasks}
            case_of = dict(zip(s.task, s.case, strict=True))
            w = [cw(case_of[t]) for t in tasks]
            return float(np.dot(w, [means[t] for t in tasks]) / sum(w))
        names = sorted(set(s.person))
        total = weight = 0.0
        for i, name in enumerate(names):
            mine = [(v, cw(c)) for p, c, v in zip(s.person, s.case, s.values, strict=True)
                    if p == name]
            answered = sum(w for _, w in mine)
            drawn = 1.0 if people_row is None else people_w[id(s)][people_row, i]
            if answered and drawn:
                total += drawn * sum(v * w for v, w in mine) / answered
                weight += drawn
        return total / weight

    def draws(s: Side, cases: bool, people: bool) -> np.ndarray:
        return np.array([estimate(s, r if cases else None, r if people else None)
                         for r in range(resamples)])

    d = estimate(a, None, None) - estimate(b, None, None)
    n = len(labels)
    groups = []
    for s in (a, b):
        r = len(set(s.person or []))
        if r >= 2:
            vp, _, ve = _crossed(draws(s, True, True), draws(s, False, True),
                                 draws(s, True, False), r, n)
            groups.append((vp, ve, r))
    vc = np.var(draws(a, True, False) - draws(b, True, False)) * n / (n - 1)
    v, df = _components(groups, vc, n)
    half = sps.t.ppf(0.975, df) * math.sqrt(v)
    return d, [d - half, d + half]


def test_the_crossed_variance_is_the_unbiased_anova_estimator_on_balanced_data() -> None:
    """R people x C cases, one answer each: with many resamples, the people, case and
    interaction terms of the pigeonhole resamples give (MS_people + MS_cases - MS_error) / RC,
    the unbiased variance of the grand mean under the crossed random-effects model."""
    rng = np.random.default_rng(8)
    r, c = 6, 9
    y = rng.normal(size=(r, 1)) * 0.4 + rng.normal(size=(1, c)) + rng.normal(size=(r, c))
    people = bootstrap_weights(r, 40000, rng)
    cases = bootstrap_weights(c, 40000, rng)
    both = np.einsum("bp,pc,bc->b", people, y, cases) / (r * c)
    people_only = people @ y.mean(axis=1) / r
    cases_only = cases @ y.mean(axis=0) / c
    v, df = crossed_variance(both, people_only, cases_only, r, c)
    ms_p = c * np.var(y.mean(axis=1), ddof=1)
    ms_c = r * np.var(y.mean(axis=0), ddof=1)
    resid = y - y.mean(axis=1, keepdims=True) - y.mean(axis=0, keepdims=True) + y.mean()
    ms_e = (resid ** 2).sum() / ((r - 1) * (c - 1))
    # never below a one-way term: here the people component is estimated negative (MS_people <
    # MS_error); set to zero, it leaves MS_cases / RC, one mean square with C - 1 df
    assert ms_p < ms_e and (ms_p + ms_c - ms_e) < ms_c
    assert v == pytest.approx(ms_c / (r * c), rel=0.02)
    assert df == c - 1
    strong = rng.normal(size=(r, 1)) * 1.5 + rng.normal(size=(1, c)) + rng.normal(size=(r, c))
    v2, df2 = crossed_variance(np.einsum("bp,pc,bc->b", people, strong, cases) / (r * c),
                               people @ strong.mean(axis=1) / r, cases @ strong.mean(axis=0) / c,
                               r, c)
    ms_p, ms_c = c * np.var(strong.mean(axis=1), ddof=1), r * np.var(strong.mean(axis=0), ddof=1)
    resid = (strong - strong.mean(axis=1, keepdims=True) - strong.mean(axis=0, keepdims=True)
             + strong.mean())
    ms_e = (resid ** 2).sum() / ((r - 1) * (c - 1))
    assert ms_p + ms_c - ms_e > max(ms_p, ms_c)
    assert v2 == pytest.approx((ms_p + ms_c - ms_e) / (r * c), rel=0.03)
    # Satterthwaite (1946) from the mean squares
    satterthwaite = (ms_p + ms_c - ms_e) ** 2 / (ms_p ** 2 / (r - 1) + ms_c ** 2 / (c - 1)
                                                 + ms_e ** 2 / ((r - 1) * (c - 1)))
    assert df2 == pytest.approx(satterthwaite, rel=0.05)
    # no people or case effect at all (rows and columns centred): both components set to zero
    # leave MS_error / RC, with (R - 1)(C - 1) df
    noise = rng.normal(size=(r, c))
    noise += noise.mean() - noise.mean(axis=1, keepdims=True) - noise.mean(axis=0, keepdims=True)
    v3, df3 = crossed_variance(np.einsum("bp,pc,bc->b", people, noise, cases) / (r * c),
                               people @ noise.mean(axis=1) / r, cases @ noise.mean(axis=0) / c,
                               r, c)
    ms_e = (noise ** 2).sum() / ((r - 1) * (c - 1))
    assert v3 == pytest.approx(ms_e / (r * c), rel=0.03)
    assert df3 == (r - 1) * (c - 1)


def _study(seed: int = 4) -> tuple[Side, Side, Side]:
    """Two models (two samples a task) and a group of four people, on 9 tasks in 6 cases;
    cases c0 (t0, t1), c1 (t2), c2 (t3, t4), c3 (t5), c4 (t6, t7), c5 (t8);
    model b skipped task t8, person p3 answered only t0-t4."""
    rng = np.random.default_rng(seed)
    case = {f"t{t}": f"c{t * 2 // 3}" for t in range(9)}
    tasks_a = [t for t in case for _ in range(2)]
    tasks_b = [t for t in case if t != "t8" for _ in range(2)]
    a = Side(tasks_a, [case[t] for t in tasks_a], list(rng.integers(0, 2, len(tasks_a)) * 1.0))
    b = Side(tasks_b, [case[t] for t in tasks_b], list(rng.random(len(tasks_b))))
    people = [(f"p{p}", t) for p in range(4) for t in case if p < 3 or t < "t5"]
    group = Side([t for _, t in people], [case[t] for _, t in people],
                 list(rng.integers(0, 2, len(people)) * 1.0), [p for p, _ in people])
    return a, b, group


def _other_group(group: Side, seed: int = 9) -> Side:
    """Three other people on the group's tasks but t2 and t6, their own answers."""
    rng = np.random.default_rng(seed)
    case = dict(zip(group.task, group.case, strict=True))
    rows = [(f"q{p}", t) for p in range(3) for t in sorted(case) if t not in ("t2", "t6")]
    return Side([t for _, t in rows], [case[t] for _, t in rows],
                list(rng.integers(0, 2, len(rows)) * 1.0), [p for p, _ in rows])


@pytest.mark.parametrize("pair", ["model-model", "group-model", "group-group"])
def test_the_paired_difference_matches_a_direct_loop(pair: str) -> None:
    a, b, group = _study()
    left, right = {"model-model": (a, b), "group-model": (group, b),
                   "group-group": (group, _other_group(group))}[pair]
    got = paired(left, right, resamples=400, seed=5)
    d, ci = _loop_difference(left.on(set(right.task)), right.on(set(left.task)), 400, 5)
    if pair == "group-group":  # t2 (case c1) and t6 (c4, with t7) left out
        assert (got.tasks, got.cases) == (7, 5)
    else:
        assert (got.tasks, got.cases) == (8, 5)  # t8 (b skipped it; case c5) is left out
    assert got.difference.value == round(d, 4)
    assert got.difference.ci == [round(q, 4) for q in ci]


@pytest.mark.slow
def test_the_paired_variance_matches_its_exact_bootstrap_distribution() -> None:
    """Five cases: every one of the 5^5 ordered draws of cases, against 40,000 resamples."""
    a, b, _ = _study()
    a, b = a.on({f"t{t}" for t in range(7)}), b.on({f"t{t}" for t in range(7)})  # c0..c4
    labels = sorted(set(a.case))
    assert len(labels) == 5

    def side(s: Side, counts: np.ndarray) -> float:
        tasks = sorted(set(s.task))
        means = [np.mean([v for t2, v in zip(s.task, s.values, strict=True) if t2 == t])
                 for t in tasks]
        w = [counts[labels.index(dict(zip(s.task, s.case, strict=True))[t])] for t in tasks]
        return float(np.dot(w, means) / sum(w))

    exact = []
    for draw in itertools.product(range(5), repeat=5):
        counts = np.bincount(draw, minlength=5)
        exact.append(side(a, counts) - side(b, counts))
    variance = np.var(exact) * 5 / 4
    got = paired(a, b, resamples=40000, seed=6)
    d = got.difference.value
    half = (got.difference.ci[1] - got.difference.ci[0]) / 2
    assert half == pytest.approx(sps.t.ppf(0.975, 4) * math.sqrt(variance), rel=0.02)
    assert got.difference.ci[0] == pytest.approx(d - half, abs=1e-4)


def test_a_paired_difference_on_too_few_cases_has_no_interval() -> None:
    a, b, _ = _study()
    few = {"t0", "t1", "t2", "t3"}  # cases c0, c1, c2
    got = paired(a.on(few), b, resamples=200)
    assert (got.cases, got.difference.ci, got.difference.note) == (3, None, TOO_FEW)


def test_r_needs_three_items_and_warns_under_twenty_cases() -> None:
    two = versus(np.array([1.0, 2.0]), np.array([1.0, 3.0]), domain=None)
    assert two.pearson.r is None
    assert two.reasons["pearson"] == "needs 3 items scored by both, found 2"
    three = pearson(np.array([1.0, 2.0, 4.0]), np.array([1.0, 3.0, 3.5]), bootstrap=0)
    assert three.r is not None and "3 items" in three.warning
    rng = np.random.default_rng(0)
    x = rng.standard_normal(60)
    y = x + rng.standard_normal(60)
    for cases, warned in ((10, True), (MIN_R_CASES, False), (60, False)):
        res = pearson(x, y, bootstrap=200, clusters=np.arange(60) % cases)
        assert res.units == cases
        assert (res.warning is not None) == warned
        if warned:
            assert f"{cases} cases, fewer than {MIN_R_CASES}" in res.warning
