"""The scoring and exam workflow in Chromium, on a private copy of the demo study: the next
item after Submit opens at its top with a confirmation, a finished queue says so, and a
multi-turn exam task labels its stages "Stage k of n" in order and asks before finishing."""

import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.browser.conftest import login, streamlit_app

pytestmark = pytest.mark.browser

MAIN = '[data-testid="stMain"]'


@pytest.fixture(scope="module")
def url(demo_template: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    home = tmp_path_factory.mktemp("workflow-home")
    shutil.copytree(demo_template, home, dirs_exist_ok=True)
    with streamlit_app(home) as u:
        yield u


def _until(condition, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} within {timeout} s")
        time.sleep(0.1)


def _scroll_top(page) -> float:
    return page.evaluate(f"document.querySelector('{MAIN}').scrollTop")


def test_after_submit_the_next_item_opens_at_its_top_with_a_confirmation(browser, url) -> None:
    page = browser.new_page(viewport={"width": 1600, "height": 1000})
    login(page, url, "demo-expert1")
    page.get_by_role("heading", name="Rubric").wait_for(timeout=30_000)
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
