"""`nmb agreement` logic: long-format CSV in, one JSON-ready report out, one-line errors."""

import csv
import json
import warnings
from pathlib import Path

import numpy as np
import pytest

from calibration.agreement_csv import agreement_from_csv, rating_scale, read_ratings
from errors import UserError
from stats.chance_agreement import CONTINUOUS
from stats.icc import icc

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
    assert set(report["krippendorff_alpha"]) == {"interval", "ordinal", "nominal", "reasons"}
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
    expected = icc(scores).icc2.icc
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


@pytest.mark.parametrize(("limit", "value", "needle"),
                         [("MAX_BYTES", 100, "bytes, more than"), ("MAX_ROWS", 10, "more than 10 rows"),
                          ("MAX_CELLS", 20, "more than 20 cells")])
def test_size_limits_are_one_line_errors(tmp_path, monkeypatch, limit, value, needle):
    from calibration import agreement_csv

    path, _ = _panel_csv(tmp_path / "panel.csv", n=8)  # 32 rows, 8 items x 4 raters
    monkeypatch.setattr(agreement_csv, limit, value)
    with pytest.raises(UserError, match=needle):
        agreement_from_csv(path)


@pytest.mark.parametrize("bootstrap", [-1, 100_001, 10**14])
def test_bootstrap_out_of_range_is_one_line(tmp_path, bootstrap):
    """`--bootstrap 99999999999999` asked numpy for a (resamples x items) array of 247 PiB: a
    MemoryError traceback; now the same bounds as the protocol's resamples."""
    path, _ = _panel_csv(tmp_path / "panel.csv", n=8)
    with pytest.raises(UserError, match=f"^--bootstrap must be 0 to 100000, got {bootstrap}$"):
        agreement_from_csv(path, reference="r0", bootstrap=bootstrap)


def test_missing_file_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="cannot read"):
        agreement_from_csv(tmp_path / "nope.csv")


# ------------------------------------------------------------------ continuous scores and scales


def _continuous_csv(path: Path, n: int, k: int, seed: int = 0) -> tuple[Path, np.ndarray]:
    rng = np.random.default_rng(seed)
    scores = np.round(np.clip(rng.random((n, 1)) + rng.normal(0, 0.1, (n, k)), 0, 1), 4)
    rows = [[f"i{i}", f"r{j}", f"{scores[i, j]:.4f}", ""] for i in range(n) for j in range(k)]
    return _write(path, rows), scores


def test_continuous_scores_get_interval_and_ordinal_alpha_but_no_levels(tmp_path):
    import krippendorff

    path, scores = _continuous_csv(tmp_path / "c.csv", 60, 4)
    report = agreement_from_csv(path, reference="r0", bootstrap=200)
    json.dumps(report, allow_nan=False)
    assert report["scale"] is None and "not every score is an integer" in report["scale_note"]
    values = np.unique(scores)
    for level in ("interval", "ordinal"):
        expected = krippendorff.alpha(reliability_data=scores.T, value_domain=values,
                                      level_of_measurement=level)
        assert report["krippendorff_alpha"][level] == pytest.approx(expected, abs=1e-13)
    assert report["krippendorff_alpha"]["nominal"] is None
    ref = report["reference"]
    for key in ("weighted_kappa", "weighted_kappa_linear", "exact", "within_one"):
        assert ref[key] is None and ref["reasons"][key] == CONTINUOUS, key
    assert ref["mae"] > 0 and ref["pearson"]["ci95_method"] == "studentized_z"


@pytest.mark.parametrize(
    ("scores", "scale"),
    [([0, 4, 2, np.nan], [0, 1, 2, 3, 4]), ([1, 1], [1]), ([0.0, 0.5, 1.0], None),
     ([0, 100], None), ([-10, 10], list(range(-10, 11)))],
)
def test_integer_scores_with_few_levels_form_a_scale(scores, scale):
    found, note = rating_scale(np.array(scores, float))
    assert found == scale
    assert (note is None) == (scale is not None)


def test_integer_scale_gives_kappas_and_level_agreement(tmp_path):
    path, _ = _panel_csv(tmp_path / "panel.csv")
    ref = agreement_from_csv(path, reference="grader", bootstrap=0)["reference"]
    assert ref["pearson"]["ci95_method"] == "fisher"
    assert 0 < ref["weighted_kappa_linear"] < ref["weighted_kappa"] <= 1
    assert ref["exact"] <= ref["within_one"] and ref["reasons"] == {}


def test_rater_without_scores_is_left_out_of_icc_with_a_note(tmp_path):
    rows = [[f"t{i}", f"judge{j}", v, ""] for i, r in enumerate(SHROUT_FLEISS)
            for j, v in enumerate(r)]
    rows += [[f"t{i}", "absent", "NA", ""] for i in range(6)]
    report = agreement_from_csv(_write(tmp_path / "sf.csv", rows))
    assert report["icc"]["notes"] == ["rater 'absent' has no score and is left out"]
    assert round(report["icc"]["ICC2"]["icc"], 2) == 0.29


# ------------------------------------------------------------------ nothing falls over


def _valid_rows(rng: np.random.Generator, continuous: bool) -> list[list[str]]:
    n, k = int(rng.integers(1, 30)), int(rng.integers(2, 6))
    rows = []
    for i in range(n):
        for j in range(k):
            v = rng.random() if continuous else rng.integers(0, 5)
            rows.append([f"item{i}", f"r{j}", f"{v:.4f}" if continuous else str(v)])
    return rows


def _fuzz_file(rng: np.random.Generator, case: int) -> bytes:
    """One hostile or odd CSV (`case` picks the kind; the generator fills in the details)."""
    head = "item,rater,score\n"
    rows = _valid_rows(rng, continuous=bool(case % 2))
    body = "".join(",".join(r) + "\n" for r in rows)
    kinds = [
        lambda: b"",
        lambda: head.encode(),
        lambda: (head + "a,r1,1\na,r2,2\na,r3,3\n").encode(),  # one item
        lambda: (head + "".join(f"i{i},solo,{i % 5}\n" for i in range(9))).encode(),
        lambda: (head + "".join(f"i{i},r{i % 3},\n" for i in range(9))).encode(),
        lambda: (head + f"a,r1,{rng.choice(['nan', 'inf', '-Infinity', '1e400', 'NaN'])}\n"
                 + body).encode(),
        lambda: (head + body + f"zz,r0,{rng.choice(['1e15', '-1e15', '1e16', '1e308'])}\n"
                 + "zz,r1,0\n").encode(),
        lambda: (head + body + f"zz,r0,{rng.choice(['high', '1,5', '0x10', '--1', '1e'])}\n"
                 ).encode(),
        lambda: (head + body + body.splitlines(keepends=True)[0]).encode(),  # duplicate pair
        lambda: ("\ufeff" + head + body).encode(),  # BOM
        lambda: (head + "a,r1\nb,r2,3,extra,more\nc\n" + body).encode(),  # ragged rows
        lambda: (head + f"{'x' * 200_000},r1,1\n" + body).encode(),  # very long field
        lambda: bytes(rng.integers(0, 256, int(rng.integers(1, 4000)), dtype=np.uint8)),
        lambda: (head + body).encode()[: int(rng.integers(0, len(head + body) + 1))] + b"\0",
        lambda: (head + "".join(f"i{i},r{j},3\n" for i in range(8) for j in range(3))).encode(),
        lambda: (head + body).encode(),
        lambda: (head + body).encode("utf-16"),
        lambda: (head + '"multi\nline",r1,1\n"multi\nline",r2,2\n"unclosed,r1,1\n').encode(),
        lambda: ("score,rater,item,extra\n" + "".join(f"{r[2]},{r[1]},{r[0]},\n" for r in rows)
                 ).encode(),
        lambda: (head + "".join(f"i{i},r{i},1\n" for i in range(20))).encode(),  # no overlap
        lambda: (head + " , ,1\n" + body).encode(),
        lambda: (head + body.replace(",", ";")).encode(),
        lambda: (head + body).encode()[::-1],
        lambda: (head + "".join(f"{i},{j},{v}\n" for i, j, v in
                                zip(rng.integers(0, 5, 40), rng.integers(0, 4, 40),
                                    rng.normal(0, 1e6, 40), strict=True))).encode(),
    ]
    data = kinds[case % len(kinds)]()
    if case // len(kinds) % 2 and data:  # every other round: a few random bytes changed
        raw = bytearray(data)
        for pos in rng.integers(0, len(raw), int(rng.integers(1, 6))):
            raw[pos] = int(rng.choice([0x2C, 0x22, 0x0A, 0x0D, 0x00, 0xFF, 0x41, 0x31]))
        data = bytes(raw)
    return data


def _run_agreement(args: list[str], capsys) -> tuple[int, str, str]:
    from cli import main

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a stray RuntimeWarning is output the user did not ask for
        code = main(["agreement", *args])
    out, err = capsys.readouterr()
    return code, out, err


def _assert_result_or_one_line(code: int, out: str, err: str, path: Path) -> None:
    if code == 0:
        assert err == ""
        assert json.loads(out)["file"] == str(path)
    else:
        assert code == 2, err
        assert out == "" and err.startswith("nmb: ") and err.count("\n") == 1, err


@pytest.mark.slow
def test_a_sweep_of_150_odd_files_gives_results_or_one_line(tmp_path, capsys):
    rng = np.random.default_rng(20240612)
    outcomes = {0: 0, 2: 0}
    for case in range(150):
        path = tmp_path / f"f{case}.csv"
        path.write_bytes(_fuzz_file(rng, case))
        for args in ([str(path)], [str(path), "--reference", "r0", "--bootstrap", "30"]):
            code, out, err = _run_agreement(args, capsys)
            _assert_result_or_one_line(code, out, err, path)
            outcomes[code] += 1
    assert outcomes[0] > 30 and outcomes[2] > 30  # the sweep exercises both paths


@pytest.mark.slow
def test_every_file_in_tests_gives_results_or_one_line(capsys):
    files = [p for p in Path(__file__).parents[1].rglob("*") if p.is_file()]
    assert len(files) > 20
    for path in files:
        code, out, err = _run_agreement([str(path)], capsys)
        _assert_result_or_one_line(code, out, err, path)
