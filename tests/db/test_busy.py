"""Writes people make while the SQLite study database is busy: 16 raters and exam takers
writing at once lose nothing and see no error; a write that cannot get in before its deadline
is refused in one line, with nothing lost.

SQLite's own wait for the write lock (`PRAGMA busy_timeout`) is squeezed to 20 ms, on every
connection checked out and for every transaction (`db.engine.BUSY_TIMEOUT_MS`, which each one
begins with): it stands for a host so loaded that the 30 s of a real deployment run out
(issue 40: one submit of 608 failed with "database is locked")."""

import threading
import time

import pytest
from sqlalchemy import event, func
from sqlalchemy.exc import OperationalError
from sqlmodel import Session, select

from db.engine import engine_for
from db.models import ExamAttempt, ExpertScore, ScoreRevision, StageAnswer, Task, User
from db.raters.assignments import assign
from db.raters.scoring import load_item, queue, save_draft, submit
from db.rubrics import ensure_rubric
from db.study import exams
from db.users import add_user
from tests.db.interleave import holding, run_threads
from tests.factories import make_study

RATERS, TAKERS = 10, 6  # 16 writers


def _squeezed(url: str, monkeypatch: pytest.MonkeyPatch):
    import db.engine

    monkeypatch.setattr(db.engine, "BUSY_TIMEOUT_MS", 20, raising=False)
    engine = engine_for(url)
    event.listen(engine, "checkout",
                 lambda dbapi_conn, *_: dbapi_conn.execute("PRAGMA busy_timeout=20"))
    return engine


def _study(engine) -> tuple[dict[int, list[tuple[int, dict]]], list[tuple[ExamAttempt, list]]]:
    """{rater id: [(assignment id, valid values)]} and [(attempt, [(task id, stages)])]: as
    /score and /exam hold them between writes."""
    with Session(engine, expire_on_commit=False) as s:
        make_study(s, n_tasks=6, experts=RATERS)
        takers = [add_user(s, name=f"student{i}", role="student", password="pw")
                  for i in range(TAKERS)]
        rubric = ensure_rubric(s, "neurology-v1")
        assign(s, rubric_hash=rubric.content_hash, overlap=RATERS,
               raters=[f"expert{i}" for i in range(1, RATERS + 1)])
        exam = exams.ensure_exam(s, name="baseline")
        s.commit()
        raters = {}
        for rater in s.exec(select(User).where(User.role == "expert")):
            raters[rater.id] = []
            for e in queue(s, rater_id=rater.id):
                family = load_item(s, rater_id=rater.id, assignment_id=e.assignment_id).family
                raters[rater.id].append((e.assignment_id, {
                    "criteria": {c.key: 2 for c in rubric.applicable_criteria(family)},
                    "correct_diagnosis": True, "error_tags": [], "comment": "", "confidence": 4}))
        attempts = [exams.attempt_for(s, exam_id=exam.id, user_id=t.id) for t in takers]
        tasks = [(t, s.get(Task, t).stages) for t in exam.task_ids]
    return raters, [(a, tasks) for a in attempts]


def test_sixteen_writers_at_once_lose_nothing_and_see_no_error(
        sqlite_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """10 raters save a draft and submit each of their 12 items, 6 students draft and answer
    every stage of an exam, all released at once by a barrier, while a grader's transactions
    hold the write lock 30 ms in every 50 (before: "database is locked", the write lost)."""
    engine = _squeezed(sqlite_url, monkeypatch)
    raters, takers = _study(engine)
    start = threading.Barrier(RATERS + TAKERS + 1)
    failed: list[BaseException] = []
    writing = threading.Event()
    writing.set()

    def rater(rater_id: int) -> None:
        start.wait()
        for aid, values in raters[rater_id]:
            for write in (save_draft, submit):
                with Session(engine) as s:
                    write(s, rater_id=rater_id, assignment_id=aid, values=values)

    def taker(attempt: ExamAttempt, tasks: list) -> None:
        start.wait()
        for task_id, stages in tasks:
            for stage in range(1 + len(stages or [])):
                with Session(engine) as s:
                    exams.save_draft(s, attempt=attempt, task_id=task_id, text="half", stage=stage)
                    exams.answer_stage(s, attempt=attempt, task_id=task_id, text=f"answer {stage}",
                                       stage=stage)

    def grader() -> None:  # not a person's write: commits on its own schedule
        start.wait()
        while writing.is_set():
            try:
                with holding(sqlite_url, ""):
                    time.sleep(0.03)
            except OperationalError:  # a person's write had the lock: the next turn
                pass
            time.sleep(0.02)

    def guarded(work):
        def run() -> None:
            try:
                work()
            except BaseException as e:  # noqa: BLE001 - reported below
                failed.append(e)
        return run

    people = run_threads(*(guarded(lambda r=r: rater(r)) for r in raters),
                         *(guarded(lambda a=a, t=t: taker(a, t)) for a, t in takers))
    (grading,) = run_threads(grader)
    for t in people:
        t.join()
    writing.clear()
    grading.join()
    assert not failed, f"{len(failed)} writes failed, first: {failed[0]!r}"
    with Session(engine) as s:
        assert s.exec(select(func.count()).select_from(ExpertScore)
                      .where(ExpertScore.status == "submitted", ExpertScore.draft.is_(None))
                      ).one() == RATERS * 12
        assert s.exec(select(func.count()).select_from(ScoreRevision)).one() == RATERS * 12
        stages = sum(1 + len(st or []) for _, st in takers[0][1])
        assert s.exec(select(func.count()).select_from(StageAnswer)).one() == TAKERS * stages


def test_a_write_kept_out_past_its_deadline_is_one_line_and_loses_nothing(
        sqlite_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """An import holds the write lock past the submit's deadline: the rater reads one line
    saying so; the draft saved before stays as it was, and no score is stored."""
    from db import busy
    from errors import UserError

    monkeypatch.setattr(busy, "WRITE_DEADLINE_SECONDS", 0.3)
    engine = _squeezed(sqlite_url, monkeypatch)
    raters, _ = _study(engine)
    rater_id, [(aid, values), *_] = next(iter(raters.items()))
    with Session(engine) as s:
        save_draft(s, rater_id=rater_id, assignment_id=aid, values={**values, "comment": "kept"})
    with holding(sqlite_url, ""), Session(engine) as s:
        began = time.monotonic()
        with pytest.raises(UserError) as refused:
            submit(s, rater_id=rater_id, assignment_id=aid, values=values)
        assert time.monotonic() - began < 2
    assert str(refused.value) == busy.StudyBusy(busy.SCORE_KEPT).args[0]
    assert "\n" not in str(refused.value) and "locked" not in str(refused.value)
    with Session(engine) as s:
        score = s.exec(select(ExpertScore)).one()
        assert (score.status, score.revision, score.draft["comment"]) == ("draft", 0, "kept")
