"""Two tabs or sessions of one exam taker writing at once, on SQLite and PostgreSQL, with real
threads; the interleaving is forced by a lock held by the first writer (tests/db/interleave.py),
never by timing."""

import threading

import pytest
from sqlalchemy import text
from sqlmodel import Session, func, select

from db.engine import engine_for
from db.models import ExamAttempt, Response, StageAnswer
from db.study.exams import answer_stage, attempt_for, ensure_exam, finish, save_draft
from db.users import add_user
from errors import UserError
from tests.db.interleave import against, is_postgres, run_threads, until_waiting
from tests.factories import make_study

LOCK = "SELECT id FROM examattempt WHERE id = :id FOR UPDATE"


def _attempt(url: str) -> ExamAttempt:
    with Session(engine_for(url), expire_on_commit=False) as s:
        make_study(s, n_tasks=3)  # task2 is level 3: two stages
        student = add_user(s, name="stu", role="student", password="pw")
        exam = ensure_exam(s, name="baseline", task_ids=["task0", "task2"])
        s.commit()
        return attempt_for(s, exam_id=exam.id, user_id=student.id)


def _first_tab(url: str, attempt: ExamAttempt) -> Session:
    """A session holding the attempt's row lock (PostgreSQL) or the write lock (SQLite), as a
    tab in the middle of its write does."""
    s = Session(engine_for(url), expire_on_commit=False)
    if is_postgres(url):
        s.exec(text(LOCK), params={"id": attempt.id})
    else:
        s.exec(text("SELECT 1"))  # BEGIN IMMEDIATE
    return s


def _race(url: str, attempt: ExamAttempt, second, first) -> list[object]:
    """`second` runs while the first tab holds the lock; `first` then runs in the first tab's
    transaction (`interleave.against`). Returns what `second` returned or raised."""
    return [against(url, _first_tab(url, attempt), second, finish=first)]


def _answers(url: str, attempt: ExamAttempt) -> list[tuple[str, int, str]]:
    with Session(engine_for(url)) as s:
        return [(a.task_id, a.stage, a.text) for a in s.exec(
            select(StageAnswer).where(StageAnswer.attempt_id == attempt.id)
            .order_by(StageAnswer.task_id, StageAnswer.stage))]


def test_two_tabs_answering_one_stage_record_it_once(database_url: str) -> None:
    """Both tabs show stage 1 of a two-stage task; the slower one's text, written without
    what stage 2 reveals, is refused, not recorded as stage 2's answer (nor a traceback)."""
    attempt = _attempt(database_url)
    outcome = _race(database_url, attempt,
                    lambda s: answer_stage(s, attempt=attempt, task_id="task2",
                                           text="tab B", stage=0),
                    lambda s: answer_stage(s, attempt=attempt, task_id="task2",
                                           text="tab A", stage=0))
    assert len(outcome) == 1 and isinstance(outcome[0], UserError), outcome
    assert "stage 1 of task 'task2' was already answered" in str(outcome[0])
    assert _answers(database_url, attempt) == [("task2", 0, "tab A")]


@pytest.mark.parametrize("write", ["answer", "draft", "finish"])
def test_a_write_racing_the_takers_disable_is_refused(database_url: str, write: str) -> None:
    """An admin has disabled the taker and not committed yet; the taker's answer, draft or
    finish waits for it and is refused, nothing stored (before: stored, on SQLite too, since
    only the page checked the account)."""
    from db.users import disable_user

    attempt = _attempt(database_url)
    admin = Session(engine_for(database_url))
    disable_user(admin, name="stu")
    admin.flush()
    writes = {"answer": lambda s: answer_stage(s, attempt=attempt, task_id="task0", text="MS"),
              "draft": lambda s: save_draft(s, attempt=attempt, task_id="task0", text="MS"),
              "finish": lambda s: finish(s, attempt=attempt)}
    outcome = against(database_url, admin, writes[write])
    assert isinstance(outcome, UserError) and "disabled" in str(outcome), outcome
    with Session(engine_for(database_url)) as s:
        stored = s.get(ExamAttempt, attempt.id)
        assert (stored.drafts, stored.finished_at) == (None, None)
    assert _answers(database_url, attempt) == []


@pytest.mark.parametrize("database_url", [pytest.param("postgres", marks=pytest.mark.postgres)],
                         indirect=True)  # SQLite serialises whole transactions: no overtaking
def test_an_exam_opened_during_a_review_does_not_ask_its_case_after_it(
        database_url: str) -> None:
    """A review of a finished practice exam is about to hand the taker case2's reference
    answer; meanwhile an admin opens a baseline exam asking task2b (of case2) and the taker,
    in another tab, answers its first stage. Reviews and answers of one taker take turns: the
    answer waits for the review and is refused, and no stage of task2b is ever answered with
    the reference known (before, on PostgreSQL: the answer was recorded unseen by the review,
    which read the exams before the baseline existed, so task2b then went on after it)."""
    from sqlalchemy import event

    from db.models import Task
    from db.study.exams import review_tasks

    with Session(engine_for(database_url), expire_on_commit=False) as s:
        make_study(s, n_tasks=3)
        s.add(Task(task_id="task2b", case_id="case2", family="rationale", level=3,
                   prompt="Why?", stages=["More information."]))
        stu = add_user(s, name="stu", role="student", password="pw")
        practice = ensure_exam(s, name="practice", task_ids=["task2"], review=True)
        s.commit()
        done = attempt_for(s, exam_id=practice.id, user_id=stu.id)
        for text_ in ("first", "second"):
            answer_stage(s, attempt=done, task_id="task2", text=text_)
        finish(s, attempt=done)
    reached, release, shown, answered = (threading.Event(), threading.Event(), [], [])

    def reviewing() -> None:
        with Session(engine_for(database_url)) as s:
            event.listen(s, "before_commit", lambda _s: (reached.set(), release.wait(30)))
            shown.extend(t.reference for t in review_tasks(s, attempt=done))

    def answering(attempt: ExamAttempt) -> None:
        with Session(engine_for(database_url)) as s:
            try:
                answered.append(answer_stage(s, attempt=attempt, task_id="task2b",
                                             text="written before the review", stage=0))
            except UserError as e:
                answered.append(e)

    (review,) = run_threads(reviewing)
    assert reached.wait(30)  # the review has read what it decides on, not committed yet
    with Session(engine_for(database_url), expire_on_commit=False) as s:
        baseline = ensure_exam(s, name="baseline", task_ids=["task2b"])
        s.commit()
        attempt = attempt_for(s, exam_id=baseline.id, user_id=stu.id)
    (answer,) = run_threads(lambda: answering(attempt))
    until_waiting(database_url, 1, lambda: len(answered))
    release.set()
    review.join()
    answer.join()
    assert shown == [[("Final diagnosis", "MS")]]  # the reference was handed out
    with Session(engine_for(database_url)) as s, pytest.raises(UserError, match="reference"):
        answer_stage(s, attempt=attempt, task_id="task2b", text="written after the review")
    assert isinstance(answered[0], UserError), answered
    assert _answers(database_url, attempt) == []


def test_two_answers_to_the_next_stage_at_once_are_no_traceback(database_url: str) -> None:
    """Without a stage named (the next one), the second answer waits for the first and
    answers the stage after it (PostgreSQL raised IntegrityError before)."""
    attempt = _attempt(database_url)
    outcome = _race(database_url, attempt,
                    lambda s: answer_stage(s, attempt=attempt, task_id="task2", text="B"),
                    lambda s: answer_stage(s, attempt=attempt, task_id="task2", text="A"))
    assert outcome == [1]
    assert _answers(database_url, attempt) == [("task2", 0, "A"), ("task2", 1, "B")]


def test_an_answer_racing_the_finish_is_refused_not_left_out(database_url: str) -> None:
    """One tab finishes while another records an answer: the answer is either part of the
    finished attempt's responses or refused, never stored after the finish."""
    attempt = _attempt(database_url)
    with Session(engine_for(database_url)) as s:
        answer_stage(s, attempt=attempt, task_id="task0", text="done")
    outcome = _race(database_url, attempt,
                    lambda s: answer_stage(s, attempt=attempt, task_id="task2", text="late",
                                           stage=0),
                    lambda s: finish(s, attempt=attempt))
    assert len(outcome) == 1 and isinstance(outcome[0], UserError), outcome
    assert "finished" in str(outcome[0])
    assert _answers(database_url, attempt) == [("task0", 0, "done")]


def test_two_finishes_at_once_make_the_responses_once(database_url: str) -> None:
    attempt = _attempt(database_url)
    with Session(engine_for(database_url)) as s:
        answer_stage(s, attempt=attempt, task_id="task0", text="done")
    outcome = _race(database_url, attempt, lambda s: finish(s, attempt=attempt),
                    lambda s: finish(s, attempt=attempt))
    assert len(outcome) == 1 and isinstance(outcome[0], UserError), outcome
    assert "already finished" in str(outcome[0])
    with Session(engine_for(database_url)) as s:
        assert s.exec(select(func.count()).select_from(Response)
                      .where(Response.source == "student")).one() == 1


def test_drafts_of_two_tasks_saved_at_once_are_both_kept(database_url: str) -> None:
    """Two tabs, each on its own task, save a draft at once (a read-modify-write of one
    JSON column: PostgreSQL kept only the later one before)."""
    attempt = _attempt(database_url)
    outcome = _race(database_url, attempt,
                    lambda s: save_draft(s, attempt=attempt, task_id="task2", text="two"),
                    lambda s: save_draft(s, attempt=attempt, task_id="task0", text="zero"))
    assert outcome == [None]
    with Session(engine_for(database_url)) as s:
        assert s.get(ExamAttempt, attempt.id).drafts == {"task0": "zero", "task2": "two"}


def test_a_stale_tabs_draft_does_not_become_the_next_stages(database_url: str) -> None:
    attempt = _attempt(database_url)
    outcome = _race(database_url, attempt,
                    lambda s: save_draft(s, attempt=attempt, task_id="task2", text="stale",
                                         stage=0),
                    lambda s: answer_stage(s, attempt=attempt, task_id="task2", text="A",
                                           stage=0))
    assert len(outcome) == 1 and isinstance(outcome[0], UserError), outcome
    with Session(engine_for(database_url)) as s:
        assert not (s.get(ExamAttempt, attempt.id).drafts or {}).get("task2")


@pytest.mark.parametrize("tabs", [4])
def test_many_tabs_at_once_record_each_stage_once(database_url: str, tabs: int) -> None:
    """Tabs released together by a barrier, each answering the stage it shows (stage 1)."""
    attempt = _attempt(database_url)
    barrier = threading.Barrier(tabs)
    results: list[object] = []

    def tab(k: int) -> None:
        barrier.wait()
        with Session(engine_for(database_url)) as s:
            try:
                results.append(answer_stage(s, attempt=attempt, task_id="task2",
                                            text=f"tab {k}", stage=0))
            except Exception as e:  # noqa: BLE001 - the test reads it
                results.append(e)

    for t in run_threads(*(lambda k=k: tab(k) for k in range(tabs))):
        t.join()
    assert sorted(map(type, results), key=str).count(UserError) == tabs - 1
    assert [stage for _, stage, _ in _answers(database_url, attempt)] == [0]


def test_two_tabs_opening_the_exam_at_once_share_one_attempt(database_url: str) -> None:
    """The first tab's new attempt is not committed yet when the second looks for one
    (PostgreSQL: IntegrityError before)."""
    attempt = _attempt(database_url)
    with Session(engine_for(database_url)) as s:
        other = add_user(s, name="stu2", role="student", password="pw")
        s.commit()
        other_id = other.id
    tab = Session(engine_for(database_url), expire_on_commit=False)
    tab.add(ExamAttempt(exam_id=attempt.exam_id, user_id=other_id))
    tab.flush()  # the first tab's insert, holding the row's unique key (or SQLite's write lock)
    got = against(database_url, tab,
                  lambda s: attempt_for(s, exam_id=attempt.exam_id, user_id=other_id).id)
    with Session(engine_for(database_url)) as s:
        ids = s.exec(select(ExamAttempt.id).where(ExamAttempt.user_id == other_id)).all()
    assert [got] == ids and len(ids) == 1


def test_two_admins_opening_one_exam_name_at_once(database_url: str) -> None:
    """Admin A's new exam is not committed when admin B opens the same name with other
    settings: B's is refused in one line once A's is in (PostgreSQL: IntegrityError)."""
    with Session(engine_for(database_url)) as s:
        make_study(s, n_tasks=3)
        s.commit()
    first = Session(engine_for(database_url))
    ensure_exam(first, name="baseline", task_ids=["task0"])  # flushed, not committed

    def second(s: Session) -> str:
        ensure_exam(s, name="baseline", task_ids=["task0", "task1"])
        s.commit()
        return "opened"

    outcome = against(database_url, first, second)
    assert isinstance(outcome, UserError) and "exists with 1 other tasks" in str(outcome)
