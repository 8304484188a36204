"""The ICCs against Shrout & Fleiss (1979, Table 2), pingouin and the textbook F bounds."""

import numpy as np
import pandas as pd
import pingouin as pg
import pytest
from scipy import stats

from calibration import comparison as C
from stats.icc import ICC_FORMS, icc

NAN = np.nan

# Shrout & Fleiss (1979), Table 2: 6 targets rated by 4 judges.
SHROUT_FLEISS = np.array(
    [[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]], float
)


def test_icc_reproduces_shrout_fleiss_table():
    res = icc(SHROUT_FLEISS)
    published = {"ICC1": 0.17, "ICC2": 0.29, "ICC3": 0.71, "ICC1k": 0.44, "ICC2k": 0.62,
                 "ICC3k": 0.91}
    for name, value in published.items():
        assert res.form(name).icc == pytest.approx(value, abs=0.006), name
        lo, hi = res.form(name).ci95
        assert lo < res.form(name).icc < hi
    assert res.n_items == 6 and res.n_raters == 4


def test_icc_matches_pingouin_on_random_data():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(40, 1)) + rng.normal(size=(40, 4)) + np.array([0, 0.5, -0.3, 1.0])
    long = pd.DataFrame(x).reset_index().melt(id_vars="index")
    ref = pg.intraclass_corr(long, targets="index", raters="variable", ratings="value")
    ours = icc(x)
    names = ["ICC1", "ICC2", "ICC3", "ICC1k", "ICC2k", "ICC3k"]
    for name, (_, row) in zip(names, ref.iterrows(), strict=True):
        assert ours.form(name).icc == pytest.approx(row["ICC"], abs=1e-10), name
        assert ours.form(name).F == pytest.approx(row["F"], rel=1e-9), name
        assert ours.form(name).p == pytest.approx(row["pval"], rel=1e-6), name
        assert ours.form(name).ci95 == pytest.approx(list(row["CI95"]), abs=0.0051), name  # pg rounds


def test_icc_drops_incomplete_items():
    x = np.vstack([SHROUT_FLEISS, [[1, NAN, 3, 4]]])
    assert icc(x).icc2.icc == pytest.approx(icc(SHROUT_FLEISS).icc2.icc)
    assert icc(x).n_items == 6


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
    ours, textbook = icc(x), _textbook_icc_cis(x)
    for name in ICC_FORMS:
        assert ours.form(name).ci95 == pytest.approx(textbook[name], abs=1e-12), name


def test_icc_leaves_out_a_rater_without_scores_as_pingouin_does():
    rng = np.random.default_rng(10)
    x = rng.normal(size=(30, 1)) + rng.normal(size=(30, 4))
    x[rng.random(x.shape) < 0.05] = NAN
    x[:, 2] = NAN
    ours = icc(x, raters=["ana", "ben", "cleo", "dev"])
    assert ours.left_out == ["cleo"] and ours.n_raters == 3
    assert ours.notes == ["rater 'cleo' has no score and is left out"]
    ref = _pingouin_icc(x)
    for name, (_, row) in zip(ICC_FORMS, ref.iterrows(), strict=True):
        assert ours.form(name).icc == pytest.approx(row["ICC"], abs=1e-12), name
        assert ours.form(name).F == pytest.approx(row["F"], rel=1e-9), name
    assert ours.icc2.icc == pytest.approx(icc(np.delete(x, 2, axis=1)).icc2.icc)
    grader = x[:, 0] + rng.normal(0, 0.3, 30)
    res = C.compare_to_experts(grader, x, domain=None, bootstrap=0, expert_names=list("abcd"))
    assert res.icc.notes == ["rater 'c' has no score and is left out"]
    assert res.icc.icc2.icc is not None


def test_icc_undefined_forms_are_null_with_the_reason():
    row = np.array([0.1234, 0.5678, 0.9012, 0.3456, 0.7891, 0.2345])
    twins = icc(np.vstack([row, row]))  # items do not differ, no residual: ICC3 is 0/0
    for name in ("ICC3", "ICC3k"):
        assert twins.form(name) is None
        assert twins.reasons[name].startswith("0/0")
    assert twins.icc1k is None and twins.reasons["ICC1k"].startswith("division by 0")
    assert twins.icc2.icc == 0 and twins.icc2.ci95 is None
    assert "F = 0" in twins.reasons["ICC2"]
    flat = icc(np.full((5, 3), 2.0))
    assert all(flat.form(name) is None for name in ICC_FORMS)
    assert set(flat.reasons.values()) == {"0/0: every score is the same"}
    one = icc(np.array([[1.0, 2.0]]))
    assert one.icc2 is None and "found 1" in one.reasons["ICC2"]


def test_icc_intervals_agree_across_forms_when_raters_agree():
    rng = np.random.default_rng(11)
    same = np.repeat(rng.random((12, 1)), 4, axis=1)
    res = icc(same)
    for name in ICC_FORMS:
        assert res.form(name).icc == 1 and res.form(name).ci95 == [1, 1], name
    shifted = rng.random((12, 1)) + np.array([0, 0.1, 0.2, 0.3])  # consistent, not absolute
    res = icc(shifted)
    for name in ("ICC3", "ICC3k"):
        assert res.form(name).ci95 == pytest.approx([1, 1]), name
    for name in ("ICC1", "ICC2", "ICC1k", "ICC2k"):
        lo, hi = res.form(name).ci95
        assert lo < res.form(name).icc < hi <= 1, name
