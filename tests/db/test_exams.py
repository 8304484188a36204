"""Exams: stage-by-stage reveal, answers fixed once recorded, human responses on finish."""

import pytest
from sqlmodel import Session, select

from db.engine import engine_for
from db.models import Response, Task
from db.study.exams import answer_stage, attempt_for, ensure_exam, exam_tasks, finish
from db.users import add_user
from errors import UserError
from tests.factories import make_study


def test_stages_reveal_in_order_and_finish_makes_blind_responses(database_url: str) -> None:
    with Session(engine_for(database_url), expire_on_commit=False) as s:
        make_study(s, n_tasks=3)  # task2 is level 3 with one extra stage
        student = add_user(s, name="stu", role="student", password="pw")
        exam = ensure_exam(s, name="baseline", task_ids=["task0", "task2"])
        s.commit()
        attempt = attempt_for(s, exam_id=exam.id, user_id=student.id)
        tasks = {t.task_id: t for t in exam_tasks(s, attempt=attempt)}
        assert tasks["task2"].n_stages == 2 and tasks["task2"].revealed_stages == []
        assert answer_stage(s, attempt=attempt, task_id="task2", text="First guess") == 0
        tasks = {t.task_id: t for t in exam_tasks(s, attempt=attempt)}
        stage_text = s.get(Task, "task2").stages[0]
        assert tasks["task2"].revealed_stages == [stage_text] and not tasks["task2"].done
        assert answer_stage(s, attempt=attempt, task_id="task2", text="Revised") == 1
        with pytest.raises(UserError, match="already fully answered"):
            answer_stage(s, attempt=attempt, task_id="task2", text="Again")
        with pytest.raises(UserError, match="not part of this exam"):
            answer_stage(s, attempt=attempt, task_id="task1", text="x")
        answer_stage(s, attempt=attempt, task_id="task0", text="Only answer")
        assert finish(s, attempt=attempt) == 2
        human = s.exec(select(Response).where(Response.source == "student")).all()
        assert sorted((r.task_id, r.text, r.turns) for r in human) == [
            ("task0", "Only answer", None), ("task2", "First guess", ["Revised"])]
        assert all(r.model is None and r.blind_code.startswith("R-") for r in human)
        with pytest.raises(UserError, match="finished"):
            answer_stage(s, attempt=attempt, task_id="task0", text="late")


def test_an_exam_with_unknown_or_other_tasks_is_refused(database_url: str) -> None:
    with Session(engine_for(database_url)) as s:
        make_study(s, n_tasks=3)
        ensure_exam(s, name="baseline", task_ids=["task0", "task2"])
        s.commit()
        with pytest.raises(UserError, match=r"exam 'baseline': unknown tasks 'nope', 'gone'"):
            ensure_exam(s, name="baseline", task_ids=["task0", "nope", "gone"])
        with pytest.raises(UserError, match="exists with 2 other tasks"):
            ensure_exam(s, name="baseline", task_ids=["task1"])
        with pytest.raises(UserError, match="unknown task 'nope'"):
            ensure_exam(s, name="new", task_ids=["nope"])
        assert ensure_exam(s, name="baseline", task_ids=["task0", "task2"]).task_ids == [
            "task0", "task2"]
        assert ensure_exam(s, name="baseline").task_ids == ["task0", "task2"]
