"""A practice item (db.study.practice) on the pages (AppTest): first in a rater's queue on
/score and first in an exam on /exam, opened first and labelled "Practice (not counted)"."""

from sqlmodel import select

from db.engine import session
from db.models import User
from db.raters.assignments import assign
from db.rubrics import ensure_rubric
from db.study.exams import ensure_exam
from db.study.practice import LABEL
from tests.apptest import make_user, page
from tests.factories import add_practice_item, make_study
from ui.auth import LoggedIn


def test_the_practice_item_opens_first_and_is_labelled_on_score_and_exam(sqlite_url: str) -> None:
    student = make_user("stu", "student")
    with session() as s:
        make_study(s, n_tasks=3, experts=1)
        rubric = ensure_rubric(s, "neurology-v1")
        s.commit()
        assign(s, rubric_hash=rubric.content_hash, raters=["expert1"], overlap=1,
               selection="all", seed=0)
        add_practice_item(s, "case1", "Practice: the most likely diagnosis?")
        ensure_exam(s, name="baseline")  # every task, the practice one last by id
        s.commit()
        assign(s, rubric_hash=rubric.content_hash, raters=["expert1"], overlap=1,
               selection="all", seed=0)  # after the others: it joins the queue, and leads it
        s.commit()
        expert = LoggedIn.of(s.exec(select(User).where(User.name == "expert1")).one())

    at = page("pages/score.py", expert).run()
    assert not at.exception
    items = at.selectbox(key="score_item_list")
    assert items.options[0] == f"1. {LABEL} · R-PRACTICE01 · new"  # first, and opened
    assert items.index == 0
    assert sum(LABEL in o for o in items.options) == 1
    assert any(LABEL in i.value for i in at.info)

    at = page("pages/exam.py", student).run()
    assert not at.exception
    tasks = at.selectbox(key="exam_task")
    assert tasks.value == 0 and tasks.options[0] == f"1. {LABEL} · Differential diagnosis · level 1"
    assert sum(LABEL in o for o in tasks.options) == 1
    assert any(LABEL in i.value for i in at.info)
