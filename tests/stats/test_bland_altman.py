"""Bland-Altman against the PEFR example of Bland & Altman (1986); absolute agreement by hand."""

import numpy as np
import pytest
from scipy import stats

from stats.bland_altman import absolute_agreement, bland_altman

# Bland & Altman (1986), Lancet: first PEFR reading (l/min), Wright vs mini Wright, 17 subjects.
WRIGHT = np.array([494, 395, 516, 434, 476, 557, 413, 442, 650, 433, 417, 656, 267, 478, 178, 423,
                   427], float)
MINI = np.array([512, 430, 520, 428, 500, 600, 364, 380, 658, 445, 432, 626, 260, 477, 259, 350,
                 451], float)


def test_bland_altman_reproduces_pefr_example():
    res = bland_altman(WRIGHT, MINI)
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


def test_absolute_agreement_counts_levels():
    res = absolute_agreement(np.array([0, 1, 2, 4.0]), np.array([0, 2, 4, 4.0]),
                               domain=[0, 1, 2, 3, 4])
    assert res.to_dict() == {"mae": 0.75, "exact": 0.5, "within_one": 0.75, "n": 4}
