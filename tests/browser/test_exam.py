"""/exam in Chromium at 1280 x 800, on a private copy of the demo study: an answer typed and
not left survives a reload; recording a stage lands on the stage it reveals; a finished exam
shows one's answers beside the reference answers only where the exam allows it, and nothing
of a reference reaches the browser where it does not."""

import sqlite3
from pathlib import Path

import pytest
from sqlmodel import Session, select

from db.engine import engine_for, upgrade
from db.models import Case, Exam, Task, User
from db.study.exams import answer_stage, attempt_for, ensure_exam, exam_tasks, finish
from db.users import add_user
from demo.study import DEMO_EXAM
from tests.browser.conftest import (
    ANSWER_BOX,
    answer_box_replaced,
    fresh,
    login,
    settled,
    wait_until,
)

pytestmark = pytest.mark.browser

VIEWPORT = {"width": 1280, "height": 800}
PASSWORD = "exam-browser-test-password"


def _db(home: Path) -> Session:
    url = f"sqlite:///{home / 'study.db'}"
    upgrade(url)
    return Session(engine_for(url), expire_on_commit=False)


def _sql(home: Path, sql: str, *args) -> list[tuple]:
    db = sqlite3.connect(home / "study.db")
    try:
        return db.execute(sql, args).fetchall()
    finally:
        db.close()


def _drafts(home: Path, user: str) -> str:
    return " ".join(str(d) for (d,) in _sql(
        home, 'SELECT a.drafts FROM examattempt a JOIN "user" u ON u.id = a.user_id '
        "WHERE u.name = ?", user))


def _answers(home: Path, user: str) -> list[str]:
    return [t for (t,) in _sql(
        home, "SELECT s.text FROM stageanswer s JOIN examattempt a ON a.id = s.attempt_id "
        'JOIN "user" u ON u.id = a.user_id WHERE u.name = ? ORDER BY s.id', user)]


def _box(page):
    """The open task's answer box (the component's frame of the current run)."""
    frame = fresh(page).locator(ANSWER_BOX).first
    frame.wait_for(timeout=30_000)
    return frame.content_frame


def _taker(home: Path, name: str) -> None:
    with _db(home) as s:
        add_user(s, name=name, role="student", password=PASSWORD)
        s.commit()


def test_a_typed_answer_survives_a_reload_without_blur(browser, url, home) -> None:
    _taker(home, "exam-reload")
    page = browser.new_page(viewport=VIEWPORT)
    login(page, url, "exam-reload", PASSWORD)
    settled(page)
    box = _box(page).locator("textarea")
    box.click()
    typed = "Left MCA territory infarct <b>not bold</b>"
    page.keyboard.type(typed, delay=20)  # typing, then a pause; the box keeps the focus
    wait_until(lambda: typed in _drafts(home, "exam-reload"), "the draft saved as typed")
    assert _box(page).locator("textarea").evaluate("el => el === document.activeElement")
    _box(page).get_by_text("Draft saved").wait_for(timeout=30_000)
    page.reload()
    settled(page)
    wait_until(lambda: _box(page).locator("textarea").input_value() == typed,
               "the draft back in the box after the reload")
    assert _box(page).locator("b").count() == 0  # text, never markup
    page.close()


def _record(page, home: Path, user: str, text: str) -> None:
    """Type `text` and click Record answer at once (no pause, no blur first)."""
    before = len(_answers(home, user))
    box = _box(page)
    box.locator("textarea").fill(text)
    box.get_by_role("button", name="Record answer").click()
    wait_until(lambda: len(_answers(home, user)) > before, "the answer recorded")
    assert _answers(home, user)[-1] == text  # exactly what the box held at the click
    wait_until(lambda: answer_box_replaced(page), "the next answer box")
    settled(page)


def test_after_recording_a_stage_the_revealed_stage_is_in_view(browser, url, home) -> None:
    _taker(home, "exam-stages")
    with _db(home) as s:
        exam = s.exec(select(Exam).where(Exam.name == DEMO_EXAM)).one()
        level3 = [t for t in exam.task_ids if s.get(Task, t).level == 3]
        n_stages = 1 + len(s.get(Task, level3[0]).stages)
        taker = s.exec(select(User).where(User.name == "exam-stages")).one()
        attempt = attempt_for(s, exam_id=exam.id, user_id=taker.id)
        first = next(t for t in exam_tasks(s, attempt=attempt) if t.task_id == level3[0])
        for position in first.waiting_for:  # its stages wait for the case's other tasks
            answer_stage(s, attempt=attempt, task_id=exam.task_ids[position - 1], text="done")
    page = browser.new_page(viewport=VIEWPORT)
    login(page, url, "exam-stages", PASSWORD)
    settled(page)
    picker = fresh(page).get_by_role("combobox", name="Task")
    picker.click()
    page.get_by_role("option", name="level 3").first.click()  # the first multi-turn task
    settled(page)
    for k in range(1, n_stages):
        _record(page, home, "exam-stages", f"stage {k} answer")
        heading = fresh(page).get_by_text(f"Stage {k + 1} of {n_stages}", exact=True)
        heading.wait_for(timeout=30_000)

        def in_view(heading=heading) -> bool:  # below Streamlit's header, above the bottom
            b = heading.bounding_box()
            return b is not None and 40 <= b["y"] and b["y"] + b["height"] <= 800

        # (the page is one screen since issue 44: it scrolls to the stage only where the stage
        # is below the window)
        wait_until(in_view, f"stage {k + 1} of {n_stages} in view after recording stage {k}")
        stage_text = fresh(page).get_by_text("Information revealed at this stage").last
        b = stage_text.bounding_box()
        assert b is not None and b["y"] + b["height"] <= VIEWPORT["height"], b
        box = fresh(page).locator(ANSWER_BOX).first.bounding_box()  # its answer box begins in view
        assert box is not None and box["y"] < VIEWPORT["height"], box
    page.close()


def _finished(home: Path, name: str, *, review: bool) -> tuple[list[str], list[str]]:
    """A taker who finished an exam (with or without review) of one task of each family and
    level 3 included; (their answers, the reference texts of the exam's cases)."""
    exam_name = f"{name} exam"
    with _db(home) as s:
        tasks = [t.task_id for t in s.exec(select(Task).order_by(Task.task_id))][:3]
        tasks += [t for t in s.exec(select(Task.task_id).where(Task.level == 3))][:1]
        exam = ensure_exam(s, name=exam_name, task_ids=list(dict.fromkeys(tasks)), review=review)
        user = add_user(s, name=name, role="student", password=PASSWORD)
        s.commit()
        baseline = s.exec(select(Exam).where(Exam.name == DEMO_EXAM)).one()
        # the demo exam holds the same cases: a review shows their references once it is done
        # (it asks none of the tasks answered here: a task is answered once)
        given: list[str] = []
        for taken in (exam, baseline) if review else (exam,):
            attempt = attempt_for(s, exam_id=taken.id, user_id=user.id)
            for t in exam_tasks(s, attempt=attempt):
                for k in range(0 if t.done else t.n_stages):
                    text = f"{name} answered {t.task_id} at stage {k + 1}"
                    given += [text] if taken is exam else []
                    answer_stage(s, attempt=attempt, task_id=t.task_id, text=text)
            finish(s, attempt=attempt)
        truths = []
        for task_id in exam.task_ids:
            truth = s.get(Case, s.get(Task, task_id).case_id).ground_truth or {}
            truths += [truth["final_diagnosis"], truth.get("lesion", ""), truth.get("reasoning", ""),
                       *truth.get("differential", [])]
        return given, [t for t in truths if t]


def _open_exam(page, name: str) -> None:
    picker = fresh(page).get_by_role("combobox", name="Exam")
    picker.click()
    page.get_by_role("option", name=name).click()
    settled(page)


def test_with_review_the_finished_exam_shows_answers_beside_references(
        browser, url, home) -> None:
    given, truths = _finished(home, "exam-review", review=True)
    page = browser.new_page(viewport=VIEWPORT)
    login(page, url, "exam-review", PASSWORD)
    settled(page)
    _open_exam(page, "exam-review exam")
    page.get_by_text("You have finished this exam").wait_for(timeout=30_000)
    fresh(page).get_by_role("heading", name="Review").wait_for(timeout=30_000)
    main = page.locator('[data-testid="stMain"]')
    first_task = [a for a in given if a.startswith(given[0].rsplit(" at stage", 1)[0])]
    for answer in first_task:
        fresh(page).get_by_text(answer, exact=True).wait_for(timeout=30_000)
    yours = fresh(page).get_by_text("Your answers", exact=True).bounding_box()
    reference = fresh(page).get_by_text("Reference answer", exact=True).bounding_box()
    assert reference["x"] > yours["x"] + 300 and abs(reference["y"] - yours["y"]) < 40  # beside
    assert any(t in main.inner_text() for t in truths)
    page.close()


def test_without_review_nothing_of_the_reference_reaches_the_page(browser, url, home) -> None:
    given, truths = _finished(home, "exam-blind", review=False)
    received: list[bytes] = []
    page = browser.new_page(viewport=VIEWPORT)

    def listen(ws) -> None:
        ws.on("framereceived", lambda payload: received.append(
            payload if isinstance(payload, bytes) else payload.encode()))

    page.on("websocket", listen)
    login(page, url, "exam-blind", PASSWORD)
    settled(page)
    _open_exam(page, "exam-blind exam")
    page.get_by_text("You have finished this exam").wait_for(timeout=30_000)
    settled(page)
    assert received, "the page's messages were seen"
    sent = b"".join(received)
    assert b"You have finished this exam" in sent  # the messages are read as the page gets them
    html = page.content()
    assert "Reference answer" not in html and fresh(page).get_by_role("heading",
                                                                      name="Review").count() == 0
    for text in truths:
        assert text.encode() not in sent and text not in html, text
    page.close()


def test_no_case_or_task_id_reaches_the_exam_page(browser, url, home) -> None:
    """The bundle's ids (which may name the diagnosis) are in no message and no element of
    the page: keys are opaque (`ui.element_keys`)."""
    with _db(home) as s:
        ids = [c for c in s.exec(select(Case.case_id))] + [t for t in s.exec(select(Task.task_id))]
    _taker(home, "exam-ids")
    received: list[bytes] = []
    page = browser.new_page(viewport=VIEWPORT)
    page.on("websocket", lambda ws: ws.on("framereceived", lambda payload: received.append(
        payload if isinstance(payload, bytes) else payload.encode())))
    login(page, url, "exam-ids", PASSWORD)
    settled(page)
    _box(page)  # the first task, with its images and answer box, is drawn
    sent, html = b"".join(received), page.content()
    assert b"Your answer" in sent
    for x in ids:
        assert x.encode() not in sent and x not in html, x
    page.close()


def test_an_answer_typed_just_before_moving_to_another_task_is_kept(browser, url, home) -> None:
    """Typing, then at once "Next task" (or another task picked): the box sends its text as
    the click takes the focus away, and the page moves on in the same moment; the draft of
    the task left must be kept all the same."""
    _taker(home, "exam-move-on")
    page = browser.new_page(viewport=VIEWPORT)
    login(page, url, "exam-move-on", PASSWORD)
    settled(page)
    typed = "Right PCA infarct, typed just before moving on"
    box = _box(page).locator("textarea")
    box.click()
    page.keyboard.type(typed, delay=5)
    fresh(page).get_by_role("button", name="Next task").click()  # no pause after typing
    settled(page)
    wait_until(lambda: typed in _drafts(home, "exam-move-on"), "the draft of the task left")
    page.close()
