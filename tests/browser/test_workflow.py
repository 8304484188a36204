"""The scoring and exam workflow in Chromium, on a private copy of the demo study: the next
item after Submit opens at its top with a confirmation, a finished queue says so, and a
multi-turn exam task labels its stages "Stage k of n" in order and asks before finishing."""

import re
import sqlite3
from pathlib import Path

import pytest

from tests.browser.conftest import (
    ANSWER_BOX,
    answer_box_replaced,
    fresh,
    login,
    settled,
    submit_a_score,
    submitted_scores,
    wait_until,
)

pytestmark = pytest.mark.browser

MAIN = '[data-testid="stMain"]'


def _draft(home: Path) -> str | None:
    db = sqlite3.connect(home / "study.db")
    try:
        rows = db.execute("SELECT drafts FROM examattempt").fetchall()
        return " ".join(str(r[0]) for r in rows)
    finally:
        db.close()


def _count(home: Path, sql: str) -> int:
    db = sqlite3.connect(home / "study.db")
    try:
        return db.execute(sql).fetchone()[0]
    finally:
        db.close()


def _scroll_top(page) -> float:
    return page.evaluate(f"document.querySelector('{MAIN}').scrollTop")


def test_after_submit_the_next_item_opens_at_its_top_with_a_confirmation(
        browser, url, home) -> None:
    page = browser.new_page(viewport={"width": 1600, "height": 1000})
    login(page, url, "demo-expert1")
    page.get_by_role("heading", name="Rubric").wait_for(timeout=30_000)
    fresh(page).locator('[data-testid="stRadio"]').first.wait_for(timeout=30_000)  # lazy

    def scrolled_down() -> None:
        page.evaluate(f"document.querySelector('{MAIN}').scrollTo(0, 100000)")
        assert _scroll_top(page) > 0

    submit_a_score(page, lambda: submitted_scores(f"sqlite:///{home / 'study.db'}", "demo-expert1"),
                   scrolled_down)
    fresh(page).get_by_text("submitted.", exact=False).first.wait_for(timeout=30_000)
    wait_until(lambda: _scroll_top(page) == 0, "the next item scrolled to its top")
    page.close()


def test_a_finished_queue_says_so(browser, url) -> None:
    page = browser.new_page()
    login(page, url, "demo-expert2")  # the demo completes every other expert's queue
    page.get_by_text("your queue is complete").wait_for(timeout=30_000)
    page.close()


def test_an_exam_labels_stages_in_order_and_asks_before_finishing(browser, url, home) -> None:
    page = browser.new_page(viewport={"width": 1600, "height": 1000})
    login(page, url, "demo-physician")
    fresh(page).locator(ANSWER_BOX).first.wait_for(timeout=30_000)
    answers = "SELECT count(*) FROM stageanswer"
    multi_turn_seen = False
    for n in range(200):
        settled(page)
        frame = fresh(page).locator(ANSWER_BOX)
        if not frame.count():
            break
        before = _count(home, answers)
        typed = f"answer {n} -> plain"
        box = frame.first.content_frame
        box.locator("textarea").fill(typed)
        box.locator("textarea").press("Control+Enter")  # saves it as a draft at once
        wait_until(lambda: typed in (_draft(home) or ""), "the draft saved")  # noqa: B023
        settled(page)
        box.get_by_role("button", name="Record answer").click()
        wait_until(lambda: _count(home, answers) > before, "the answer recorded")  # noqa: B023
        wait_until(lambda: answer_box_replaced(page), "the next answer box (or none)")
        settled(page)
        main = page.locator(MAIN).inner_text()
        labels = [int(k) for k, n_stages in re.findall(r"Stage (\d+) of (\d+)", main)
                  if int(n_stages) > 1]
        if typed in main and labels:  # a stage of a multi-turn task: its answer shown as typed
            multi_turn_seen = True
            assert labels == sorted(labels) and labels[0] == 1 and len(labels) > 1, labels
            page.get_by_text("Answer recorded for task").first.wait_for(timeout=30_000)
    assert multi_turn_seen, f"no multi-turn task met in {n} answers"
    finished = "SELECT count(*) FROM examattempt WHERE finished_at IS NOT NULL"
    before = _count(home, finished)  # the demo's synthetic takers finished theirs
    fresh(page).get_by_role("button", name="Finish the exam").click()
    page.get_by_text("Finish the exam now?").wait_for(timeout=30_000)
    settled(page)
    assert _count(home, finished) == before  # asked first: nothing finished yet
    fresh(page).get_by_role("button", name="Yes, finish the exam").click()
    page.get_by_text("You have finished this exam").wait_for(timeout=30_000)
    assert _count(home, finished) == before + 1
    page.close()
