"""The agreement comparisons a calibration report is assembled from (`calibration.comparison`):
complete and JSON-ready, resampling cases when given, the human ceiling, binary error tags."""

import json

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score, f1_score

from calibration import comparison as C
from tests.stats.test_alt_test import _random_panel

NAN = np.nan


def test_compare_to_experts_is_json_ready_and_complete():
    rng = np.random.default_rng(21)
    truth, experts = _random_panel(rng, n=150, k=3)
    grader = np.clip(truth + rng.normal(0, 0.5, len(truth)), 0, 4)  # non-integer grader means
    res = C.compare_to_experts(grader, experts, domain=[0, 1, 2, 3, 4], bootstrap=500, seed=1)
    stored = res.to_dict()
    json.dumps(stored, allow_nan=False)
    for key in ["pearson", "spearman", "kendall", "icc", "krippendorff_alpha", "weighted_kappa",
                "bland_altman", "mae", "exact", "within_one", "ceiling", "alt_test"]:
        assert key in stored, key
    lo, hi = res.pearson.ci95_bootstrap
    assert lo < res.pearson.r < hi
    assert set(stored["icc"]) >= {"ICC1", "ICC2", "ICC3", "ICC1k", "ICC2k", "ICC3k"}
    assert res.icc.n_raters == 4
    # Bland-Altman bias is grader minus the experts' per-item mean
    mean = np.nanmean(experts, axis=1)
    assert res.bland_altman.bias == pytest.approx(np.mean(grader - mean))
    assert res == C.compare_to_experts(grader, experts, domain=[0, 1, 2, 3, 4], bootstrap=500,
                                       seed=1)


def test_compare_to_experts_resamples_cases_when_given():
    rng = np.random.default_rng(23)
    truth, experts = _random_panel(rng, n=60, k=3, missing=0)
    grader = truth + rng.normal(0, 0.8, 60)
    # every case carries 4 copies of the same response: item resampling overstates precision
    g4, e4, case = np.repeat(grader, 4), np.repeat(experts, 4, axis=0), np.repeat(np.arange(60), 4)
    kw = {"domain": [0, 1, 2, 3, 4], "bootstrap": 1000, "seed": 3}
    by_item = C.compare_to_experts(g4, e4, **kw)
    by_case = C.compare_to_experts(g4, e4, clusters=case, **kw)
    assert by_case.bootstrap.unit == "case" and by_item.bootstrap.unit == "item"
    width = lambda ci: np.diff(ci)[0]  # noqa: E731
    assert width(by_case.pearson.ci95_bootstrap) > 1.5 * width(by_item.pearson.ci95_bootstrap)
    assert width(by_case.icc_vs_mean.ci95) > 1.5 * width(by_item.icc_vs_mean.ci95)
    row = by_case.ceiling.per_expert[0].grader_vs_others.pearson
    assert row.ci95_bootstrap[0] < row.r < row.ci95_bootstrap[1]
    # a case of 4 copies of one response tells what that one response tells: deleting a case is
    # deleting the response, so the clustered intervals are those of the 60 responses alone
    once = C.compare_to_experts(grader, experts, clusters=np.arange(60), **kw)
    ba4, ba1 = by_case.bland_altman, once.bland_altman
    assert ba4.bias_ci95 == pytest.approx(ba1.bias_ci95, abs=1e-12)
    assert (ba4.units, ba4.unit, ba1.units) == (60, "case", 60)
    p4 = [x.p for x in by_case.alt_test.experts]
    assert p4 == pytest.approx([x.p for x in once.alt_test.experts], abs=1e-12)
    assert by_case.alt_test.units == 60 and by_case.alt_test.unit == "case"
    # ... and without cases the test is the paper's one-sample t on the items
    plain = [x.p for x in C.alt_test(grader, experts, epsilon=0.2).experts]
    assert [x.p for x in once.alt_test.experts] == pytest.approx(plain, abs=1e-12)


def test_the_gates_icc_is_the_grader_against_the_experts_mean_with_a_clustered_interval():
    """Issue 45: the gate's ICC(2,1) is the grader against the experts' mean (as documented),
    not the grader and every expert as raters, which drops every item an expert did not score;
    its interval is the delete-one-case jackknife on Fisher's z, checked against pingouin's
    ICC2 with each case left out by hand."""
    pg = pytest.importorskip("pingouin")
    import pandas as pd
    from scipy import stats

    rng = np.random.default_rng(45)
    case = np.repeat(np.arange(10), 5)
    truth = rng.normal(0, 1, 10)[case] + rng.normal(0, 1, 50)
    grader = truth + rng.normal(0, 0.6, 50)
    experts = truth[:, None] + rng.normal(0, 0.5, (50, 3))
    experts[np.arange(50), np.arange(50) % 3] = NAN  # two experts per item, as the demo plans
    res = C.compare_to_experts(grader, experts, domain=None, bootstrap=200, clusters=case)
    ref = np.nanmean(experts, axis=1)

    def icc2(rows: np.ndarray) -> float:
        long = pd.DataFrame({"item": np.repeat(rows, 2), "rater": np.tile(["g", "m"], len(rows)),
                             "score": np.column_stack([grader, ref])[rows].ravel()})
        table = pg.intraclass_corr(long, targets="item", raters="rater", ratings="score")
        return float(table["ICC"].iloc[1])  # rows ICC1, ICC2, ...: ICC2 is the second

    mine = res.icc_vs_mean
    assert mine.icc == pytest.approx(icc2(np.arange(50)), abs=1e-12)
    assert (mine.n_items, mine.dropped, mine.units, mine.unit) == (50, 0, 10, "case")
    assert res.icc.n_items == 0 and res.icc.dropped == 50  # every item misses one expert
    z = np.arctanh([icc2(np.flatnonzero(case != c)) for c in range(10)])
    se = np.sqrt(9 / 10 * ((z - z.mean()) ** 2).sum())
    t = stats.t.ppf(0.975, 9)
    want = np.tanh(np.arctanh(mine.icc) + np.array([-t, t]) * se)
    assert mine.ci95 == pytest.approx(want, abs=1e-9)
    assert "10 cases, fewer than 20" in mine.warning
    check = next(g for g in C_gate_checks(res) if g.name == "icc2")
    assert check.value == mine.icc and check.interval == mine.ci95


def C_gate_checks(res):  # noqa: N802
    from calibration.gate import gate_checks
    from calibration.protocol import Gate

    return gate_checks(Gate(), res.pearson, res.icc_vs_mean, res.alt_test,
                       pearson_ci=res.pearson.interval(), min_items=30)


def test_ceiling_puts_each_expert_against_the_others():
    rng = np.random.default_rng(22)
    truth, experts = _random_panel(rng, n=120, k=3, missing=0)
    grader = truth + 0.0
    res = C.ceiling(grader, experts, domain=[0, 1, 2, 3, 4])
    assert len(res.per_expert) == 3
    row = res.per_expert[1]
    others_mean = experts[:, [0, 2]].mean(axis=1)
    expected_r = np.corrcoef(experts[:, 1], others_mean)[0, 1]
    assert row.expert_vs_others.pearson.r == pytest.approx(expected_r)
    assert row.grader_vs_others.pearson.r == pytest.approx(
        np.corrcoef(grader, others_mean)[0, 1])
    # the noise-free grader beats the noisy experts at predicting the other experts
    assert res.grader_mean["pearson.r"] > res.experts_mean["pearson.r"]


def _tagged(rng, n: int, prevalence: float, expert_noise: float, grader_noise: float):
    """A binary class: the truth, three experts and a grader, each flipping it at its rate."""
    truth = rng.random(n) < prevalence
    experts = np.repeat(truth[:, None], 3, axis=1) ^ (rng.random((n, 3)) < expert_noise)
    return truth, experts, truth ^ (rng.random(n) < grader_noise)


def test_compare_tags_rare_class_kappa_vs_ac1():
    rng = np.random.default_rng(31)
    n = 400
    rare, experts, grader = _tagged(rng, n, 0.04, 0.02, 0.03)
    common, experts_c, _ = _tagged(rng, n, 0.5, 0.1, 0.0)
    g = np.column_stack([grader, common])
    e = np.stack([experts, experts_c], axis=2)
    res = C.compare_tags(g, e, ["hallucination", "omission"])
    json.dumps(res.to_dict(), allow_nan=False)
    hal = res.classes["hallucination"].grader
    majority = e[:, :, 0].sum(axis=1) >= 2
    assert hal.confusion.tp == int(np.sum(grader & majority))
    assert hal.confusion.fp + hal.confusion.fn + hal.confusion.tp + hal.confusion.tn == n
    assert hal.confusion.f1 == pytest.approx(f1_score(majority, grader))
    assert hal.kappa == pytest.approx(cohen_kappa_score(grader, majority))
    assert hal.ac1 > hal.kappa  # AC1 is not dragged down by the low prevalence
    assert len(res.classes["omission"].ceiling) == 3


def test_compare_tags_alpha_of_each_class():
    """Krippendorff's nominal alpha per class, checked by hand (Krippendorff 2011): two raters,
    no missing value, binary: alpha = 1 - (N - 1) * o01 / (n0 * n1), o01 = disagreeing units."""
    a = np.array([1, 1, 1, 0, 0, 0, 0, 0, 0, 0], dtype=bool)
    b = np.array([1, 1, 0, 0, 0, 0, 0, 0, 0, 1], dtype=bool)
    experts = np.stack([a, b], axis=1)[:, :, None]
    agreeing = C.compare_tags(a[:, None], experts, ["grounding"]).classes["grounding"]
    assert agreeing.alpha_experts == pytest.approx(1 - 19 * 2 / (14 * 6))
    contrary = C.compare_tags(~a[:, None], experts, ["grounding"]).classes["grounding"]
    assert contrary.alpha_experts == agreeing.alpha_experts  # the grader is not in it
    assert contrary.alpha_with_grader < 0 < agreeing.alpha_experts
    missing = experts.astype(float)
    missing[0, 1] = np.nan  # unit 0 keeps one rating, pairs with nothing and drops out
    assert C.compare_tags(a[:, None], missing, ["grounding"]).classes[
        "grounding"].alpha_experts == pytest.approx(1 - 17 * 2 / (14 * 4))


def test_compare_tags_intervals_over_cases():
    n = 200
    _, experts, grader = _tagged(np.random.default_rng(8), n, 0.3, 0.05, 0.1)
    res = C.compare_tags(grader[:, None], experts[:, :, None], ["reasoning"], bootstrap=500,
                         clusters=np.arange(n) // 2).classes["reasoning"].grader
    for key, value in (("kappa", res.kappa), ("ac1", res.ac1), ("f1", res.confusion.f1)):
        lo, hi = getattr(res.ci95, key)
        assert lo < value < hi < 1
    assert "ci95" not in C.compare_tags(grader[:, None], experts[:, :, None],
                                        ["reasoning"]).classes["reasoning"].grader.to_dict()


def test_stored_dicts_keep_the_report_json_shape():
    """`to_dict()` is the JSON calibration reports have always been stored in (the report's
    tables, figures and `nmb calibrate --check` read stored reports of earlier versions)."""
    rng = np.random.default_rng(24)
    truth, experts = _random_panel(rng, n=40, k=3)
    res = C.compare_to_experts(truth + rng.normal(0, 0.5, 40), experts, domain=[0, 1, 2, 3, 4],
                               bootstrap=50, min_alt_items=35)
    d = json.loads(json.dumps(res.to_dict(), allow_nan=False))
    assert list(d)[:2] == ["n_items", "n_experts"] and d["n_items"] == res.n_items
    assert set(d["pearson"]) == {"r", "n", "ci95_fisher", "ci95_bootstrap", "units", "warning"}
    assert d["pearson"]["ci95_bootstrap"] == res.pearson.ci95_bootstrap
    assert set(d["icc"]) == {"n_items", "n_raters", "left_out", "notes", "reasons", "ICC1",
                             "ICC2", "ICC3", "ICC1k", "ICC2k", "ICC3k", "dropped"}
    assert set(d["icc_vs_mean"]) == {"icc", "ci95", "ci95_f", "n_items", "dropped", "units",
                                     "unit", "warning", "reason"}
    assert d["icc"]["ICC2"] == {"icc": res.icc.icc2.icc, "ci95": res.icc.icc2.ci95,
                                "F": res.icc.icc2.F, "df1": res.icc.icc2.df1,
                                "df2": res.icc.icc2.df2, "p": res.icc.icc2.p}
    assert set(d["krippendorff_alpha"]) == {"interval", "ordinal", "nominal", "reasons"}
    assert set(d["bland_altman"]) == {"n", "bias", "sd", "loa", "bias_ci95", "loa_lower_ci95",
                                      "loa_upper_ci95"}
    assert d["ceiling"]["per_expert"][1]["grader_vs_others"]["pearson"]["r"] == (
        res.ceiling.per_expert[1].grader_vs_others.pearson.r)
    assert list(d["ceiling"]["grader_mean"]) == list(C.CEILING_MEASURES)
    kinds = {tuple(e) for e in d["alt_test"]["experts"]}
    assert kinds <= {("expert", "n_items", "skipped"),
                     ("expert", "n_items", "rho_f", "rho_h", "p", "llm_wins")}
    assert d["bootstrap"] == {"resamples": 50, "seed": 0, "unit": "item",
                              "interval": "studentized_z", "confidence": 0.95}
    one = C.versus(np.array([1.0]), np.array([2.0]), domain=None).to_dict()["bland_altman"]
    assert one == {"n": 1, "bias": None, "sd": None, "loa": [None, None]}
    tags = C.compare_tags(np.array([[True], [False], [True]]),
                          np.array([[[1.0], [1.0]], [[0.0], [1.0]], [[1.0], [0.0]]]), ["x"])
    x = tags.to_dict()["classes"]["x"]
    assert list(x["grader"]) == ["kappa", "ac1", "tp", "fp", "fn", "tn", "precision", "recall",
                                 "f1"]
    assert list(x["ceiling"][0])[0] == "expert" and set(x["ceiling_mean"]) == {"kappa", "ac1",
                                                                                  "f1"}
