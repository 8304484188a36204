"""End to end in Chromium: login (kept across a reload until logout), blinding on the scoring
page, drafts surviving a closed browser, and typed URLs that a role may not open."""

import sqlite3
import time
from pathlib import Path

import pytest

from demo.bundle import MODELS
from tests.browser.conftest import login, login_cookie, settled, wait_until

pytestmark = pytest.mark.browser


def test_login_page_is_served(browser, app_url: str) -> None:
    page = browser.new_page()
    page.goto(app_url)
    page.get_by_role("textbox", name="Username").wait_for(timeout=30_000)
    page.get_by_role("textbox", name="Password").wait_for(timeout=30_000)
    page.get_by_role("button", name="Log in").wait_for(timeout=30_000)
    page.close()


def test_a_password_login_survives_a_reload_until_logout(browser, app_url: str) -> None:
    ctx = browser.new_context()
    page = ctx.new_page()
    login(page, app_url, "demo-student")
    exam = page.get_by_role("heading", name="Exam")
    exam.wait_for(timeout=30_000)
    wait_until(lambda: login_cookie(ctx), "no login cookie set")
    token = login_cookie(ctx)
    page.reload()  # a new Streamlit session
    exam.wait_for(timeout=30_000)
    assert page.get_by_role("textbox", name="Password").count() == 0
    settled(page)
    page.locator('[data-testid="stExpandSidebarButton"]').click()  # /exam starts it folded
    with page.expect_navigation(url=f"{app_url}/"):  # a plain navigation, no script run
        with page.expect_request(f"{app_url}/nmb/logout") as posted:
            page.get_by_role("button", name="Log out").click()
    assert posted.value.method == "POST"
    page.get_by_role("textbox", name="Password").wait_for(timeout=30_000)
    wait_until(lambda: not login_cookie(ctx), "the login cookie not cleared")
    ctx.add_cookies([{"name": "nmb_login", "value": token, "url": app_url}])  # a copy kept
    page.reload()
    page.get_by_role("textbox", name="Password").wait_for(timeout=30_000)
    assert exam.count() == 0  # logout ended the token on the server
    ctx.close()


def _wait_for_draft(home: Path, text: str, timeout: float = 30.0) -> None:
    """Poll the app's database until a draft holding `text` is saved."""
    db = sqlite3.connect(home / "study.db")
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            rows = db.execute("SELECT draft FROM expertscore WHERE draft IS NOT NULL").fetchall()
            if any(text in (row[0] or "") for row in rows):
                return
            time.sleep(0.1)
    finally:
        db.close()
    raise AssertionError(f"no draft with {text!r} saved within {timeout} s")


_COLOURS = """button => {
    const rgb = c => c.match(/[\\d.]+/g).map(Number);
    let behind = button;
    while (behind && rgb(getComputedStyle(behind).backgroundColor)[3] === 0) {
        behind = behind.parentElement;
    }
    return [rgb(getComputedStyle(button).color), rgb(getComputedStyle(behind).backgroundColor)];
}"""


def _contrast(a: list[float], b: list[float]) -> float:
    """WCAG 2.1's contrast ratio of two sRGB colours (relative luminance, 1.4.3)."""
    def luminance(c: list[float]) -> float:
        lin = [v / 255 / 12.92 if v / 255 <= 0.04045 else ((v / 255 + 0.055) / 1.055) ** 2.4
               for v in c[:3]]
        return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_page_reads_in_the_systems_light_and_dark_scheme(browser, app_url: str,
                                                      scheme: str) -> None:
    """Streamlit follows the system's colour scheme unless a theme is set; the viewers and
    the exam's answer box are drawn for the light one, so `.streamlit/config.toml` pins it:
    the page is light in both schemes. The Log out form, drawn by the app, reads against what
    is behind it (WCAG AA, 4.5:1); in the dark scheme it was light text on white (1.19:1)."""
    ctx = browser.new_context(color_scheme=scheme)
    page = ctx.new_page()
    login(page, app_url, "demo-admin")
    app = page.locator('[data-testid="stApp"]')
    assert app.evaluate("e => getComputedStyle(e).backgroundColor") == "rgb(255, 255, 255)"
    text, background = page.get_by_role("button", name="Log out").evaluate(_COLOURS)
    assert _contrast(text, background) >= 4.5, (scheme, text, background)
    ctx.close()


def test_expert_draft_survives_closed_browser_and_page_is_blind(browser, app_url: str,
                                                                demo_home: Path) -> None:
    ctx = browser.new_context()
    page = ctx.new_page()
    login(page, app_url, "demo-expert1")
    page.get_by_role("heading", name="Score rationales").wait_for(timeout=30_000)
    page.get_by_text("Rubric").first.wait_for(timeout=30_000)
    html = page.content()
    for model in MODELS:
        assert model not in html
    box = page.locator("textarea").last
    box.fill("draft from the browser test")
    box.press("Tab")  # the text area commits on blur: on_change saves the draft
    _wait_for_draft(demo_home, "draft from the browser test")
    ctx.close()  # the browser is closed mid-item

    ctx = browser.new_context()
    page = ctx.new_page()
    login(page, app_url, "demo-expert1")
    page.get_by_role("heading", name="Score rationales").wait_for(timeout=30_000)
    box = page.locator("textarea").last
    box.wait_for(timeout=30_000)
    assert box.input_value() == "draft from the browser test"
    ctx.close()


def _no_page_not_found(page) -> None:
    """Streamlit's "Page not found" dialog is absent (it would block every click)."""
    page.wait_for_timeout(1500)  # the dialog, if any, opens right after the first run
    assert page.get_by_text("Page not found").count() == 0


def test_typed_url_of_another_role_shows_a_refusal(browser, app_url: str) -> None:
    ctx = browser.new_context()
    page = ctx.new_page()
    login(page, app_url, "demo-student")
    wait_until(lambda: login_cookie(ctx), "no login cookie set")
    page.goto(app_url + "/admin")
    page.get_by_text("You do not have access to this page.").wait_for(timeout=30_000)
    _no_page_not_found(page)
    assert page.get_by_role("heading", name="Data and users").count() == 0
    ctx.close()


def test_reload_and_typed_url_land_on_the_page_and_a_deep_link_survives_login(
        browser, app_url: str) -> None:
    ctx = browser.new_context()
    page = ctx.new_page()
    page.goto(app_url + "/calibrate")  # a deep link, logged out: the login form at that address
    page.get_by_role("textbox", name="Username").fill("demo-admin")
    page.get_by_role("textbox", name="Password").fill("demo")
    page.get_by_role("button", name="Log in").click()
    heading = page.get_by_role("heading", name="Grader calibration")
    heading.wait_for(timeout=30_000)
    _no_page_not_found(page)
    assert page.url.endswith("/calibrate")
    wait_until(lambda: login_cookie(ctx), "no login cookie set")
    page.reload()
    heading.wait_for(timeout=30_000)
    _no_page_not_found(page)
    page.goto(app_url + "/admin")  # typed
    page.get_by_role("heading", name="Data and users").wait_for(timeout=30_000)
    _no_page_not_found(page)
    ctx.close()
