"""Where later assignments land in a rater's queue: a batch added after the first assignment
(an exam's human answers, a model collected later, responses released by a flag review) is
of one source, so its place in the queue must not tell it apart."""

import pytest
from sqlmodel import Session, select

from db.engine import engine_for
from db.models import Response, User
from db.raters.assignments import assign, plan_assignment
from db.raters.scoring import queue, save_draft
from db.rubrics import ensure_rubric
from db.study.exams import answer_stage, attempt_for, ensure_exam, exam_tasks, finish
from db.users import add_user
from tests.factories import make_study

pytestmark = pytest.mark.slow  # starts processes or takes seconds: make test only


def _human_answers(s: Session) -> None:
    """A student takes an exam of every task and finishes: one human response per task."""
    student = add_user(s, name="stu", role="student", password="pw")
    exam = ensure_exam(s, name="baseline")
    s.commit()
    attempt = attempt_for(s, exam_id=exam.id, user_id=student.id)
    for t in exam_tasks(s, attempt=attempt):
        for k in range(t.n_stages):
            answer_stage(s, attempt=attempt, task_id=t.task_id, text=f"answer {k}")
    finish(s, attempt=attempt)


def test_a_later_batch_is_mixed_among_the_items_not_yet_opened(database_url: str) -> None:
    with Session(engine_for(database_url), expire_on_commit=False) as s:
        make_study(s, n_tasks=12, samples=2)  # 48 model responses
        rubric = ensure_rubric(s, "neurology-v1").content_hash
        raters = ["expert1", "expert2"]
        assign(s, rubric_hash=rubric, raters=raters, overlap=1, seed=0)
        s.commit()
        e1, e2 = (s.exec(select(User.id).where(User.name == n)).one() for n in raters)
        first = queue(s, rater_id=e1)
        for e in first[:6]:  # expert1 opened six items; expert2 every one
            save_draft(s, rater_id=e1, assignment_id=e.assignment_id, values={})
        for e in queue(s, rater_id=e2):
            save_draft(s, rater_id=e2, assignment_id=e.assignment_id, values={})
        _human_answers(s)
        humans = set(s.exec(select(Response.blind_code).where(Response.source != "model")))
        assert len(humans) == 12
        preview = plan_assignment(s, raters=raters, overlap=1, seed=0).describe()
        assign(s, rubric_hash=rubric, raters=raters, overlap=1, seed=0)
        s.commit()
        after = queue(s, rater_id=e1)
        assert [e.position for e in after] == list(range(len(first) + 6))  # no gap, no twice
        assert [(e.assignment_id, e.position) for e in after[:6]] == [
            (e.assignment_id, e.position) for e in first[:6]]  # what was opened keeps its place
        unopened = {e.assignment_id for e in first[6:]}
        assert [e.assignment_id for e in after if e.assignment_id in unopened] == [
            e.assignment_id for e in first[6:]]  # and the rest its order
        new = [k for k, e in enumerate(after) if e.blind_code in humans]
        old = [k for k, e in enumerate(after) if e.assignment_id in unopened]
        assert len(new) == 6 and min(new) < max(old)  # mixed in, not a block at the end
        late = queue(s, rater_id=e2)[24:]  # nothing left to mix with: a block, and the
        assert {e.blind_code for e in late} <= humans and len(late) == 6  # preview says so
        assert preview.endswith(
            "; expert2 has opened every item already, so the added ones follow as a batch of "
            "their own, which tells them apart (e.g. as the human answers) unless it mixes "
            "sources")
