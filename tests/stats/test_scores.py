"""Scores snapped to the rubric's allowed values."""

import numpy as np

from stats.scores import snap_to_domain

NAN = np.nan


def test_snap_to_domain_takes_the_nearest_level_and_the_lower_on_ties():
    v = np.array([-3, 0.5, 1.5, 2.49, 2.51, 9, 1e300, NAN])
    assert np.array_equal(snap_to_domain(v, [4, 0, 1, 2, 3]),
                          [0, 0, 1, 2, 3, 4, 4, NAN], equal_nan=True)
    rng = np.random.default_rng(6)
    v, d = rng.normal(2, 2, 500), np.array([0.0, 0.5, 2, 3.5])
    assert np.array_equal(snap_to_domain(v, d), d[np.abs(v[:, None] - d).argmin(axis=1)])
