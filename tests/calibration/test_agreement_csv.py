"""`nmb agreement` logic: long-format CSV in, one JSON-ready report out, one-line errors."""

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from calibration import agreement
from calibration.agreement_csv import agreement_from_csv, read_ratings
from errors import UserError

SHROUT_FLEISS = [[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9],
                 [6, 2, 4, 7]]


def _write(path: Path, rows: list[list[object]], header=("item", "rater", "score", "note")):
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)
    return path


def _panel_csv(path: Path, n=80, seed=0) -> tuple[Path, np.ndarray]:
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 5, n)
    scores = np.clip(truth[:, None] + rng.integers(-1, 2, (n, 4)), 0, 4).astype(float)
    scores[rng.random((n, 4)) < 0.05] = np.nan
    rows = []
    for i in range(n):
        for j, rater in enumerate(["grader", "ex1", "ex2", "ex3"]):
            s = scores[i, j]
            rows.append([f"case{i // 4}/resp{i}", rater, "" if np.isnan(s) else int(s), "x"])
    return _write(path, rows), scores


def test_icc_from_csv_matches_published_shrout_fleiss(tmp_path):
    rows = [[f"t{i}", f"judge{j}", v, ""] for i, r in enumerate(SHROUT_FLEISS)
            for j, v in enumerate(r)]
    report = agreement_from_csv(_write(tmp_path / "sf.csv", rows))
    assert report["n_items"] == 6 and report["n_raters"] == 4
    assert round(report["icc"]["ICC1"]["icc"], 2) == 0.17
    assert round(report["icc"]["ICC2"]["icc"], 2) == 0.29
    assert round(report["icc"]["ICC3k"]["icc"], 2) == 0.91
    assert set(report["krippendorff_alpha"]) == {"interval", "ordinal", "nominal"}
    assert "reference" not in report
    json.dumps(report, allow_nan=False)


def test_reference_report_compares_rater_with_mean_of_others(tmp_path):
    path, scores = _panel_csv(tmp_path / "panel.csv")
    report = agreement_from_csv(path, reference="grader", bootstrap=300, seed=4)
    json.dumps(report, allow_nan=False)
    ref = report["reference"]
    assert ref["rater"] == "grader"
    others = np.nanmean(scores[:, 1:], axis=1)
    ok = np.isfinite(scores[:, 0]) & np.isfinite(others)
    assert ref["bland_altman"]["bias"] == pytest.approx(np.mean(scores[ok, 0] - others[ok]))
    assert ref["mae"] == pytest.approx(np.mean(np.abs(scores[ok, 0] - others[ok])))
    assert ref["pearson"]["r"] == pytest.approx(np.corrcoef(scores[ok, 0], others[ok])[0, 1])
    lo, hi = ref["pearson"]["ci95"]
    assert lo < ref["pearson"]["r"] < hi
    for key in ("spearman", "weighted_kappa"):
        assert isinstance(ref[key], float)
    assert set(ref["alt_test"]) >= {"epsilon", "winning_rate", "advantage_probability", "passed"}
    assert len(ref["ceiling"]["per_expert"]) == 3
    again = agreement_from_csv(path, reference="grader", bootstrap=300, seed=4)
    assert again == report


def test_missing_ratings_are_allowed(tmp_path):
    path, scores = _panel_csv(tmp_path / "panel.csv", seed=2)
    items, raters, matrix = read_ratings(path)
    assert raters == ["grader", "ex1", "ex2", "ex3"]
    assert np.array_equal(np.isnan(matrix), np.isnan(scores))
    report = agreement_from_csv(path)
    expected = agreement.icc(scores)["ICC2"]["icc"]
    assert report["icc"]["ICC2"]["icc"] == pytest.approx(expected)
    assert report["icc_items_complete"] == int(np.isfinite(scores).all(axis=1).sum())


@pytest.mark.parametrize(
    ("header", "rows", "reference", "needle"),
    [
        (("item", "rater", "value"), [["a", "r1", 1]], None, "missing column 'score'"),
        (("item", "rater", "score"), [["a", "r1", 1], ["a", "r2", "high"]], None, "'high'"),
        (("item", "rater", "score"), [["a", "r1", 1], ["b", "r1", 2]], None, "need at least 2"),
        (("item", "rater", "score"), [["a", "r1", 1], ["a", "r2", 2]], "r9", "'r9'"),
        (("item", "rater", "score"), [["a", "r1", 1], ["a", "r1", 2]], None, "second score"),
    ],
)
def test_bad_csv_gives_one_line_user_error(tmp_path, header, rows, reference, needle):
    path = _write(tmp_path / "bad.csv", rows, header=header)
    with pytest.raises(UserError) as err:
        agreement_from_csv(path, reference=reference)
    message = str(err.value)
    assert needle in message
    assert "\n" not in message
    if needle != "'r9'":
        assert str(path) in message


def test_missing_file_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="cannot read"):
        agreement_from_csv(tmp_path / "nope.csv")
