"""Practice items (db.study.practice): scored by the experts, graded, answered in an exam, and
never counted: the same study with and without one gives the same results, calibration data
and counted export rows; it comes first in a rater's queue and in an exam."""

import shutil
from dataclasses import asdict
from pathlib import Path

from sqlmodel import Session, select

from calibration.report import collect, data_hash
from db.engine import engine_for
from db.export import export
from db.models import Assignment, Response, Task, User
from db.raters.assignments import assign, draw_calibration
from db.raters.scoring import queue, record_submission
from db.rubrics import ensure_rubric
from db.study.exams import answer_stage, attempt_for, ensure_exam, exam_tasks, finish
from db.study.progress import people_progress
from db.users import add_user
from results.recompute import read_export
from results.results import build
from rubric import load_rubric
from tests.factories import add_practice_item, grade_all, make_study

EXPERTS = ["expert1", "expert2", "expert3"]
ROWS = ("responses", "tasks", "expert-scores", "grader-scores", "exam-answers")


def _correct(response_id: str) -> bool:
    return sum(map(ord, response_id)) % 3 != 0


def _study(s: Session, *, practice: bool) -> int:
    """Six tasks, two models, a student's exam, the calibration subset drawn, every item
    assigned to three experts and scored, every response graded; with `practice`, a practice
    task on case0 too (a model's response to it, and the student's answer)."""
    make_study(s, n_tasks=6, samples=2, experts=3)
    student = add_user(s, name="stu", role="student", password="pw")
    tasks = ["task0", "task1"]
    if practice:
        s.add(Task(task_id="practice0", case_id="case0", family="differential", level=1,
                   prompt="Practice: the most likely diagnosis?", stages=[], practice=True))
        s.flush()
        s.add(Response(response_id="p-alpha", task_id="practice0", source="model",
                       model="model-alpha", sample=0, text="MS.", blind_code="R-PRACTICE01"))
        tasks.append("practice0")
    exam = ensure_exam(s, name="baseline", task_ids=tasks)
    s.commit()
    attempt = attempt_for(s, exam_id=exam.id, user_id=student.id)
    for t in exam_tasks(s, attempt=attempt):
        for stage in range(t.n_stages):
            answer_stage(s, attempt=attempt, task_id=t.task_id, text=f"Answer {stage}.",
                         seconds=30.0, stage=stage)
    finish(s, attempt=attempt)
    rubric = ensure_rubric(s, "neurology-v1")
    counted = len(s.exec(select(Response.response_id).join(Task)
                         .where(Task.practice.is_(False))).all())
    draw_calibration(s, n=counted, seed=0)  # every counted response, and no practice one
    s.flush()
    assign(s, rubric_hash=rubric.content_hash, raters=EXPERTS, overlap=3, selection="all", seed=0)
    s.flush()
    criteria = load_rubric("neurology-v1")
    for a in s.exec(select(Assignment).order_by(Assignment.id)).all():
        task = s.get(Task, s.get(Response, a.response_id).task_id)
        correct = _correct(a.response_id)
        record_submission(s, assignment=a, active_seconds=60.0, values={
            "criteria": {c.key: (4 if correct else 2) - a.rater_id % 2
                         for c in criteria.applicable_criteria(task.family)},
            "correct_diagnosis": correct, "error_tags": [] if correct else ["knowledge_gap"],
            "comment": "" if correct else "Wrong.", "confidence": 4,
            "stage_correct": [correct] * len(task.stages)})
    config_id = grade_all(s, lambda r: _correct(r.response_id),
                          overall=lambda ok: 0.9 if ok else 0.2)
    s.commit()
    return config_id


def _measure(url: str, out: Path) -> tuple:
    """What counts: the results, the calibration data of both parts, the agreement table, and
    the export rows not marked practice (with how many are)."""
    with Session(engine_for(url), expire_on_commit=False) as s:
        config_id = _study(s, practice="practice" in out.name)
        res = asdict(build(s, config_id=config_id, by=("family", "level"), ks=(1,)))
        calibration = [(data.items, data_hash(data)) for data in (
            collect(s, config_id=config_id, part=part) for part in ("dev", "heldout"))]
        rows, practice = {}, {}
        for kind in (*ROWS, "agreement"):
            export(s, kind, fmt="jsonl", out=out / f"{kind}.jsonl")
            read = read_export(out / f"{kind}.jsonl")
            rows[kind] = len([r for r in read if not r.get("practice")])
            practice[kind] = len(read) - rows[kind]
    return res, calibration, rows, practice


def test_a_scored_graded_practice_item_changes_no_result_calibration_or_export_count(
        sqlite_url: str, migrated_sqlite: Path, tmp_path: Path) -> None:
    other = tmp_path / "without.db"
    shutil.copyfile(migrated_sqlite, other)
    (tmp_path / "practice").mkdir()
    (tmp_path / "plain").mkdir()
    with_practice = _measure(sqlite_url, tmp_path / "practice")
    without = _measure(f"sqlite:///{other}", tmp_path / "plain")
    res, calibration, rows, practice = with_practice
    # the practice item was really scored, graded and answered: its rows are in the exports,
    # marked, for each of the three experts
    assert practice == {"responses": 2, "tasks": 1, "expert-scores": 6, "grader-scores": 2,
                        "exam-answers": 1, "agreement": 0}
    assert rows == without[2]
    assert calibration == without[1]
    for key in ("overall", "cells", "people", "errors", "errors_compared", "anchoring",
                "sensitivity", "model_costs", "sources", "unjudged", "judgments", "coverage",
                "efficiency", "flags"):
        assert res[key] == without[0][key], key


def test_practice_comes_first_in_the_queue_and_the_exam_and_apart_in_progress(
        sqlite_url: str) -> None:
    with Session(engine_for(sqlite_url), expire_on_commit=False) as s:
        make_study(s, n_tasks=3, experts=2)
        rubric = ensure_rubric(s, "neurology-v1")
        s.commit()
        assign(s, rubric_hash=rubric.content_hash, raters=["expert1", "expert2"], overlap=1,
               selection="all", seed=0)
        add_practice_item(s, "case0")
        student = add_user(s, name="stu", role="student", password="pw")
        exam = ensure_exam(s, name="baseline")  # every task, the practice one last by id
        s.commit()
        # assigned after the others, overlap 1: the practice item joins both raters' queues
        design = assign(s, rubric_hash=rubric.content_hash, raters=["expert1", "expert2"],
                      overlap=1, selection="all", seed=0)
        s.commit()
        assert s.exec(select(Assignment).where(Assignment.design_id == design.id)).all()
        for rater in ("expert1", "expert2"):
            entries = queue(s, rater_id=s.exec(select(User.id).where(User.name == rater)).one())
            assert [e.practice for e in entries] == [True] + [False] * 3
            assert [e.position for e in entries] == [0, 1, 2, 3]
        attempt = attempt_for(s, exam_id=exam.id, user_id=student.id)
        tasks = exam_tasks(s, attempt=attempt)
        assert [(t.task_id, t.practice) for t in tasks] == [
            ("zz-practice", True), ("task0", False), ("task1", False), ("task2", False)]
        answer_stage(s, attempt=attempt, task_id="zz-practice", text="MS.", seconds=600.0)
        answer_stage(s, attempt=attempt, task_id="task0", text="MS.", seconds=60.0)
        taker = next(p for p in people_progress(s) if p.person == "stu")
        rater = next(p for p in people_progress(s) if p.person == "expert1")
    assert (taker.done, taker.total, taker.seconds_per_item) == (1, 3, 60.0)
    assert (taker.practice_done, taker.practice_total) == (1, 1)
    assert (rater.total, rater.practice_total) == (3, 1)
