"""`nmb results --compare` with several pairs: every difference's unadjusted interval and its
Holm-adjusted one (Holm 1979), against an independent step-down computation and statsmodels'
Holm p-values."""

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from results.compare import adjust, compare
from results.judgments import Judgment
from results.publish.tables import compare_table, fmt


def _judgments() -> list[Judgment]:
    """Four models on 12 tasks of 8 cases, 3 samples each, of different skill."""
    rng = np.random.default_rng(45)
    out = []
    for who, skill in (("m1", 0.8), ("m2", 0.55), ("m3", 0.45), ("m4", 0.5)):
        for t in range(12):
            for k in range(3):
                ok = bool(rng.random() < skill)
                out.append(Judgment(who, True, f"t{t}", "differential", 1, ok,
                                    float(np.clip(skill + rng.normal(0, 0.2), 0, 1)),
                                    response_id=f"{who}-{t}-{k}", case_id=f"c{t % 8}"))
    return out


def test_three_pairs_get_holm_adjusted_intervals_that_match_an_independent_computation():
    pairs = [("m1", "m2"), ("m1", "m3"), ("m4", "m3")]
    judged = _judgments()
    got = adjust([compare(judged, a, b, resamples=500) for a, b in pairs])
    family = [d for c in got for d in c.differences.values()]
    assert len(family) == 6 and all(d.holm is not None for d in family)
    # independently: p from t = d / se on df, Holm's step-down at 0.05 / (m - i + 1) until the
    # first acceptance, whose level holds for the rest
    p = np.array([2 * stats.t.sf(abs(d.difference.value) / d.se, d.df) for d in family])
    for d in family:  # the unadjusted interval is d +/- t(0.975, df) se
        want = d.difference.value + np.array([-1, 1]) * stats.t.ppf(0.975, d.df) * d.se
        assert d.difference.ci == pytest.approx(want, abs=2e-4)
    levels = np.empty(6)
    level, accepted = None, False
    for rank, i in enumerate(np.argsort(p)):
        if not accepted:
            level = 0.05 / (6 - rank)
            accepted = p[i] > level
        levels[i] = level
    reject, p_holm, _, _ = multipletests(p, alpha=0.05, method="holm")
    assert 0 < reject.sum() < 6  # some differences survive the adjustment, some do not
    for d, lvl, pi, ph, rej in zip(family, levels, p, p_holm, reject, strict=True):
        half = stats.t.ppf(1 - lvl / 2, d.df) * d.se
        assert d.holm.ci == pytest.approx([d.difference.value - half,
                                           d.difference.value + half], abs=1e-4)
        assert (d.p, d.p_holm) == (pytest.approx(pi, abs=1e-4), pytest.approx(ph, abs=1e-4))
        assert (d.holm.ci[0] > 0 or d.holm.ci[1] < 0) == rej  # leaves out 0 iff Holm rejects
        assert np.diff(d.holm.ci)[0] >= np.diff(d.difference.ci)[0] - 1e-4  # never narrower
    table = compare_table(got)
    assert table.header[7:11] == ["A - B (unadjusted 95%)", "A - B (Holm-adjusted)", "p",
                                  "p (Holm)"]
    assert "Holm-adjusted (Holm 1979): over the 6 differences" in table.note
    first = family[0].holm
    assert fmt(table.rows[0][8]) == f"{first.value:.3f} [{first.ci[0]:.3f}, {first.ci[1]:.3f}]"
