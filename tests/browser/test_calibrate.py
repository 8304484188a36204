"""/calibrate in Chromium on a private copy of the demo study: the report's Part starts at dev,
and the held-out look is spent only after a confirmation that names the config."""

import re
import sqlite3
from pathlib import Path

import pytest

from tests.browser.conftest import login, settled

pytestmark = pytest.mark.browser


def _looks(home: Path) -> list[tuple]:
    db = sqlite3.connect(home / "study.db")
    try:
        return db.execute("SELECT config_id, passed FROM heldoutlook").fetchall()
    finally:
        db.close()


def test_the_held_out_look_needs_its_confirmation(browser, url, home) -> None:
    page = browser.new_page(viewport={"width": 1600, "height": 1200})
    login(page, url, "demo-admin")
    page.get_by_role("link", name="Grader calibration").click()
    page.get_by_role("tab", name="Calibration report").click(timeout=60_000)
    settled(page, timeout=120_000)
    part = page.get_by_role("combobox", name="Part", exact=True)
    part.wait_for(timeout=60_000)
    assert part.input_value() == "dev"  # the default never spends the look
    page.locator('[data-testid="stSelectbox"]').filter(has=part).get_by_role(
        "button", name="Open").click()
    page.get_by_role("option", name="heldout", exact=True).click(timeout=60_000)
    settled(page, timeout=120_000)
    page.get_by_role("button", name="Take the held-out look").click(timeout=60_000)
    warning = page.get_by_text("This spends the one held-out look of config 1")
    warning.wait_for(timeout=60_000)
    settled(page, timeout=120_000)
    assert _looks(home) == []  # asked, not spent
    page.get_by_role("button", name="Cancel").click()
    settled(page, timeout=120_000)
    assert not warning.count() and _looks(home) == []
    page.get_by_role("button", name="Take the held-out look").click(timeout=60_000)
    page.get_by_role("button", name="Yes, take the held-out look").click(timeout=60_000)
    page.get_by_text(re.compile(r"gate (passed|failed) · held-out look")).wait_for(
        timeout=240_000)
    settled(page, timeout=240_000)
    assert [config for config, _ in _looks(home)] == [1]
    page.close()
