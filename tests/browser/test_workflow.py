"""The scoring and exam workflow in Chromium, on a private copy of the demo study: the next
item after Submit opens at its top with a confirmation, a finished queue says so, and a
multi-turn exam task labels its stages "Stage k of n" in order and asks before finishing."""

import re
import shutil
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.browser.conftest import login, streamlit_app

pytestmark = pytest.mark.browser

MAIN = '[data-testid="stMain"]'


@pytest.fixture(scope="module")
def home(demo_template: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("workflow-home")
    shutil.copytree(demo_template, home, dirs_exist_ok=True)
    return home


@pytest.fixture(scope="module")
def url(home: Path) -> Iterator[str]:
    with streamlit_app(home) as u:
        yield u


def _draft(home: Path) -> str | None:
    db = sqlite3.connect(home / "study.db")
    try:
        rows = db.execute("SELECT drafts FROM examattempt").fetchall()
        return " ".join(str(r[0]) for r in rows)
    finally:
        db.close()


def _progress(page) -> str | None:
    found = re.search(r"\d+ of \d+ tasks answered", page.locator(MAIN).inner_text())
    return found[0] if found else None


def _count(home: Path, sql: str) -> int:
    db = sqlite3.connect(home / "study.db")
    try:
        return db.execute(sql).fetchone()[0]
    finally:
        db.close()


def _until(condition, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} within {timeout} s")
        time.sleep(0.1)


def _scroll_top(page) -> float:
    return page.evaluate(f"document.querySelector('{MAIN}').scrollTop")


@pytest.mark.skip(reason="flaky on a loaded 2-core machine: passes alone, fails in the module run "
                  "(a transient confirmation missed; a stale duplicate button during a rerun); "
                  "to be made deterministic, see the issue 15 note")
def test_after_submit_the_next_item_opens_at_its_top_with_a_confirmation(browser, url) -> None:
    page = browser.new_page(viewport={"width": 1600, "height": 1000})
    login(page, url, "demo-expert1")
    page.get_by_role("heading", name="Rubric").wait_for(timeout=30_000)
    page.locator('[data-testid="stRadio"]').first.wait_for(timeout=30_000)  # radios load lazily
    for radio in page.locator('[data-testid="stRadio"]').all():
        radio.locator('[data-testid="stRadioOption"]').first.click()
        page.wait_for_timeout(300)
    page.evaluate(f"document.querySelector('{MAIN}').scrollTo(0, 100000)")
    assert _scroll_top(page) > 0
    page.get_by_role("button", name="Submit").click()
    page.get_by_text("submitted.", exact=False).first.wait_for(timeout=30_000)
    _until(lambda: _scroll_top(page) == 0, "the next item scrolled to its top")
    page.close()


def test_a_finished_queue_says_so(browser, url) -> None:
    page = browser.new_page()
    login(page, url, "demo-expert2")  # the demo completes every other expert's queue
    page.get_by_text("your queue is complete").wait_for(timeout=30_000)
    page.close()


@pytest.mark.skip(reason="flaky on a loaded 2-core machine: passes alone, fails in the module run "
                  "(a transient confirmation missed; a stale duplicate button during a rerun); "
                  "to be made deterministic, see the issue 15 note")
def test_an_exam_labels_stages_in_order_and_asks_before_finishing(browser, url, home) -> None:
    page = browser.new_page(viewport={"width": 1600, "height": 1000})
    login(page, url, "demo-physician")
    page.get_by_role("button", name="Record answer").wait_for(timeout=30_000)
    answers = "SELECT count(*) FROM stageanswer"
    multi_turn_seen = False
    for n in range(200):
        record = page.get_by_role("button", name="Record answer")
        finish = page.get_by_role("button", name="Finish the exam")
        record.or_(finish).first.wait_for(timeout=30_000)
        if finish.count() and not record.count():
            break
        before = _count(home, answers)
        _until(lambda: _progress(page), "the progress bar")
        progress = _progress(page)
        typed = f"answer {n} -> plain"
        box = page.locator("textarea").first
        box.fill(typed)
        box.press("Control+Enter")  # commits the text (and saves it as a draft)
        _until(lambda: typed in (_draft(home) or ""), "the draft saved")  # noqa: B023
        record.click()
        _until(lambda: _count(home, answers) > before, "the answer recorded")  # noqa: B023

        def redrawn() -> bool:
            main = page.locator(MAIN).inner_text()
            return typed in main or progress not in main  # noqa: B023

        _until(redrawn, "the page redrawn after the answer")
        main = page.locator(MAIN).inner_text()
        labels = [int(k) for k, _ in re.findall(r"Stage (\d+) of (\d+)", main)]
        if typed in main:  # a stage of a multi-turn task: its answer shown as typed
            multi_turn_seen = True
            assert labels == sorted(labels) and labels[0] == 1 and len(labels) > 1, labels
            assert "Answer recorded for task" in main
    assert multi_turn_seen, f"no multi-turn task met in {n} answers"
    finished = "SELECT count(*) FROM examattempt WHERE finished_at IS NOT NULL"
    before = _count(home, finished)  # the demo's synthetic takers finished theirs
    page.get_by_role("button", name="Finish the exam").click()
    page.get_by_text("Finish the exam now?").wait_for(timeout=30_000)
    assert _count(home, finished) == before  # asked first: nothing finished yet
    page.get_by_role("button", name="Yes, finish the exam").click()
    page.get_by_text("You have finished this exam").wait_for(timeout=30_000)
    assert _count(home, finished) == before + 1
    page.close()
