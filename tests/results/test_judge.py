"""One judge per table: the choice of judge, the sensitivity table by hand, and on the demo the
judge printed with the tables and every table recomputed from `nmb export` files alone."""

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest
from sqlmodel import Session

from db.engine import database_url, engine_for
from errors import UserError
from results import results
from results.judgments import EXPERTS, GRADER, GRADER_ON_SUBSET, MIXED, Judged, Judgment
from results.publish.tables import tables
from results.recompute import recompute
from results.sensitivity import sensitivity_rows

ROOT = Path(__file__).resolve().parents[2]


def _j(rid: str, task: str, correct: bool, source: str, overall: float) -> Judgment:
    return Judgment("m", True, task, "lesion", 1, correct, overall, source=source,
                    response_id=rid)


def test_sensitivity_by_hand() -> None:
    """r1 (task t1): the grader says correct (0.8), the experts wrong (0.2); r2 (t2): graded
    only, correct (0.6). Each column judges a different selection of the same responses."""
    judged = [Judged(_j("r1", "t1", True, GRADER, 0.8), _j("r1", "t1", False, EXPERTS, 0.2)),
              Judged(_j("r2", "t2", True, GRADER, 0.6), None)]
    pass1, score = sensitivity_rows(judged)
    assert (pass1.who, pass1.measure, score.measure) == ("m", "pass@1", "rubric score")
    assert {how: e.value for how, e in pass1.estimates.items()} == {
        MIXED: 0.5, GRADER: 1.0, EXPERTS: 0.0, GRADER_ON_SUBSET: 1.0}
    assert {how: e.value for how, e in score.estimates.items()} == {
        MIXED: 0.4, GRADER: 0.7, EXPERTS: 0.2, GRADER_ON_SUBSET: 0.8}
    assert pass1.responses == {MIXED: 2, GRADER: 2, EXPERTS: 1, GRADER_ON_SUBSET: 1}


def test_an_unknown_judge_is_a_user_error(sqlite_url: str) -> None:
    with Session(engine_for(sqlite_url)) as s, pytest.raises(UserError, match="--judge 'both'"):
        results.build(s, judge="both")


def _nmb(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cli", *args], cwd=ROOT, env=dict(os.environ),
                          capture_output=True, text=True, timeout=300)


def test_on_the_demo_the_judge_is_chosen_and_printed(demo_study: Path, tmp_path: Path) -> None:
    grader = _nmb("results", "--by", "", "--k", "1")
    experts = _nmb("results", "--by", "", "--k", "1", "--judge", "experts", "--format", "json",
                   "--out", str(tmp_path / "out"))
    assert grader.returncode == 0 and experts.returncode == 0, grader.stderr + experts.stderr
    assert "Judge: grader (the grader on every response it graded)" in grader.stdout
    data = json.loads(experts.stdout)
    n = data["sources"][EXPERTS]
    assert data["judge"] == EXPERTS and data["sources"][GRADER] == 0 and 0 < n < 348
    assert data["unjudged"] == 348 - n
    assert any(f"the tables cover the {n} expert-scored responses" in f for f in data["flags"])
    assert all(c["top"]["1"]["value"] is None for c in data["overall"])
    # the main table's estimates are the sensitivity table's experts column
    sens = {(r["who"], r["measure"]): r for r in data["sensitivity"]}
    for c in data["overall"]:
        assert sens[c["who"], "pass@1"]["estimates"][EXPERTS] == c["pass_at"]["1"]
        assert sens[c["who"], "rubric score"]["estimates"][EXPERTS] == c["score"]
    judgments = pd.read_csv(tmp_path / "out" / "judgments.csv")
    assert len(judgments) == n and set(judgments["judge"]) == {EXPERTS}


def _export(folder: Path, fmt: str) -> None:
    folder.mkdir()
    for kind in ("responses", "tasks", "grader-scores", "expert-scores"):
        out = _nmb("export", kind, "--format", fmt, "--out", str(folder / f"{kind}.{fmt}"))
        assert out.returncode == 0, out.stderr


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_every_table_is_recomputed_from_exports_alone(demo_study: Path, tmp_path: Path,
                                                      fmt: str) -> None:
    _export(tmp_path / "exports", fmt)
    for judge in (GRADER, EXPERTS):
        with Session(engine_for(database_url())) as s:
            built = results.build(s, judge=judge)
        again = recompute(tmp_path / "exports", config_id=built.grader["id"], judge=judge)
        for a, b in zip(tables(built), tables(again), strict=True):
            assert (a.name, a.header, a.rows, a.note) == (b.name, b.header, b.rows, b.note)
        # JSONL exports write floats to 10 significant digits (pandas' default)
        assert [replace(j, overall=round(j.overall, 9)) for j in again.judgments] == [
            replace(j, overall=round(j.overall, 9)) for j in built.judgments]


def test_pass_at_1_from_the_exports_by_hand(demo_study: Path, tmp_path: Path) -> None:
    """An independent computation with pandas from the CSV exports: a model's pass@1 under the
    grader is the mean over tasks of the share of its graded samples judged correct."""
    _export(tmp_path / "exports", "csv")
    grades = pd.read_csv(tmp_path / "exports" / "grader-scores.csv")
    with Session(engine_for(database_url())) as s:
        built = results.build(s, by=())
    mine = grades[(grades["config_id"] == built.grader["id"]) & (grades["source"] == "model")]
    by_hand = mine.groupby(["model", "task_id"])["correct_diagnosis"].mean().groupby("model").mean()
    for c in built.overall:
        if c.group == "model":
            assert c.pass_at[1].value == round(by_hand[c.who], 4)
