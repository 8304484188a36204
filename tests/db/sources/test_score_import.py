"""`nmb import-scores`: earlier expert scores from a CSV, validated against the rubric, written
in one transaction as imported revisions, and counted in the held-out look only where the
protocol says so."""

import csv
from pathlib import Path

import numpy as np
import pytest
from sqlmodel import Session, select

from calibration import calibrate
from cli import main
from db.engine import engine_for
from db.export import export
from db.models import (
    Assignment,
    AuditLog,
    CalibrationItem,
    ExpertScore,
    GraderRun,
    GraderScore,
    Response,
    ScoreRevision,
    Task,
)
from db.raters.assignments import assign, draw_calibration
from db.raters.scoring import submit
from db.rubrics import ensure_rubric
from db.users import add_user
from grading.config import GraderSettings, store_config
from rubric.scoring import validate_score
from tests.db.bundle.bundles import snapshot
from tests.factories import make_study

HEADER = ["response_id", "blind_code", "rater", "criterion", "level", "error_classes", "comment"]


def _rows(s: Session, rater: str, rids: list[str], level: int = 3, by_code: bool = False,
          ) -> list[list[str]]:
    """One complete score per response: every applicable criterion at `level`, and the
    correct-diagnosis judgment."""
    rubric = ensure_rubric(s, "neurology-v1")
    out = []
    for rid in rids:
        family, code = s.exec(select(Task.family, Response.blind_code).join(Response)
                              .where(Response.response_id == rid)).one()
        name = ["", code] if by_code else [rid, ""]
        for c in rubric.applicable_criteria(family):
            out.append([*name, rater, c.key, str(level), "", ""])
        out.append([*name, rater, "correct_diagnosis", "yes" if level >= 3 else "no",
                    "", ""])
    return out


def _exit(argv: list[str]) -> int:
    """`nmb ARGV` in-process: its exit code (a refusal of several problems exits 2 itself)."""
    try:
        return main(argv)
    except SystemExit as e:
        return int(e.code)


def _write(path: Path, rows: list[list[str]]) -> Path:
    with path.open("w", newline="") as f:
        csv.writer(f).writerows([HEADER, *rows])
    return path


def test_a_valid_csv_imports_marked_with_its_audit_row(database_url: str, tmp_path: Path,
                                                       capsys) -> None:
    s = Session(engine_for(database_url), expire_on_commit=False)
    rids = make_study(s, n_tasks=3)
    rows = _rows(s, "expert1", rids[:2]) + _rows(s, "expert2", rids[2:3], by_code=True)
    rows[0][5] = "perceptual_failure; knowledge_gap"  # error classes, and so a comment
    rows[0][6] = "Missed the DWI lesion."
    s.close()
    path = _write(tmp_path / "paper form.csv", rows)
    assert main(["import-scores", str(path), "--dry-run"]) == 0
    assert "would import 3 expert scores" in capsys.readouterr().out
    assert main(["import-scores", str(path)]) == 0
    out = capsys.readouterr().out
    assert "imported 3 expert scores" in out and "expert1, expert2" in out
    with Session(engine_for(database_url)) as s:
        scores = s.exec(select(ExpertScore, Assignment).join(Assignment)
                        .order_by(Assignment.response_id)).all()
        assert [(a.response_id, sc.imported, sc.status, sc.revision) for sc, a in scores] == [
            (rids[0], True, "submitted", 1), (rids[1], True, "submitted", 1),
            (rids[2], True, "submitted", 1)]
        first = scores[0][0]
        assert first.error_tags == ["perceptual_failure", "knowledge_gap"]
        assert first.comment == "Missed the DWI lesion." and first.correct_diagnosis is True
        assert first.overall == pytest.approx(0.75)
        revisions = s.exec(select(ScoreRevision)).all()
        assert len(revisions) == 3 and all(r.content["imported"] is True for r in revisions)
        [audit] = s.exec(select(AuditLog).where(AuditLog.action == "scores.import")).all()
        assert audit.actor == "cli" and audit.detail["scores"] == 3
        export(s, "expert-scores", fmt="csv", out=tmp_path / "e.csv")
    with (tmp_path / "e.csv").open() as f:
        assert {row["imported"] for row in csv.DictReader(f)} == {"True"}
    # the same file again: each rater has scored those responses, nothing more is written
    before = snapshot(database_url)
    assert _exit(["import-scores", str(path)]) == 2
    assert "already scored (a submitted score" in capsys.readouterr().err
    assert snapshot(database_url) == before


def test_a_csv_with_mistakes_is_refused_listing_every_problem(database_url: str, tmp_path: Path,
                                                              capsys) -> None:
    s = Session(engine_for(database_url), expire_on_commit=False)
    rids = make_study(s, n_tasks=6)
    add_user(s, name="student1", role="student", password="pw")
    s.commit()
    good = _rows(s, "expert1", rids[:1])
    bad_criterion = _rows(s, "expert1", rids[1:2])
    bad_criterion[0][3] = "bedside_manner"
    bad_level = _rows(s, "expert1", rids[2:3])
    bad_level[0][4] = "7"
    student = _rows(s, "student1", rids[3:4])
    nobody = _rows(s, "expert9", rids[4:5])
    missing = _rows(s, "expert2", rids[5:6])[1:]  # its first criterion left out
    unknown_response = [["r-none", "", "expert1", "coherence", "2", "", ""]]
    bad_tag = _rows(s, "expert3", rids[:1])
    bad_tag[0][5] = "typo_error"
    s.close()
    path = _write(tmp_path / "scores.csv", good + bad_criterion + bad_level + student + nobody
                  + missing + unknown_response + bad_tag)
    before = snapshot(database_url)
    assert _exit(["import-scores", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("nmb: scores.csv has 7 problems; nothing was imported\n"), err
    for problem in ("unknown criterion 'bedside_manner'", "level 7 of", "is outside the scale 0-4",
                    "rater 'student1' is not an active expert's account",
                    "no account named 'expert9' (and 4 rows more)",
                    "missing final_diagnosis (every criterion", "no response 'r-none'",
                    "unknown error class 'typo_error'"):
        assert problem in err, problem
    assert snapshot(database_url) == before


def _calibrated_study(url: str) -> tuple[Session, int, list[str]]:
    """18 responses drawn into a calibration subset, scored blind by expert1 and expert2,
    graded by a test config; returns the session, the config and the held-out items."""
    s = Session(engine_for(url), expire_on_commit=False)
    make_study(s, n_tasks=9)
    rubric = ensure_rubric(s, "neurology-v1")
    draw_calibration(s, n=18, seed=0)
    assign(s, rubric_hash=rubric.content_hash, raters=["expert1", "expert2"], overlap=2,
           selection="calibration", seed=0)
    s.commit()
    rng = np.random.default_rng(0)
    family = dict(s.exec(select(Response.response_id, Task.family).join(Task)).all())
    quality = {rid: int(rng.integers(0, 5)) for rid in family}
    for a in s.exec(select(Assignment)).all():
        crit = {c.key: quality[a.response_id] for c in rubric.applicable_criteria(
            family[a.response_id])}
        submit(s, rater_id=a.rater_id, assignment_id=a.id,
               values={"criteria": crit, "correct_diagnosis": quality[a.response_id] >= 3,
                       "error_tags": [], "comment": "", "confidence": 3})
    config = store_config(s, GraderSettings(model="test-grader-2024-01-01"))
    run = GraderRun(config_id=config.id, items="calibration")
    s.add(run)
    s.flush()
    for rid, q in quality.items():
        crit = {c.key: q for c in rubric.applicable_criteria(family[rid])}
        clean = validate_score(rubric, {"criteria": crit, "correct_diagnosis": q >= 3},
                               family=family[rid])
        s.add(GraderScore(config_id=config.id, response_id=rid, run_id=run.id,
                          request_hash="x", criteria=clean["criteria"],
                          correct_diagnosis=clean["correct_diagnosis"], error_tags=[],
                          overall=clean["overall"]))
    s.commit()
    held = sorted(s.exec(select(CalibrationItem.response_id)
                         .where(CalibrationItem.part == "heldout")))
    return s, config.id, held


@pytest.mark.slow  # two held-out reports with their figures: seconds
@pytest.mark.parametrize("counted", [False, True], ids=["by-default-left-out", "counted"])
def test_imported_scores_count_in_the_held_out_look_only_where_the_protocol_says(
        database_url: str, tmp_path: Path, counted: bool, capsys) -> None:
    s, config_id, held = _calibrated_study(database_url)
    path = _write(tmp_path / "earlier.csv", _rows(s, "expert3", held, level=0))
    s.rollback()  # the command's session writes
    assert main(["import-scores", str(path)]) == 0
    capsys.readouterr()
    register = ["protocol", "register", "--bootstrap", "200", "--accept-weaker-than-default"]
    assert main(register + (["--count-imported-scores"] if counted else [])) == 0
    terms = capsys.readouterr().out
    s.rollback()
    assert ("imported expert scores counted" in terms) is counted
    n = len(held)
    look = calibrate.run(s, config_id=config_id, part="heldout").report
    assert look.validates and look.n_experts == (3 if counted else 2)
    assert (f"{n} of {3 * n} expert scores imported, not collected blind" if counted else
            f"{n} imported expert scores (not collected blind) left out of the heldout part: "
            "the protocol does not count them") in look.flags
    assert calibrate.check(s, report_id=calibrate.latest_look(
        s, config_id=config_id).report_id).matches
    s.close()
