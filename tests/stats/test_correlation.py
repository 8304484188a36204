"""Correlations against scipy and pingouin, and r's bootstrap: each resample against the
one-sample formulas, the interval's coverage, resampling cases rather than items."""

import numpy as np
import pingouin as pg
import pytest
from scipy import stats

from calibration import comparison as C
from stats.correlation import (
    _moment_products,
    _r_and_se,
    _unit_moments,
    kendall,
    kendall_rows,
    pearson,
    ranks,
    spearman,
    spearman_rows,
)
from stats.resample import bootstrap_weights

NAN = np.nan


def test_correlations_match_scipy_and_pingouin():
    rng = np.random.default_rng(4)
    x = rng.normal(size=120)
    y = 0.6 * x + rng.normal(size=120)
    y[5] = NAN
    ok = np.isfinite(y)
    res = pearson(x, y, bootstrap=0)
    ref = stats.pearsonr(x[ok], y[ok])
    assert res.r == pytest.approx(ref.statistic, abs=1e-12)
    ci = ref.confidence_interval(0.95)
    assert res.ci95_fisher == pytest.approx([ci.low, ci.high], abs=1e-10)
    assert res.n == 119
    assert spearman(x, y).rho == pytest.approx(stats.spearmanr(x[ok], y[ok]).statistic)
    tau = pg.corr(x[ok], y[ok], method="kendall")["r"].iloc[0]
    assert kendall(x, y).tau_b == pytest.approx(tau, abs=1e-12)


def test_the_row_wise_forms_give_the_point_estimates_bit_for_bit():
    """stats.rank_correlation's permutations and resamples run the row-wise forms: each row
    gives `spearman`'s rho and `kendall`'s tau-b exactly, with ties and without."""
    rng = np.random.default_rng(15)
    x = np.vstack([rng.integers(0, 5, (40, 30)), rng.normal(size=(40, 30))]).astype(float)
    y = np.round(x + rng.normal(size=x.shape), 1)
    rho, tau = spearman_rows(ranks(x), ranks(y)), kendall_rows(x, y)
    for i in range(len(x)):
        assert rho[i] == spearman(x[i], y[i]).rho
        assert tau[i] == kendall(x[i], y[i]).tau_b


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
    moments = _unit_moments(x, y, np.ones(n, bool), units, units.max() + 1)
    first = np.unique(units, return_index=True)[1]
    weights = bootstrap_weights(n, 15, seed=3, clusters=units if clustered else None)
    w = weights[:, first]
    rb, se_b = _r_and_se(w @ moments, w @ _moment_products(moments))
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
        lo, hi = pearson(xs[d], ys[d], bootstrap=1000, seed=d).ci95_bootstrap
        hits += lo <= rho <= hi
    assert 0.93 <= hits / draws <= 0.97


def test_ci_method_selects_the_interval():
    rng = np.random.default_rng(4)
    x = rng.normal(size=60)
    y = 0.9 * x + 0.4 * rng.normal(size=60)
    stud = pearson(x, y, bootstrap=500, seed=1).ci95_bootstrap
    bca = pearson(x, y, bootstrap=500, seed=1, ci_method="bca").ci95_bootstrap
    assert stud != bca
    for lo, hi in (stud, bca):
        assert lo < np.corrcoef(x, y)[0, 1] < hi
    with pytest.raises(ValueError, match="ci_method"):
        pearson(x, y, ci_method="percentile")
    res = C.compare_to_experts(y, x[:, None], domain=None, bootstrap=100, ci_method="bca")
    assert res.bootstrap.interval == "bca"
    assert pearson(x, x, bootstrap=100).ci95_bootstrap == [1, 1]


def test_cluster_bootstrap_resamples_cases_not_items():
    # Each case appears as 5 identical items: resampling items pretends to 5x the information.
    rng = np.random.default_rng(8)
    x = rng.normal(size=60)
    y = 0.5 * x + rng.normal(size=60)
    xs, ys, case = np.repeat(x, 5), np.repeat(y, 5), np.repeat(np.arange(60), 5)
    by_item = pearson(xs, ys, bootstrap=2000, seed=2).ci95_bootstrap
    by_case = pearson(xs, ys, bootstrap=2000, seed=2, clusters=case).ci95_bootstrap
    plain = pearson(x, y, bootstrap=2000, seed=2).ci95_bootstrap
    width = lambda ci: ci[1] - ci[0]  # noqa: E731
    assert width(by_case) > 1.8 * width(by_item)
    assert width(by_case) == pytest.approx(width(plain), rel=0.15)
