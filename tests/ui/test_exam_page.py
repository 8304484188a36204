"""/exam on the demo study: the answer box's drafts, recording through it, the stage it lands
on, and the review after finishing, checked on what the page sends to the browser."""

import json
from pathlib import Path

import pytest
from google.protobuf.text_encoding import CEscape
from sqlmodel import Session, select

from db.engine import session
from db.models import (
    Case,
    Exam,
    ExamAttempt,
    GraderScore,
    Mask,
    Response,
    StageAnswer,
    Task,
    User,
)
from db.study.exams import answer_stage, attempt_for, ensure_exam, exam_tasks, finish
from demo.study import DEMO_EXAM
from tests.apptest import make_user, page, page_payload
from tests.factories import make_study
from ui.auth import LoggedIn
from ui.exam.answer_box import typed


def _login(name: str) -> LoggedIn:
    with session() as s:
        u = s.exec(select(User).where(User.name == name)).one()
    return LoggedIn(id=u.id, name=u.name, role=u.role, demo=u.demo)


def _box(at) -> dict:
    """The arguments the answer box received (there is one on an exam page with a task open)."""
    [args] = [json.loads(e.proto.json_args) for e in at.get("component_instance")
              if e.proto.component_name.endswith("nmb_answer_box")]
    return args


def _box_key(at) -> str:
    """The session-state key of the open task's answer box."""
    [key] = [k for k in at.session_state
             if k.startswith("exam_answer_") and not k.endswith(("_stored", "_handled"))]
    return key


def _type(at, text: str, edit: int, record: int = 0):
    """What the box sends after a pause in typing (or a click of its button: `record`)."""
    at.session_state[_box_key(at)] = {"text": text, "edit": edit, "record": record}
    return at.run()


def _sent(text: str, payload: str) -> bool:
    """Whether `text` is in the page's payload (as written, or as the messages escape it)."""
    return text in payload or CEscape(text, as_utf8=True) in payload


def _drafts(user: LoggedIn) -> list[dict]:
    with session() as s:
        return [a.drafts for a in s.exec(select(ExamAttempt).where(ExamAttempt.user_id == user.id))]


def test_the_box_message_is_checked() -> None:
    assert typed({"text": "MS", "edit": 3}, max_chars=10).edit == 3
    assert typed({"text": "MS", "edit": 3, "record": 2}, max_chars=10).record == 2
    for forged in (None, "MS", {"text": 5, "edit": 1}, {"text": "MS"},
                   {"text": "MS", "edit": True}, {"text": "MS", "edit": -1},
                   {"text": "MS", "edit": 1, "record": "go"}, {"text": "x" * 11, "edit": 1}):
        assert typed(forged, max_chars=10) is None, forged


def test_text_typed_is_a_draft_a_new_session_finds(demo_study: Path) -> None:
    student = _login("demo-student")
    at = page("pages/exam.py", student).run()
    assert not at.exception
    assert not at.text_area  # the box is the component: Streamlit's text_area sends on blur only
    assert _box(at)["text"] == "" and _box(at)["action"] == "Record answer"
    _type(at, "Left MCA", 4)  # a pause in typing, no blur
    assert not at.exception
    assert {"Left MCA"} <= {t for d in _drafts(student) for t in (d or {}).values()}
    assert _box(at)["saved"] == 4  # the box may say "Draft saved"
    reopened = page("pages/exam.py", student).run()  # a reload: a new session
    assert _box(reopened)["text"] == "Left MCA"  # the box starts from the draft
    _type(at, "x" * 200_001, 5)  # longer than an answer may be: not stored
    assert {"Left MCA"} <= {t for d in _drafts(student) for t in (d or {}).values()}


def test_recording_through_the_box_lands_on_the_revealed_stage(demo_study: Path) -> None:
    student = _login("demo-student")
    at = page("pages/exam.py", student).run()
    tasks = at.selectbox(key="exam_task")
    with session() as s:  # a multi-turn task whose stages wait for no other task of its case
        exam = s.exec(select(Exam).where(Exam.name == DEMO_EXAM)).one()
        waits = [bool(t.waiting_for) for t in exam_tasks(
            s, attempt=attempt_for(s, exam_id=exam.id, user_id=student.id))]
    multi = next(i for i, label in enumerate(tasks.options) if "level 3" in label
                 and not waits[i])
    tasks.set_value(multi).run()
    _type(at, "   ", 1, record=1)  # an empty answer: refused, the button works again
    assert any("the answer is empty" in e.value for e in at.error)
    assert _box(at)["handled"] == 1
    with session() as s:
        assert s.exec(select(StageAnswer)
                      .join(ExamAttempt, ExamAttempt.id == StageAnswer.attempt_id)
                      .where(ExamAttempt.user_id == student.id)).all() == []
    _type(at, "Left MCA infarct.", 2, record=2)
    assert not at.exception
    assert not at.error
    payload = page_payload(at)
    assert "Left MCA infarct." in payload  # the answer shown as given at stage 1
    assert "scrollIntoView" in payload and '"Stage 2 of ' in payload  # lands on stage 2
    assert _box(at)["text"] == "" and _box(at)["label"].startswith("Your answer at stage 2")
    with session() as s:
        [answer] = s.exec(select(StageAnswer)
                          .join(ExamAttempt, ExamAttempt.id == StageAnswer.attempt_id)
                          .where(ExamAttempt.user_id == student.id)).all()
        assert (answer.stage, answer.text) == (0, "Left MCA infarct.")
    at.run()  # a later rerun (a click elsewhere) does not record again nor scroll again
    assert "scrollIntoView" not in page_payload(at)
    with session() as s:
        assert len(s.exec(select(StageAnswer)
                          .join(ExamAttempt, ExamAttempt.id == StageAnswer.attempt_id)
                          .where(ExamAttempt.user_id == student.id)).all()) == 1


def test_a_later_stage_waits_until_the_single_stage_task_of_its_case_is_answered(
        demo_study: Path) -> None:
    """The demo's case syn-02 has a differential task (syn-t03, one stage) and a multi-turn
    task (syn-t04) whose second stage reveals the serology, the third the CSF bands: neither
    may reach the page before syn-t03 is answered."""
    student = _login("demo-student")
    with session() as s:
        later = s.get(Task, "syn-t04").stages
        order = s.exec(select(Exam).where(Exam.name == DEMO_EXAM)).one().task_ids
    single, multi = order.index("syn-t03"), order.index("syn-t04")
    at = page("pages/exam.py", student).run()
    at.selectbox(key="exam_task").set_value(multi).run()
    _type(at, "Demyelination, probably MS.", 1, record=1)  # the first stage is free
    assert not at.exception and not at.error
    payload = page_payload(at)
    assert not [t for t in later if _sent(t, payload)]  # stage 2 held back
    assert at.selectbox(key="exam_task").value == single  # the page went to the one to answer
    assert any(f"revealed once task {single + 1}, about the same case" in m.value
               for m in at.caption)  # inline (no toast over the page: issue 44)
    at.selectbox(key="exam_task").set_value(multi).run()  # back: no box, a note, no stage
    assert not [t for t in later if _sent(t, page_payload(at))]
    assert not [e for e in at.get("component_instance")
                if e.proto.component_name.endswith("nmb_answer_box")]
    assert any("about the same case" in m.value for m in at.info)
    at.selectbox(key="exam_task").set_value(single).run()
    _type(at, "MS, NMOSD, MOGAD.", 1, record=1)
    assert not at.exception and not at.error
    at.selectbox(key="exam_task").set_value(multi).run()
    assert _sent(later[0], page_payload(at)) and not _sent(later[1], page_payload(at))
    assert _box(at)["label"].startswith("Your answer at stage 2")


def _finish(user: LoggedIn, exam: Exam) -> list[str]:
    """Answer every stage `exam` asks of `user` (none of a task answered in another exam)
    and finish; the answers given."""
    given = []
    with session() as s:
        attempt = attempt_for(s, exam_id=exam.id, user_id=user.id)
        for t in exam_tasks(s, attempt=attempt):
            for k in range(0 if t.done else t.n_stages):
                given.append(f"{user.name} says {t.task_id} stage {k}")
                answer_stage(s, attempt=attempt, task_id=t.task_id, text=given[-1])
        finish(s, attempt=attempt)
    return given


def _secrets() -> dict[str, list[str]]:
    """What no exam page may send, by kind (other takers' answers, model responses, grader
    rationales, masks), and the reference answers' texts."""
    with session() as s:
        truths = [v for c in s.exec(select(Case)) if c.ground_truth
                  for k, v in c.ground_truth.items() if k != "differential" and v]
        return {
            "references": truths,
            "answers": [a.text[:60] for a in s.exec(select(StageAnswer))],
            "responses": [r.text[:60] for r in s.exec(select(Response)) if r.source == "model"],
            "grader": [g.justification[:60] for g in s.exec(select(GraderScore))
                       if g.justification],
            "masks": [m.sha256 for m in s.exec(select(Mask))],
        }


def test_a_finished_exam_without_review_sends_nothing_of_the_references(demo_study: Path) -> None:
    student = _login("demo-student")
    with session() as s:
        exam = s.exec(select(Exam).where(Exam.name == DEMO_EXAM)).one()
        assert exam.review is False  # the demo's exam is a baseline study
    secrets = _secrets()
    assert secrets["references"] and secrets["answers"] and secrets["responses"]
    _finish(student, exam)
    at = page("pages/exam.py", student).run()
    assert not at.exception
    assert any("You have finished this exam" in m.value for m in at.success)
    payload = page_payload(at)
    assert "Review" not in payload and "Reference answer" not in payload
    for kind, texts in secrets.items():
        assert not [t for t in texts if _sent(t, payload)], kind


def test_a_finished_exam_with_review_shows_own_answers_beside_references(
        demo_study: Path) -> None:
    student = make_user("reviewer", "student")
    with session() as s:
        exam = ensure_exam(s, name="A practice exam", review=True)
        baseline = s.exec(select(Exam).where(Exam.name == DEMO_EXAM)).one()
        s.commit()
        cases = {c.case_id: c for c in s.exec(select(Case))}
        task_cases = {t: s.get(Task, t).case_id for t in exam.task_ids}
    secrets = _secrets()  # before this taker's answers: all of them belong to others
    given = _finish(student, exam)
    _finish(student, baseline)  # the demo exam holds the same tasks: it asks none of them
    at = page("pages/exam.py", student).run()  # the practice exam sorts first
    assert not at.exception
    assert at.selectbox[0].value == exam.id
    review = at.selectbox(key="exam_review_task")
    shown_references = 0
    for i, task_id in enumerate(exam.task_ids):
        review.set_value(i).run()
        assert not at.exception
        payload = page_payload(at)
        assert all(_sent(a, payload) for a in given if f" {task_id} " in a)  # every stage
        truth = cases[task_cases[task_id]].ground_truth
        if truth and truth.get("final_diagnosis"):
            assert _sent(truth["final_diagnosis"], payload)
            shown_references += 1
        else:
            assert "This case has no reference answer." in payload
        assert not at.get("component_instance")  # text only: no images, so no masks
        for kind in ("answers", "responses", "grader", "masks"):
            assert not [t for t in secrets[kind] if _sent(t, payload)], kind
        review = at.selectbox(key="exam_review_task")
    assert shown_references


def test_a_review_sends_no_reference_of_a_case_another_unfinished_exam_still_asks(
        demo_study: Path) -> None:
    """The demo's baseline exam holds every task: a practice exam with review holding the
    demo's syn-t03, finished first, must not hand its taker the reference answer of case
    syn-02, whose syn-t04 the baseline still asks; once the baseline is finished it may."""
    student = make_user("early", "student")
    with session() as s:
        exam = ensure_exam(s, name="A practice exam", task_ids=["syn-t03"], review=True)
        baseline = s.exec(select(Exam).where(Exam.name == DEMO_EXAM)).one()
        s.commit()
        truth = s.get(Case, s.get(Task, "syn-t03").case_id).ground_truth["final_diagnosis"]
    secrets = _secrets()
    _finish(student, exam)
    at = page("pages/exam.py", student).run()
    assert not at.exception and at.selectbox[0].value == exam.id
    payload = page_payload(at)
    assert not [t for t in secrets["references"] if _sent(t, payload)]
    assert "Withheld while a task of this case waits for you in an exam" in payload
    assert _sent(DEMO_EXAM, payload)
    _finish(student, baseline)
    payload = page_payload(page("pages/exam.py", student).run())
    assert _sent(truth, payload) and "Withheld" not in payload


def test_a_task_answered_in_another_exam_is_not_asked_again(demo_study: Path) -> None:
    """A taker who answered syn-t03 in a practice exam finds it in the baseline as answered
    there: a note, no answer box, none of their practice answers; the baseline is finished
    without it."""
    student = make_user("twice", "student")
    with session() as s:
        exam = ensure_exam(s, name="A practice exam", task_ids=["syn-t03"])
        baseline = s.exec(select(Exam).where(Exam.name == DEMO_EXAM)).one()
        s.commit()
    given = _finish(student, exam)
    at = page("pages/exam.py", student).run()
    at.selectbox[0].set_value(baseline.id).run()
    at.selectbox(key="exam_task").set_value(baseline.task_ids.index("syn-t03")).run()
    assert not at.exception
    assert any("Not asked here: in the exam “A practice exam” you answered this task" in m.value
               for m in at.info)
    assert not [e for e in at.get("component_instance")
                if e.proto.component_name.endswith("nmb_answer_box")]
    assert not [a for a in given if _sent(a, page_payload(at))]
    assert f"1 of {len(baseline.task_ids)} tasks answered" in page_payload(at)


def test_the_admin_form_opens_an_exam_with_review(demo_study: Path) -> None:
    at = page("pages/admin.py", _login("demo-admin"))
    at.query_params["section"] = "Exams"
    at.run()
    form = [c for c in at.checkbox if c.label == "Review after finishing"]
    assert form and form[0].value is False  # off unless asked for
    next(t for t in at.text_input if t.label == "Exam name").input("Practice")
    form[0].check()
    next(b for b in at.get("form_submit_button") if b.label == "Open exam").click().run()
    assert any("'Practice' is open with 12 tasks, review after finishing" in m.value
               for m in at.success), [m.value for m in at.success]
    with session() as s:
        assert s.exec(select(Exam).where(Exam.name == "Practice")).one().review is True


def test_each_exam_keeps_its_own_place_and_finish_question(sqlite_url: str) -> None:
    """A taker with two exams open: what the page remembers of one (the task open, a
    confirmation shown, the question "Finish the exam now?") does not carry over to the
    other, which opens at its own first unanswered task and asks its own question."""
    student = make_user("two-exams", "student")
    with session() as s:
        make_study(s, n_tasks=6, experts=1)
        first = ensure_exam(s, name="A first", task_ids=["task0", "task1", "task2"])
        second = ensure_exam(s, name="B second", task_ids=["task3", "task4", "task5"])
        s.commit()
        for exam in (first, second):  # every task of the first answered, one of the second
            attempt = attempt_for(s, exam_id=exam.id, user_id=student.id)
            for task_id in exam.task_ids[:3 if exam is first else 1]:
                answer_stage(s, attempt=attempt, task_id=task_id, text="MS")
                if s.get(Task, task_id).stages:
                    answer_stage(s, attempt=attempt, task_id=task_id, text="Still MS")
    at = page("pages/exam.py", student).run()
    assert at.selectbox[0].value == first.id
    at.selectbox(key="exam_task").set_value(2).run()
    next(b for b in at.button if b.label == "Finish the exam").click().run()
    assert [w.value for w in at.warning] == [
        "Finish the exam now? Your answers can no longer change afterwards."]
    at.selectbox[0].set_value(second.id).run()
    assert not at.exception
    assert at.selectbox(key="exam_task").value == 1  # its first unanswered task
    assert not at.warning and "Yes, finish the exam" not in [b.label for b in at.button]
    at.selectbox[0].set_value(first.id).run()  # back: the question is asked again, not kept
    assert not at.warning and "Finish the exam" in [b.label for b in at.button]
    with session() as s:
        assert s.exec(select(ExamAttempt.finished_at).where(
            ExamAttempt.user_id == student.id)).all() == [None, None]


def test_text_sent_as_the_taker_moves_to_another_task_or_exam_is_kept(sqlite_url: str) -> None:
    """The box sends its text when a click elsewhere takes the focus ("Next task", the task
    or exam picker): that text reaches the run that draws the other task, whose page never
    read the box it left. It must be kept as that task's draft (of its own exam) all the same."""
    student = make_user("mover", "student")
    with session() as s:
        make_study(s, n_tasks=3, experts=1)
        first = ensure_exam(s, name="A first", task_ids=["task0", "task1"])
        ensure_exam(s, name="B second", task_ids=["task2"])
        s.commit()
    at = page("pages/exam.py", student).run()
    at.session_state[_box_key(at)] = {"text": "typed, then Next task", "edit": 7, "record": 0}
    next(b for b in at.button if b.label == "Next task").click().run()
    assert not at.exception and at.selectbox(key="exam_task").value == 1
    at.session_state[_box_key(at)] = {"text": "typed, then the other exam", "edit": 3,
                                      "record": 0}
    at.selectbox[0].set_value(first.id + 1).run()
    assert not at.exception and not at.error
    with session() as s:
        drafts = {a.exam_id: a.drafts for a in s.exec(
            select(ExamAttempt).where(ExamAttempt.user_id == student.id))}
    assert drafts[first.id] == {"task0": "typed, then Next task",
                                "task1": "typed, then the other exam"}
    assert not drafts.get(first.id + 1)  # not the other exam's
    at.selectbox[0].set_value(first.id).run()  # back, at its first task: from its draft
    assert _box(at)["text"] == "typed, then Next task"


def test_a_task_in_two_exams_has_a_box_of_its_own_in_each(sqlite_url: str) -> None:
    """A task in two exams (a draft is not an answer, so both ask it): the box of one exam
    must not be the box of the other, or the browser keeps the frame, and its typed text,
    across the change of exam, and the next keystroke saves it as the other exam's draft."""
    student = make_user("both", "student")
    with session() as s:
        make_study(s, n_tasks=1, experts=1)
        first = ensure_exam(s, name="A first", task_ids=["task0"])
        second = ensure_exam(s, name="B second", task_ids=["task0"])
        s.commit()
    at = page("pages/exam.py", student).run()
    _type(at, "typed in the first exam", 6)
    box_in_first = at.get("component_instance")[0].proto.id
    at.selectbox[0].set_value(second.id).run()
    assert not at.exception
    assert at.get("component_instance")[0].proto.id != box_in_first
    assert _box(at)["text"] == "" and _box(at)["saved"] == 0
    _type(at, "typed in the second exam", 1)
    with session() as s:
        drafts = {a.exam_id: a.drafts for a in s.exec(
            select(ExamAttempt).where(ExamAttempt.user_id == student.id))}
    assert drafts == {first.id: {"task0": "typed in the first exam"},
                      second.id: {"task0": "typed in the second exam"}}


def test_each_finished_exam_opens_its_review_at_its_first_task(sqlite_url: str) -> None:
    student = make_user("two-reviews", "student")
    with session() as s:
        make_study(s, n_tasks=4, experts=1)
        for name, ids in (("A first", ["task0", "task3"]), ("B second", ["task1", "task2"])):
            exam = ensure_exam(s, name=name, task_ids=ids, review=True)
            s.commit()
            attempt = attempt_for(s, exam_id=exam.id, user_id=student.id)
            for task_id in ids:
                for _ in range(1 + len(s.get(Task, task_id).stages or [])):
                    answer_stage(s, attempt=attempt, task_id=task_id, text="MS")
            finish(s, attempt=attempt)
    at = page("pages/exam.py", student).run()
    at.selectbox(key="exam_review_task").set_value(1).run()
    at.selectbox[0].set_value(exam.id).run()  # the other exam's review
    assert not at.exception
    assert at.selectbox(key="exam_review_task").value == 0


def test_an_exam_opened_meanwhile_leaves_the_taker_where_they_are(sqlite_url: str) -> None:
    """An admin opens an exam whose name sorts first while a taker is in another: the taker's
    next run stays in their exam, at their task (before: the exam picker, its options
    changed, started over at the first exam by name, the new one)."""
    student = make_user("mid-exam", "student")
    with session() as s:
        make_study(s, n_tasks=3, experts=1)
        ensure_exam(s, name="B", task_ids=["task0"])
        mine = ensure_exam(s, name="C", task_ids=["task1", "task2"])
        s.commit()
    at = page("pages/exam.py", student).run()
    at.selectbox[0].set_value(mine.id).run()
    at.selectbox(key="exam_task").set_value(1).run()
    with session() as s:
        ensure_exam(s, name="A new", task_ids=["task2"])
        s.commit()
    at.run()  # the taker's next click
    assert not at.exception
    assert at.selectbox[0].options == ["A new", "B", "C"]
    assert at.selectbox[0].value == mine.id and at.selectbox(key="exam_task").value == 1


@pytest.mark.parametrize("database_url", [pytest.param("postgres", marks=pytest.mark.postgres)],
                         indirect=True)  # the interleaving is forced by a PostgreSQL row lock
def test_finishing_an_exam_another_tab_finishes_meanwhile_is_one_line(
        database_url: str) -> None:
    """Two tabs of one taker at "Finish the exam now?": the other tab's finish holds the
    attempt's row while this tab's click reads it unfinished, then commits. The click ends in
    one line, not a traceback (the `UserError` went uncaught). Forced by the row lock and
    `pg_stat_activity` (PostgreSQL); SQLite's readers cannot be held at that point."""
    from db.engine import engine_for
    from db.locks import for_update
    from db.models import utcnow
    from tests.db.interleave import run_threads, until_waiting

    student = make_user("two-tabs", "student")
    with session() as s:
        make_study(s, n_tasks=1, experts=1)
        exam = ensure_exam(s, name="Baseline", task_ids=["task0"])
        s.commit()
        answer_stage(s, attempt=attempt_for(s, exam_id=exam.id, user_id=student.id),
                     task_id="task0", text="MS")
    at = page("pages/exam.py", student).run()
    next(b for b in at.button if b.label == "Finish the exam").click().run()
    other = Session(engine_for(database_url), expire_on_commit=False)  # the other tab
    attempt = other.exec(for_update(select(ExamAttempt))).one()
    attempt.finished_at = utcnow()
    other.add(attempt)
    other.flush()

    def commit_once_this_tab_waits() -> None:
        until_waiting(database_url, 1, lambda: 0)
        other.commit()
        other.close()

    [tab] = run_threads(commit_once_this_tab_waits)
    next(b for b in at.button if b.label == "Yes, finish the exam").click().run()
    tab.join()
    assert not at.exception, at.exception
    assert [e.value for e in at.error] == ["this exam attempt is already finished"]


def test_linked_cases_of_one_patient_hold_the_later_stage_back_on_the_page(
        sqlite_url: str) -> None:
    """case0 (a one-stage task) and case2 (a multi-turn task whose second stage reveals a
    finding) describe one patient imported from two release files (`Case.patient`). The exam
    asks the multi-turn task first; its second stage must not reach the page until the other
    case's task is answered."""
    student = make_user("linked", "student")
    secret = "The CSF shows oligoclonal bands (synthetic)."
    with session() as s:
        make_study(s, n_tasks=3, experts=1)  # task2 (case2) is level 3
        for case_id in ("case0", "case2"):
            s.get(Case, case_id).patient = "neural-medbench:case_7"
        s.get(Task, "task2").stages = [secret]
        ensure_exam(s, name="linked", task_ids=["task2", "task0"])
        s.commit()
    at = page("pages/exam.py", student).run()
    assert at.selectbox(key="exam_task").value == 0  # the multi-turn task, first in order
    _type(at, "Demyelination.", 1, record=1)
    assert not at.exception and not at.error
    assert not _sent(secret, page_payload(at))
    assert at.selectbox(key="exam_task").value == 1  # sent on to the linked case's task
    at.selectbox(key="exam_task").set_value(0).run()  # back: still held
    assert not _sent(secret, page_payload(at))
    at.selectbox(key="exam_task").set_value(1).run()
    _type(at, "MS.", 1, record=1)
    at.selectbox(key="exam_task").set_value(0).run()
    assert _sent(secret, page_payload(at))
