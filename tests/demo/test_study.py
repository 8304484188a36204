"""The loaded demo study: synthetic exam takers, and what the synthetic grader reports."""

from pathlib import Path

from sqlmodel import select

from db.engine import session
from db.models import ExamAttempt, GraderScore, Response, Task, User
from demo.bundle import MARKER
from demo.exam_takers import takers


def test_synthetic_people_took_the_exam_and_were_graded(demo_study: Path) -> None:
    with session() as s:
        people = {u.name: u for u in s.exec(select(User).where(User.name.like("synthetic-%")))}
        answers = s.exec(select(Response, Task).join(Task, Task.task_id == Response.task_id)
                         .where(Response.source != "model")).all()
        attempts = s.exec(select(ExamAttempt)).all()
        grades = {g.response_id: g for g in s.exec(select(GraderScore))}
        tasks = len(s.exec(select(Task)).all())
    assert sorted(people) == sorted(name for name, _, _ in takers())
    assert all(u.demo and u.disabled for u in people.values())  # flagged; nobody logs in
    assert len(attempts) == 9 and all(a.finished_at is not None for a in attempts)
    assert len(answers) == 9 * tasks
    assert {r.source for r, _ in answers} == {"student", "physician"}
    assert any(grades[r.response_id].diagnosis_rank for r, t in answers if t.family == "differential")
    for r, task in answers:
        assert r.text.startswith(MARKER)
        assert len(r.turns or []) == len(task.stages or [])
        g = grades[r.response_id]
        assert task.family == "differential" or g.diagnosis_rank is None
        assert (g.stages is not None) == (task.level == 3)
        if g.stages:
            assert len(g.stages) == 1 + len(task.stages) and not g.stages[0]["changed"]
