"""The admin's progress table: done of total, time per item and the time left, for an exam
taker (tasks fully answered, their recorded seconds) and a rater with nothing done yet."""

from sqlmodel import Session

from db.engine import engine_for
from db.study.exams import answer_stage, attempt_for, ensure_exam
from db.study.progress import Progress, people_progress
from db.users import add_user
from tests.factories import make_study


def test_a_taker_two_tasks_of_four_in_ten_minutes_has_ten_minutes_left(sqlite_url: str) -> None:
    with Session(engine_for(sqlite_url), expire_on_commit=False) as s:
        make_study(s, n_tasks=4, experts=0)  # task2 has two stages
        student = add_user(s, name="stu", role="student", password="pw")
        exam = ensure_exam(s, name="baseline", task_ids=["task0", "task1", "task2", "task3"])
        s.commit()
        attempt = attempt_for(s, exam_id=exam.id, user_id=student.id)
        answer_stage(s, attempt=attempt, task_id="task0", text="a", seconds=200)
        answer_stage(s, attempt=attempt, task_id="task2", text="b", seconds=250)
        answer_stage(s, attempt=attempt, task_id="task2", text="c", seconds=150, stage=1)
        [row] = people_progress(s)
    assert row == Progress("stu", "student", "baseline", 2, 4, 300.0)
    assert row.minutes_left == 10.0
    assert Progress("e", "expert", "scoring", 0, 5, None).minutes_left is None
    assert Progress("e", "expert", "scoring", 5, 5, 60.0).minutes_left == 0.0
