"""pass@k against its definition, and the leaderboard of a study with known judgments."""

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlmodel import Session, select

from db.engine import engine_for, session, upgrade
from db.models import GraderRun, GraderScore, Response
from db.users import add_user
from errors import UserError
from grading.config import GraderSettings, store_config
from results.leaderboard import display_rows, leaderboard, pass_at_k
from tests.factories import make_study

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("n", range(1, 8))
def test_pass_at_k_is_the_share_of_k_subsets_with_a_correct_sample(n: int) -> None:
    for c in range(n + 1):
        samples = [True] * c + [False] * (n - c)
        for k in range(1, n + 1):
            subsets = list(itertools.combinations(samples, k))
            expected = sum(any(x) for x in subsets) / len(subsets)
            assert pass_at_k(n, c, k) == pytest.approx(expected, abs=1e-12)
    with pytest.raises(ValueError):
        pass_at_k(3, 1, 4)


def _judged_study(s: Session, n_tasks: int = 3) -> int:
    """3 tasks (one case each) x 2 models x 5 samples; model-alpha's sample 0 is correct on
    every task, model-beta's every sample on task2 only; two students answer task0, one of them
    correctly."""
    make_study(s, n_tasks=n_tasks, samples=5, experts=0)
    for i in (1, 2):
        user = add_user(s, name=f"student{i}", role="student", password="pw")
        s.flush()
        s.add(Response(response_id=f"human-{i}", task_id="task0", source="student",
                       user_id=user.id, text="MS.", blind_code=f"R-H{i}"))
    config = store_config(s, GraderSettings(model="test-grader-2024-01-01"))
    run = GraderRun(config_id=config.id, items="all")
    s.add(run)
    s.flush()
    for r in s.exec(select(Response)).all():
        correct = (r.model == "model-alpha" and r.sample == 0 or r.response_id == "human-1"
                   or r.model == "model-beta" and r.task_id == "task2")
        s.add(GraderScore(config_id=config.id, response_id=r.response_id, run_id=run.id,
                          request_hash="x", criteria={}, correct_diagnosis=correct,
                          error_tags=[], overall=1.0 if correct else 0.5))
    s.commit()
    return config.id


def test_leaderboard_rows(sqlite_url: str) -> None:
    with Session(engine_for(sqlite_url)) as s:
        cid = _judged_study(s)
        rows = leaderboard(s, config_id=cid, ks=(1, 5))
        by_family = leaderboard(s, config_id=cid, ks=(1,), by="family")
        with pytest.raises(UserError, match="--k must be at least 1"):
            leaderboard(s, config_id=cid, ks=(0,))
    assert [(r["who"], r["pass@1"], r["pass@5"]) for r in rows] == [
        ("model-beta", 0.3333, 0.3333), ("model-alpha", 0.2, 1.0), ("student", 0.5, None)]
    beta, alpha, student = rows
    assert alpha["pass@1 95% CI"] is None and beta["pass@1 95% CI"] is None  # 3 cases: too few
    assert display_rows([alpha])[0]["pass@1 95% CI"] == "too few cases"
    assert student["pass@5 95% CI"] is None and display_rows([student])[0]["pass@5 95% CI"] == "–"
    assert (alpha["tasks"], alpha["cases"], alpha["min_samples"], alpha["overall_mean"]) == (
        3, 3, 5, 0.6)
    assert {r["family"] for r in by_family} == {"differential", "lesion", "rationale"}


def test_leaderboard_intervals_from_five_cases(sqlite_url: str) -> None:
    """Six tasks in six cases: model-alpha's pass@1 is 0.2 on every task, yet its interval has
    a width of its own (no spread seen: as if each case were one observation)."""
    with Session(engine_for(sqlite_url)) as s:
        rows = {r["who"]: r for r in leaderboard(s, config_id=_judged_study(s, n_tasks=6))}
    low, high = rows["model-alpha"]["pass@1 95% CI"]
    assert low < 0.2 < high and high - low > 0.2
    low, high = rows["model-beta"]["pass@1 95% CI"]  # one task of six solved
    assert rows["model-beta"]["pass@1"] == round(1 / 6, 4) and low < 1 / 6 < high


@pytest.mark.slow
def test_cli_leaderboard(nmb_home: Path) -> None:
    upgrade()
    with session() as s:
        cid = _judged_study(s)
    out = subprocess.run([sys.executable, "-m", "cli", "leaderboard", "--config", str(cid),
                          "--k", "1", "5", "--json"], cwd=ROOT, env=dict(os.environ),
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    rows = {r["who"]: r for r in json.loads(out.stdout)}
    assert rows["model-alpha"]["pass@5"] == 1.0 and rows["model-alpha"]["pass@1"] == 0.2
    assert out.stderr.strip() == (f"nmb: note: grader config #{cid} is not validated (not "
                                  "held-out tested): its grades are not a validated measure")
    bad = subprocess.run([sys.executable, "-m", "cli", "leaderboard", "--config", str(cid + 9)],
                         cwd=ROOT, env=dict(os.environ), capture_output=True, text=True,
                         timeout=120)
    assert bad.returncode == 2 and bad.stderr.strip() == f"nmb: no grader config with id {cid + 9}"


def test_display_rows_one_rule_for_decimals() -> None:
    row = {"who": "m", "group": "model", "tasks": 3, "people": None, "min_samples": 5,
           "overall_mean": 0.6, "overall_mean 95% CI": [0.475, 0.6111], "pass@1": 0.2,
           "pass@1 95% CI": [0.0, 1.0], "pass@5": None, "pass@5 95% CI": None, "top_tasks": 1,
           "wrong": 12, "errors among wrong": {"knowledge_gap": 0.375,
                                               "visual_hallucination": 0.0833},
           "sources": {"expert": 2, "grader": 13}}
    assert display_rows([row]) == [{
        "who": "m", "group": "model", "tasks": 3, "people": None, "min_samples": 5,
        "overall_mean": "0.60", "overall_mean 95% CI": "[0.47, 0.61]", "pass@1": "0.20",
        "pass@1 95% CI": "[0.00, 1.00]", "pass@5": "–", "pass@5 95% CI": "–", "top_tasks": 1,
        "wrong": 12, "errors among wrong": "knowledge gap 37.5%, visual hallucination 8.3%",
        "sources": "expert 2, grader 13"}]


@pytest.mark.slow
def test_cli_leaderboard_table_shows_a_dash_where_a_count_does_not_apply(nmb_home: Path) -> None:
    """docs/leaderboard.md: `–` where a value does not apply; a model's `people` printed
    `<NA>` (pandas' missing value) before."""
    upgrade()
    with session() as s:
        cid = _judged_study(s)
    out = subprocess.run([sys.executable, "-m", "cli", "leaderboard", "--config", str(cid)],
                         cwd=ROOT, env=dict(os.environ), capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    header, *lines = out.stdout.splitlines()
    assert "<NA>" not in out.stdout
    alpha = next(line.split() for line in lines if line.split()[0] == "model-alpha")
    assert alpha[header.split().index("people")] == "–"
