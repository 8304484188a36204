"""Breadth against depth: the rank statistics against scipy, and on the demo study with a
breadth CSV, each benchmark's Spearman equal to one computed independently from the CSV and the
results' pass@1; names from the CSV stay text in the HTML report."""

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats
from sqlmodel import select

from cli import main
from db.engine import session
from db.models import User
from stats.rank_correlation import MIN_UNITS, rank_correlation
from tests.apptest import page, page_payload
from ui.auth import LoggedIn

ROOT = Path(__file__).resolve().parents[2]
HOSTILE = "<script>alert(1)</script>"


def test_rank_correlation_matches_scipy_and_its_exact_permutation_test() -> None:
    rng = np.random.default_rng(7)
    for n in (4, 6, 11):
        x = rng.integers(0, 4, n).astype(float)  # ties
        y = rng.random(n)
        got = rank_correlation(x, y, seed=1)
        assert got.spearman == pytest.approx(stats.spearmanr(x, y).statistic, abs=1e-12)
        assert got.kendall == pytest.approx(stats.kendalltau(x, y).statistic, abs=1e-12)
        if n <= 8:  # every ordering: scipy's exact permutation test
            exact = stats.permutation_test(
                (x,), lambda a, y=y: stats.spearmanr(a, y).statistic, permutation_type="pairings",
                n_resamples=np.inf, alternative="two-sided")
            assert got.spearman_p == pytest.approx(exact.pvalue, abs=1e-9)
        assert (got.spearman_ci is None) == (n < MIN_UNITS)
        if got.spearman_ci:
            assert -1 <= got.spearman_ci[0] <= got.spearman <= got.spearman_ci[1] <= 1


def test_breadth_against_depth_on_the_demo(demo_study: Path, tmp_path: Path, capsys) -> None:
    source = ROOT / "examples" / "demo-claims" / "breadth.csv"
    rows = list(csv.DictReader(source.open()))
    table = tmp_path / "breadth.csv"
    with table.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["model", "benchmark", "score"])
        w.writerows([[r["model"], r["benchmark"], r["score"]] for r in rows])
        w.writerow([HOSTILE, "MMLU-Pro (synthetic)", "90"])  # a model without a depth row

    bad = tmp_path / "bad.csv"
    bad.write_text("model,benchmark,score\nm,B,0.5\nm,B2,high\n")
    assert main(["breadth", "import", str(bad)]) == 2
    assert f"{bad}: line 3: field 'score' 'high' is not a number" in capsys.readouterr().err
    assert main(["breadth", "import", str(table)]) == 0
    capsys.readouterr()
    assert main(["breadth", "list", "--json"]) == 0
    assert {r["model"] for r in json.loads(capsys.readouterr().out)} == \
        {r["model"] for r in rows} | {HOSTILE}  # the refused file wrote nothing

    out = tmp_path / "out"
    assert main(["results", "--by", "", "--format", "json", "--out", str(out)]) == 0
    res = json.loads(capsys.readouterr().out)
    depth = {c["who"]: c["pass_at"]["1"]["value"] for c in res["overall"]
             if c["group"] == "model"}
    axes = {a["benchmark"]: a for a in res["breadth"]}
    assert set(axes) == {"MMLU-Pro (synthetic)", "DrVD-Bench (synthetic)"}
    for bench, axis in axes.items():
        mine = [r for r in rows if r["benchmark"] == bench]
        expected = stats.spearmanr([float(r["score"]) for r in mine],
                                   [depth[r["model"]] for r in mine]).statistic
        assert axis["models"] == len(mine) == 4
        assert axis["pass_at_1"]["spearman"] == pytest.approx(expected, abs=1e-9)
        assert axis["pass_at_1"]["spearman_ci"] is None  # four models: no interval
        gaps = {r["model"]: r["rank_gap"] for r in axis["rows"]}
        assert sum(gaps.values()) == 0 and set(gaps) == {r["model"] for r in mine}
    assert axes["MMLU-Pro (synthetic)"]["unmatched"] == [HOSTILE]

    assert HOSTILE not in (out / "results.md").read_text()  # escaped: \<script\>
    html = (out / "results.html").read_text()
    assert HOSTILE not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert html.count('alt="breadth_') == 2 and (out / "breadth_1.png").stat().st_size > 0

    with session() as s:  # /results shows the same tables and the scatters
        admin = LoggedIn.of(s.exec(select(User).where(User.name == "demo-admin")).one())
    at = page("pages/study_results.py", admin, timeout=180).run()
    assert not at.exception, at.exception
    titles = [h.value for h in at.subheader]
    assert "Breadth against depth: rank correlation across models" in titles
    summary = at.dataframe[1 + titles.index(  # after the headline table, which has no subheader
        "Breadth against depth: rank correlation across models")]
    assert summary.value["benchmark"].tolist() == ["DrVD-Bench (synthetic)", "MMLU-Pro (synthetic)"]
    payload = page_payload(at)
    assert "breadth 1" in payload and "breadth 2" in payload  # the scatters' captions
