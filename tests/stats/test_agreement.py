"""Agreement statistics against published worked examples and against pingouin/scipy/sklearn."""


import krippendorff
import numpy as np
import pandas as pd
import pingouin as pg
import pytest
from scipy import stats
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.multitest import multipletests

from calibration import comparison as C
from stats import agreement as A

NAN = np.nan

# Shrout & Fleiss (1979), Table 2: 6 targets rated by 4 judges.
SHROUT_FLEISS = np.array(
    [[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]], float
)

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability": 4 observers x 12 units,
# missing values allowed (here transposed to units x observers).
KRIPPENDORFF = np.array(
    [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
        [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN],
    ]
).T

# Bland & Altman (1986), Lancet: first PEFR reading (l/min), Wright vs mini Wright, 17 subjects.
WRIGHT = np.array([494, 395, 516, 434, 476, 557, 413, 442, 650, 433, 417, 656, 267, 478, 178, 423,
                   427], float)
MINI = np.array([512, 430, 520, 428, 500, 600, 364, 380, 658, 445, 432, 626, 260, 477, 259, 350,
                 451], float)


def _random_panel(rng, n=200, k=3, noise=0.8, missing=0.1):
    truth = rng.integers(0, 5, n).astype(float)
    experts = np.clip(np.round(truth[:, None] + rng.normal(0, noise, (n, k))), 0, 4)
    experts[rng.random((n, k)) < missing] = NAN
    return truth, experts


# ------------------------------------------------------------------ published values


def test_icc_reproduces_shrout_fleiss_table():
    res = A.icc(SHROUT_FLEISS)
    published = {"ICC1": 0.17, "ICC2": 0.29, "ICC3": 0.71, "ICC1k": 0.44, "ICC2k": 0.62,
                 "ICC3k": 0.91}
    for name, value in published.items():
        assert res.form(name).icc == pytest.approx(value, abs=0.006), name
        lo, hi = res.form(name).ci95
        assert lo < res.form(name).icc < hi
    assert res.n_items == 6 and res.n_raters == 4


def test_krippendorff_alpha_reproduces_worked_example():
    res = A.krippendorff_alpha(KRIPPENDORFF, domain=[1, 2, 3, 4, 5])
    assert res.nominal == pytest.approx(0.743, abs=5e-4)
    assert res.interval == pytest.approx(0.849, abs=5e-4)
    assert res.ordinal == pytest.approx(0.815, abs=5e-4)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_krippendorff_alpha_matches_the_package_with_missing_ratings(seed):
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, 7, (80, 5)).astype(float)
    codes[rng.random(codes.shape) < 0.3] = NAN
    ours = A.krippendorff_alpha(codes, domain=range(7))
    for level in A.ALPHA_LEVELS:
        ref = krippendorff.alpha(reliability_data=codes.T, value_domain=list(range(7)),
                                 level_of_measurement=level)
        assert getattr(ours, level) == pytest.approx(ref, abs=1e-13), level
    scores = np.round(rng.random((60, 4)), 4)  # continuous: every distinct value a "level"
    scores[rng.random(scores.shape) < 0.2] = NAN
    ours = A.krippendorff_alpha(scores, domain=None)
    values = np.unique(scores[np.isfinite(scores)])
    for level in ("interval", "ordinal"):
        ref = krippendorff.alpha(reliability_data=scores.T, value_domain=values,
                                 level_of_measurement=level)
        assert getattr(ours, level) == pytest.approx(ref, abs=1e-13), level
    assert ours.nominal is None and ours.reasons["nominal"] == A.CONTINUOUS


def test_krippendorff_alpha_is_null_with_reason_when_undefined():
    flat = A.krippendorff_alpha(np.full((4, 3), 2.0), domain=None)
    assert flat.interval is None and flat.reasons["interval"].startswith("0/0")
    lonely = A.krippendorff_alpha(np.array([[1.0, NAN], [NAN, 2.0]]), domain=[1, 2])
    assert lonely.ordinal is None and lonely.reasons["ordinal"] == "no item has two ratings"


def test_bland_altman_reproduces_pefr_example():
    res = A.bland_altman(WRIGHT, MINI)
    assert res.n == 17
    assert round(res.bias, 1) == -2.1
    assert round(res.sd, 1) == 38.8
    # the limits use the normal quantile 1.959964 (Bland & Altman 1999), the CIs t(0.975, n - 1)
    z, t = stats.norm.ppf(0.975), stats.t.ppf(0.975, 16)
    assert res.loa == pytest.approx([res.bias - z * res.sd, res.bias + z * res.sd],
                                       abs=1e-12)
    assert res.bias_ci95[1] - res.bias == pytest.approx(t * res.sd / np.sqrt(17))
    lo, hi = res.bias_ci95
    assert lo < res.bias < hi
    assert res.loa_lower_ci95[0] < res.loa[0] < res.loa_lower_ci95[1]


def test_ac1_and_kappa_reproduce_irrcac_contingency_example():
    # irrCAC (Gwet) vignette, dataset cont3x3abstractors: AC1 0.8493305, Cohen's kappa 0.7964094.
    table = np.array([[13, 0, 0], [0, 20, 7], [0, 4, 56]])
    a = np.repeat(np.repeat(np.arange(3), 3), table.ravel())
    b = np.repeat(np.tile(np.arange(3), 3), table.ravel())
    assert A.gwet_ac1(a, b) == pytest.approx(0.8493305, abs=1e-7)
    assert A.cohen_kappa(a, b) == pytest.approx(0.7964094, abs=1e-7)


# ------------------------------------------------------------------ cross-checks on random data


def test_icc_matches_pingouin_on_random_data():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(40, 1)) + rng.normal(size=(40, 4)) + np.array([0, 0.5, -0.3, 1.0])
    long = pd.DataFrame(x).reset_index().melt(id_vars="index")
    ref = pg.intraclass_corr(long, targets="index", raters="variable", ratings="value")
    ours = A.icc(x)
    names = ["ICC1", "ICC2", "ICC3", "ICC1k", "ICC2k", "ICC3k"]
    for name, (_, row) in zip(names, ref.iterrows(), strict=True):
        assert ours.form(name).icc == pytest.approx(row["ICC"], abs=1e-10), name
        assert ours.form(name).F == pytest.approx(row["F"], rel=1e-9), name
        assert ours.form(name).p == pytest.approx(row["pval"], rel=1e-6), name
        assert ours.form(name).ci95 == pytest.approx(list(row["CI95"]), abs=0.0051), name  # pg rounds


def test_icc_drops_incomplete_items():
    x = np.vstack([SHROUT_FLEISS, [[1, NAN, 3, 4]]])
    assert A.icc(x).icc2.icc == pytest.approx(A.icc(SHROUT_FLEISS).icc2.icc)
    assert A.icc(x).n_items == 6


def _pingouin_icc(x: np.ndarray) -> pd.DataFrame:
    long = pd.DataFrame(x).reset_index().melt(id_vars="index")
    return pg.intraclass_corr(long, targets="index", raters="variable", ratings="value",
                              nan_policy="omit")


def _textbook_icc_cis(x: np.ndarray) -> dict:
    """The F-bound CIs as printed in McGraw & Wong (1996, Table 7), F = MS ratio directly."""
    n, k = x.shape
    grand = x.mean()
    ss_r = k * ((x.mean(axis=1) - grand) ** 2).sum()
    ss_c = n * ((x.mean(axis=0) - grand) ** 2).sum()
    ss_e = ((x - grand) ** 2).sum() - ss_r - ss_c
    df_r, df_e, df_w = n - 1, (n - 1) * (k - 1), n * (k - 1)
    msr, msc, mse, msw = ss_r / df_r, ss_c / (k - 1), ss_e / df_e, (ss_c + ss_e) / df_w
    f = stats.f.ppf
    out = {}
    for form, ms, df in (("1", msw, df_w), ("3", mse, df_e)):
        fl, fu = msr / ms / f(0.975, df_r, df), msr / ms * f(0.975, df, df_r)
        out[f"ICC{form}"] = [(fl - 1) / (fl + k - 1), (fu - 1) / (fu + k - 1)]
        out[f"ICC{form}k"] = [1 - 1 / fl, 1 - 1 / fu]
    icc2 = (msr - mse) / (msr + (k - 1) * mse + k * (msc - mse) / n)
    fj = msc / mse
    b = n * (1 + (k - 1) * icc2) - k * icc2
    v = df_e * (k * icc2 * fj + b) ** 2 / (df_r * k**2 * icc2**2 * fj**2 + b**2)
    fu, fl = f(0.975, df_r, v), f(0.975, v, df_r)
    lo = n * (msr - fu * mse) / (fu * (k * msc + (k * n - k - n) * mse) + n * msr)
    hi = n * (fl * msr - mse) / (k * msc + (k * n - k - n) * mse + n * fl * msr)
    out["ICC2"] = [lo, hi]
    out["ICC2k"] = [lo * k / (1 + lo * (k - 1)), hi * k / (1 + hi * (k - 1))]
    return out


def test_icc_intervals_match_the_textbook_f_bounds():
    rng = np.random.default_rng(9)
    x = rng.normal(size=(25, 1)) + rng.normal(size=(25, 3)) + np.array([0, 0.4, -0.2])
    ours, textbook = A.icc(x), _textbook_icc_cis(x)
    for name in A.ICC_FORMS:
        assert ours.form(name).ci95 == pytest.approx(textbook[name], abs=1e-12), name


def test_icc_leaves_out_a_rater_without_scores_as_pingouin_does():
    rng = np.random.default_rng(10)
    x = rng.normal(size=(30, 1)) + rng.normal(size=(30, 4))
    x[rng.random(x.shape) < 0.05] = NAN
    x[:, 2] = NAN
    ours = A.icc(x, raters=["ana", "ben", "cleo", "dev"])
    assert ours.left_out == ["cleo"] and ours.n_raters == 3
    assert ours.notes == ["rater 'cleo' has no score and is left out"]
    ref = _pingouin_icc(x)
    for name, (_, row) in zip(A.ICC_FORMS, ref.iterrows(), strict=True):
        assert ours.form(name).icc == pytest.approx(row["ICC"], abs=1e-12), name
        assert ours.form(name).F == pytest.approx(row["F"], rel=1e-9), name
    assert ours.icc2.icc == pytest.approx(A.icc(np.delete(x, 2, axis=1)).icc2.icc)
    grader = x[:, 0] + rng.normal(0, 0.3, 30)
    res = C.compare_to_experts(grader, x, domain=None, bootstrap=0, expert_names=list("abcd"))
    assert res.icc.notes == ["rater 'c' has no score and is left out"]
    assert res.icc.icc2.icc is not None


def test_icc_undefined_forms_are_null_with_the_reason():
    row = np.array([0.1234, 0.5678, 0.9012, 0.3456, 0.7891, 0.2345])
    twins = A.icc(np.vstack([row, row]))  # items do not differ, no residual: ICC3 is 0/0
    for name in ("ICC3", "ICC3k"):
        assert twins.form(name) is None
        assert twins.reasons[name].startswith("0/0")
    assert twins.icc1k is None and twins.reasons["ICC1k"].startswith("division by 0")
    assert twins.icc2.icc == 0 and twins.icc2.ci95 is None
    assert "F = 0" in twins.reasons["ICC2"]
    flat = A.icc(np.full((5, 3), 2.0))
    assert all(flat.form(name) is None for name in A.ICC_FORMS)
    assert set(flat.reasons.values()) == {"0/0: every score is the same"}
    one = A.icc(np.array([[1.0, 2.0]]))
    assert one.icc2 is None and "found 1" in one.reasons["ICC2"]


def test_icc_intervals_agree_across_forms_when_raters_agree():
    rng = np.random.default_rng(11)
    same = np.repeat(rng.random((12, 1)), 4, axis=1)
    res = A.icc(same)
    for name in A.ICC_FORMS:
        assert res.form(name).icc == 1 and res.form(name).ci95 == [1, 1], name
    shifted = rng.random((12, 1)) + np.array([0, 0.1, 0.2, 0.3])  # consistent, not absolute
    res = A.icc(shifted)
    for name in ("ICC3", "ICC3k"):
        assert res.form(name).ci95 == pytest.approx([1, 1]), name
    for name in ("ICC1", "ICC2", "ICC1k", "ICC2k"):
        lo, hi = res.form(name).ci95
        assert lo < res.form(name).icc < hi <= 1, name


def test_correlations_match_scipy_and_pingouin():
    rng = np.random.default_rng(4)
    x = rng.normal(size=120)
    y = 0.6 * x + rng.normal(size=120)
    y[5] = NAN
    ok = np.isfinite(y)
    res = A.pearson(x, y, bootstrap=0)
    ref = stats.pearsonr(x[ok], y[ok])
    assert res.r == pytest.approx(ref.statistic, abs=1e-12)
    ci = ref.confidence_interval(0.95)
    assert res.ci95_fisher == pytest.approx([ci.low, ci.high], abs=1e-10)
    assert res.n == 119
    assert A.spearman(x, y).rho == pytest.approx(stats.spearmanr(x[ok], y[ok]).statistic)
    tau = pg.corr(x[ok], y[ok], method="kendall")["r"].iloc[0]
    assert A.kendall(x, y).tau_b == pytest.approx(tau, abs=1e-12)


@pytest.mark.parametrize("weights", ["quadratic", "linear"])
def test_weighted_kappa_matches_sklearn(weights):
    rng = np.random.default_rng(5)
    a = rng.integers(0, 5, 300)
    b = np.clip(a + rng.integers(-2, 3, 300), 0, 4)
    expected = cohen_kappa_score(a, b, weights=weights, labels=[0, 1, 2, 3, 4])
    kappa = A.weighted_kappa(a, b, domain=[0, 1, 2, 3, 4], weights=weights)
    assert kappa == pytest.approx(expected, abs=1e-12)
    # non-integer grader means are snapped to the nearest rubric code first
    assert A.weighted_kappa(a + 0.3, b, domain=[0, 1, 2, 3, 4], weights=weights) == pytest.approx(
        expected)
    assert A.cohen_kappa(a, b) == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)


def test_snap_to_domain_takes_the_nearest_level_and_the_lower_on_ties():
    v = np.array([-3, 0.5, 1.5, 2.49, 2.51, 9, 1e300, NAN])
    assert np.array_equal(A.snap_to_domain(v, [4, 0, 1, 2, 3]),
                          [0, 0, 1, 2, 3, 4, 4, NAN], equal_nan=True)
    rng = np.random.default_rng(6)
    v, d = rng.normal(2, 2, 500), np.array([0.0, 0.5, 2, 3.5])
    assert np.array_equal(A.snap_to_domain(v, d), d[np.abs(v[:, None] - d).argmin(axis=1)])


def test_absolute_agreement_counts_levels():
    res = A.absolute_agreement(np.array([0, 1, 2, 4.0]), np.array([0, 2, 4, 4.0]),
                               domain=[0, 1, 2, 3, 4])
    assert res.to_dict() == {"mae": 0.75, "exact": 0.5, "within_one": 0.75, "n": 4}


# ------------------------------------------------------------------ bootstrap


def _delta_se(x: np.ndarray, y: np.ndarray, units: np.ndarray) -> tuple[float, float]:
    """r and its nonparametric delta-method SE, written out: influence x~y~ - r(x~^2 + y~^2)/2
    per item (scores standardized with the 1/n SD), summed per unit, sqrt(sum L^2) / n."""
    xs, ys = (x - x.mean()) / x.std(), (y - y.mean()) / y.std()
    r = float(np.mean(xs * ys))
    influence = np.bincount(units, xs * ys - r / 2 * (xs**2 + ys**2))
    return r, float(np.sqrt(np.sum(influence**2)) / len(x))


@pytest.mark.parametrize("clustered", [False, True])
def test_studentized_resamples_match_the_one_sample_formulas(clustered):
    rng = np.random.default_rng(7)
    n = 40
    x = rng.normal(size=n)
    y = 0.7 * x + rng.normal(size=n)
    units = np.arange(n) // 4 if clustered else np.arange(n)
    moments = A._unit_moments(x, y, np.ones(n, bool), units, units.max() + 1)
    first = np.unique(units, return_index=True)[1]
    weights = A.bootstrap_weights(n, 15, seed=3, clusters=units if clustered else None)
    w = weights[:, first]
    rb, se_b = A._r_and_se(w @ moments, w @ A._moment_products(moments))
    for b in range(15):
        draws = [np.flatnonzero(units == u) for u in range(len(first)) for _ in range(int(w[b, u]))]
        drawn = np.concatenate(draws)  # a unit drawn twice counts as two units
        r, se = _delta_se(x[drawn], y[drawn], np.repeat(np.arange(len(draws)), [len(d) for d in draws]))
        assert rb[b] == pytest.approx(r, abs=1e-12)
        assert se_b[b] == pytest.approx(se, abs=1e-12)


@pytest.mark.slow
def test_bootstrap_ci_of_r_covers_rho_09_with_60_items():
    # The gate's regime: rho = 0.9, 60 cases, 300 simulated studies with their own 1,000
    # resamples each; benchmarks/bench_pearson_coverage.py runs 1,000 studies and prints it.
    rho, n, draws = 0.9, 60, 300
    rng = np.random.default_rng(2)
    z = rng.standard_normal((draws, 2, n))
    xs, ys = z[:, 0], rho * z[:, 0] + np.sqrt(1 - rho**2) * z[:, 1]
    hits = 0
    for d in range(draws):
        lo, hi = A.pearson(xs[d], ys[d], bootstrap=1000, seed=d).ci95_bootstrap
        hits += lo <= rho <= hi
    assert 0.93 <= hits / draws <= 0.97


def test_ci_method_selects_the_interval():
    rng = np.random.default_rng(4)
    x = rng.normal(size=60)
    y = 0.9 * x + 0.4 * rng.normal(size=60)
    stud = A.pearson(x, y, bootstrap=500, seed=1).ci95_bootstrap
    bca = A.pearson(x, y, bootstrap=500, seed=1, ci_method="bca").ci95_bootstrap
    assert stud != bca
    for lo, hi in (stud, bca):
        assert lo < np.corrcoef(x, y)[0, 1] < hi
    with pytest.raises(ValueError, match="ci_method"):
        A.pearson(x, y, ci_method="percentile")
    res = C.compare_to_experts(y, x[:, None], domain=None, bootstrap=100, ci_method="bca")
    assert res.bootstrap.interval == "bca"
    assert A.pearson(x, x, bootstrap=100).ci95_bootstrap == [1, 1]


def test_cluster_bootstrap_resamples_cases_not_items():
    # Each case appears as 5 identical items: resampling items pretends to 5x the information.
    rng = np.random.default_rng(8)
    x = rng.normal(size=60)
    y = 0.5 * x + rng.normal(size=60)
    xs, ys, case = np.repeat(x, 5), np.repeat(y, 5), np.repeat(np.arange(60), 5)
    by_item = A.pearson(xs, ys, bootstrap=2000, seed=2).ci95_bootstrap
    by_case = A.pearson(xs, ys, bootstrap=2000, seed=2, clusters=case).ci95_bootstrap
    plain = A.pearson(x, y, bootstrap=2000, seed=2).ci95_bootstrap
    width = lambda ci: ci[1] - ci[0]  # noqa: E731
    assert width(by_case) > 1.8 * width(by_item)
    assert width(by_case) == pytest.approx(width(plain), rel=0.15)


def test_bootstrap_weights_draw_n_items_per_resample():
    w = A.bootstrap_weights(50, 30, seed=0)
    assert w.shape == (30, 50) and (w.sum(axis=1) == 50).all()
    assert np.array_equal(w, A.bootstrap_weights(50, 30, seed=0))


# ------------------------------------------------------------------ alt-test


def _alt_test_loop(grader, experts, epsilon, min_items=30):
    """Straight transcription of the alt-test procedure (Calderon et al. 2025, Alg. 1), neg-RMSE."""
    p_values, rho_f = [], []
    n, m = experts.shape
    for j in range(m):
        wf, wh = [], []
        for i in range(n):
            others = [experts[i, k] for k in range(m) if k != j and np.isfinite(experts[i, k])]
            if not np.isfinite(experts[i, j]) or not others:
                continue
            s_f = -np.sqrt(np.mean([(grader[i] - o) ** 2 for o in others]))
            s_h = -np.sqrt(np.mean([(experts[i, j] - o) ** 2 for o in others]))
            wf.append(1.0 if s_f >= s_h else 0.0)
            wh.append(1.0 if s_h >= s_f else 0.0)
        if len(wf) < min_items:
            continue
        d = np.array(wh) - np.array(wf)
        p_values.append(stats.ttest_1samp(d, epsilon, alternative="less").pvalue)
        rho_f.append(np.mean(wf))
    reject = multipletests(p_values, alpha=0.05, method="fdr_by")[0]
    return float(np.mean(reject)), float(np.mean(rho_f)), p_values


@pytest.mark.parametrize("grader_noise", [0.3, 1.5])
def test_alt_test_matches_reference_procedure(grader_noise):
    rng = np.random.default_rng(12)
    truth, experts = _random_panel(rng, n=150, k=4)
    grader = np.clip(truth + rng.normal(0, grader_noise, len(truth)), 0, 4)
    res = A.alt_test(grader, experts, epsilon=0.2)
    winning, advantage, p_values = _alt_test_loop(grader, experts, 0.2)
    assert res.winning_rate == pytest.approx(winning)
    assert res.advantage_probability == pytest.approx(advantage)
    assert [r.p for r in res.experts] == pytest.approx(p_values)
    assert res.passed == (winning >= 0.5)


def test_alt_test_separates_good_and_bad_graders():
    rng = np.random.default_rng(13)
    truth, experts = _random_panel(rng, n=200, k=3, noise=0.7)
    good = truth.copy()
    bad = rng.integers(0, 5, len(truth)).astype(float)
    assert A.alt_test(good, experts).passed is True
    res = A.alt_test(bad, experts)
    assert res.passed is False and res.winning_rate == 0.0


def test_alt_test_skips_experts_with_too_few_items():
    rng = np.random.default_rng(14)
    truth, experts = _random_panel(rng, n=20, k=3, missing=0)
    res = A.alt_test(truth, experts)
    assert res.winning_rate is None and res.passed is False
    assert all(r.skipped for r in res.experts)


# ------------------------------------------------------------------ reports


def test_tag_statistics_in_each_resample_match_the_one_sample_functions():
    rng = np.random.default_rng(5)
    n = 60
    truth = (rng.random(n) < 0.3).astype(float)
    pred = np.where(rng.random(n) < 0.85, truth, 1 - truth)
    truth[3] = np.nan  # no majority: left out
    weights = A.bootstrap_weights(n, 20, seed=2)
    got = A.binary_stats_resampled(pred, truth, weights)
    for b in range(20):
        drawn = np.repeat(np.arange(n), weights[b].astype(int))
        p, t = pred[drawn], truth[drawn]
        assert got["kappa"][b] == pytest.approx(A.cohen_kappa(p, t))
        assert got["ac1"][b] == pytest.approx(A.gwet_ac1(p, t))
        assert got["f1"][b] == pytest.approx(A.binary_confusion(p, t).f1)


def test_benjamini_yekutieli_matches_statsmodels():
    p = np.array([0.001, 0.01, 0.02, 0.04, 0.3, 0.0001])
    expected = multipletests(p, alpha=0.05, method="fdr_by")[0]
    assert np.array_equal(A._benjamini_yekutieli(p, 0.05), expected)
