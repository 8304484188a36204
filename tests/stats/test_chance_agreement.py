"""Chance-corrected agreement against published worked examples (Krippendorff 2011, irrCAC)
and against the krippendorff package and sklearn."""

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from stats.chance_agreement import (
    ALPHA_LEVELS,
    CONTINUOUS,
    binary_confusion,
    binary_stats_resampled,
    cohen_kappa,
    gwet_ac1,
    krippendorff_alpha,
    weighted_kappa,
)
from stats.resample import bootstrap_weights

NAN = np.nan

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


def test_krippendorff_alpha_reproduces_worked_example():
    res = krippendorff_alpha(KRIPPENDORFF, domain=[1, 2, 3, 4, 5])
    assert res.nominal == pytest.approx(0.743, abs=5e-4)
    assert res.interval == pytest.approx(0.849, abs=5e-4)
    assert res.ordinal == pytest.approx(0.815, abs=5e-4)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_krippendorff_alpha_matches_the_package_with_missing_ratings(seed):
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, 7, (80, 5)).astype(float)
    codes[rng.random(codes.shape) < 0.3] = NAN
    ours = krippendorff_alpha(codes, domain=range(7))
    for level in ALPHA_LEVELS:
        ref = krippendorff.alpha(reliability_data=codes.T, value_domain=list(range(7)),
                                 level_of_measurement=level)
        assert getattr(ours, level) == pytest.approx(ref, abs=1e-13), level
    scores = np.round(rng.random((60, 4)), 4)  # continuous: every distinct value a "level"
    scores[rng.random(scores.shape) < 0.2] = NAN
    ours = krippendorff_alpha(scores, domain=None)
    values = np.unique(scores[np.isfinite(scores)])
    for level in ("interval", "ordinal"):
        ref = krippendorff.alpha(reliability_data=scores.T, value_domain=values,
                                 level_of_measurement=level)
        assert getattr(ours, level) == pytest.approx(ref, abs=1e-13), level
    assert ours.nominal is None and ours.reasons["nominal"] == CONTINUOUS


def test_krippendorff_alpha_is_null_with_reason_when_undefined():
    flat = krippendorff_alpha(np.full((4, 3), 2.0), domain=None)
    assert flat.interval is None and flat.reasons["interval"].startswith("0/0")
    lonely = krippendorff_alpha(np.array([[1.0, NAN], [NAN, 2.0]]), domain=[1, 2])
    assert lonely.ordinal is None and lonely.reasons["ordinal"] == "no item has two ratings"


def test_ac1_and_kappa_reproduce_irrcac_contingency_example():
    # irrCAC (Gwet) vignette, dataset cont3x3abstractors: AC1 0.8493305, Cohen's kappa 0.7964094.
    table = np.array([[13, 0, 0], [0, 20, 7], [0, 4, 56]])
    a = np.repeat(np.repeat(np.arange(3), 3), table.ravel())
    b = np.repeat(np.tile(np.arange(3), 3), table.ravel())
    assert gwet_ac1(a, b) == pytest.approx(0.8493305, abs=1e-7)
    assert cohen_kappa(a, b) == pytest.approx(0.7964094, abs=1e-7)


@pytest.mark.parametrize("weights", ["quadratic", "linear"])
def test_weighted_kappa_matches_sklearn(weights):
    rng = np.random.default_rng(5)
    a = rng.integers(0, 5, 300)
    b = np.clip(a + rng.integers(-2, 3, 300), 0, 4)
    expected = cohen_kappa_score(a, b, weights=weights, labels=[0, 1, 2, 3, 4])
    kappa = weighted_kappa(a, b, domain=[0, 1, 2, 3, 4], weights=weights)
    assert kappa == pytest.approx(expected, abs=1e-12)
    # non-integer grader means are snapped to the nearest rubric code first
    assert weighted_kappa(a + 0.3, b, domain=[0, 1, 2, 3, 4], weights=weights) == pytest.approx(
        expected)
    assert cohen_kappa(a, b) == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)


def test_tag_statistics_in_each_resample_match_the_one_sample_functions():
    rng = np.random.default_rng(5)
    n = 60
    truth = (rng.random(n) < 0.3).astype(float)
    pred = np.where(rng.random(n) < 0.85, truth, 1 - truth)
    truth[3] = np.nan  # no majority: left out
    weights = bootstrap_weights(n, 20, seed=2)
    got = binary_stats_resampled(pred, truth, weights)
    for b in range(20):
        drawn = np.repeat(np.arange(n), weights[b].astype(int))
        p, t = pred[drawn], truth[drawn]
        assert got["kappa"][b] == pytest.approx(cohen_kappa(p, t))
        assert got["ac1"][b] == pytest.approx(gwet_ac1(p, t))
        assert got["f1"][b] == pytest.approx(binary_confusion(p, t).f1)
