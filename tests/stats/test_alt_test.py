"""The Alt-Test against a line-by-line transcription of the procedure (Calderon et al. 2025) and
statsmodels' Benjamini-Yekutieli."""

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from stats.alt_test import _benjamini_yekutieli, alt_test

NAN = np.nan


def _random_panel(rng, n=200, k=3, noise=0.8, missing=0.1):
    truth = rng.integers(0, 5, n).astype(float)
    experts = np.clip(np.round(truth[:, None] + rng.normal(0, noise, (n, k))), 0, 4)
    experts[rng.random((n, k)) < missing] = NAN
    return truth, experts


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
    res = alt_test(grader, experts, epsilon=0.2)
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
    assert alt_test(good, experts).passed is True
    res = alt_test(bad, experts)
    assert res.passed is False and res.winning_rate == 0.0


def test_alt_test_skips_experts_with_too_few_items():
    rng = np.random.default_rng(14)
    truth, experts = _random_panel(rng, n=20, k=3, missing=0)
    res = alt_test(truth, experts)
    assert res.winning_rate is None and res.passed is False
    assert all(r.skipped for r in res.experts)


def test_benjamini_yekutieli_matches_statsmodels():
    p = np.array([0.001, 0.01, 0.02, 0.04, 0.3, 0.0001])
    expected = multipletests(p, alpha=0.05, method="fdr_by")[0]
    assert np.array_equal(_benjamini_yekutieli(p, 0.05), expected)
