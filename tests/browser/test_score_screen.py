"""/score at 1280 x 800 in Chromium (software WebGL2) on a private copy of the demo study: the
viewer's tiles are fully in view without scrolling and at least 400 px high each, the viewer
opens at a case's key slices, and a single-turn item is scored with the keyboard alone."""

from __future__ import annotations

import json
import shutil
import sqlite3
import time
from pathlib import Path

import pytest

from tests.browser.conftest import (
    CHROMIUM,
    HEADER_OVERFLOW,
    SOFTWARE_WEBGL,
    fresh,
    login,
    settled,
    viewer_ready,
    wait_until,
)
from tests.services import require

pytestmark = pytest.mark.browser

RATER = "demo-expert1"
RUBRIC = ".st-key-nmb-rubric"
KEYED_CASE = "syn-05"  # the demo case with key slices (demo.bundle.KEY_POINTS)


@pytest.fixture(scope="module")
def webgl_browser():
    require(Path(CHROMIUM).exists() or shutil.which("chromium") is not None,
            f"Chromium not found at {CHROMIUM} (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=SOFTWARE_WEBGL)
        yield b
        b.close()


def _rows(home: Path, sql: str, *args) -> list[tuple]:
    db = sqlite3.connect(home / "study.db")
    try:
        return db.execute(sql, args).fetchall()
    finally:
        db.close()


def _queue(home: Path) -> list[tuple]:
    """(assignment id, position, status, level, case) of the rater's queue, in order."""
    return _rows(home, "SELECT a.id, a.position, e.status, t.level, t.case_id FROM assignment a "
                 "JOIN user u ON u.id = a.rater_id JOIN response r ON r.response_id = "
                 "a.response_id JOIN task t ON t.task_id = r.task_id LEFT JOIN expertscore e ON "
                 "e.assignment_id = a.id WHERE u.name = ? ORDER BY a.position", RATER)


def _open(page, position: int) -> None:
    """Go to a queue position through the header's search box (then Enter)."""
    box = fresh(page).get_by_placeholder("Go to: position or code")
    box.fill(str(position + 1))
    box.press("Enter")
    settled(page)


def test_tiles_are_in_view_and_tall_and_the_viewer_opens_at_key_slices(
        webgl_browser, url, home) -> None:
    page = webgl_browser.new_page(viewport={"width": 1280, "height": 800})
    login(page, url, RATER)
    page.get_by_role("heading", name="Score rationales").wait_for(timeout=30_000)
    settled(page)
    frame, state = viewer_ready(page)
    assert page.evaluate("document.querySelector('[data-testid=\"stMain\"]').scrollTop") == 0
    assert page.evaluate(HEADER_OVERFLOW) == []  # the header line cuts no text
    iframe = frame.frame_element().bounding_box()
    tiles = frame.evaluate("() => Array.from(document.querySelectorAll('.tile:not([hidden])'))"
                           ".map((t) => { const r = t.getBoundingClientRect();"
                           " return [r.left, r.top, r.width, r.height]; })")
    assert len(tiles) == len(state["tiles"]) >= 2
    for left, top, width, height in tiles:  # fully in the window, unscrolled
        assert iframe["x"] + left >= 0 and iframe["y"] + top >= 0
        assert iframe["x"] + left + width <= 1280 + 0.5, (iframe, left, width)
        assert iframe["y"] + top + height <= 800 + 0.5, (iframe, top, height)
        assert height >= 400, tiles
    keyed = next(row for row in _queue(home) if row[4] == KEYED_CASE)
    _open(page, keyed[1])
    old = frame
    deadline = time.monotonic() + 60
    while True:  # the case's own viewer (another case: its series)
        frame, state = viewer_ready(page)
        if state["keys"]:
            break
        assert time.monotonic() < deadline, "no key slices offered"
        page.wait_for_timeout(300)
    (raw,) = _rows(home, "SELECT key_slices FROM \"case\" WHERE case_id = ?", KEYED_CASE)[0]
    key_slices = json.loads(raw)
    assert [k["label"].split()[:2] for k in state["keys"]] == [
        [k["series"], k["plane"]] for k in key_slices]
    assert state["plane"] == key_slices[0]["plane"]
    tiles = {t["label"]: t for t in state["tiles"]}
    # the crosshair stands on every key slice's index along its plane's normal (RAS+ grid)
    normal = {"sagittal": 0, "coronal": 1, "axial": 2}
    for k in key_slices:
        assert tiles[k["series"]]["vox"][normal[k["plane"]]] == k["index"], (k, tiles)
    # one frame for every item: the same frame, its NiiVue instances reused (nothing compiled)
    assert frame == old and state["tiles"][0]["timings"]["attach"] == 0, state["tiles"][0]
    page.close()


def test_a_single_turn_item_is_scored_with_the_keyboard_alone(webgl_browser, url, home) -> None:
    page = webgl_browser.new_page(viewport={"width": 1280, "height": 800})
    login(page, url, RATER)
    page.get_by_role("heading", name="Score rationales").wait_for(timeout=30_000)
    settled(page)
    queue = _queue(home)
    aid, position = next((a, p) for a, p, status, level, _ in queue
                         if status != "submitted" and level < 3)
    _open(page, position)  # through the search box: typed, then Enter
    page.locator("body").press("Escape")  # the focus leaves the search box
    page.evaluate("document.activeElement && document.activeElement.blur()")
    groups = page.locator(f"{RUBRIC} [data-testid='stRadio']")
    groups.first.wait_for(timeout=30_000)
    page.locator(f"{RUBRIC} [data-nmb-current='true']").wait_for(timeout=30_000)  # keys ready
    n = groups.count()
    criteria = n - 2  # then the diagnosis judgment and the confidence
    levels = [(3 + k) % 5 for k in range(criteria)]
    for level in levels:
        page.keyboard.press(str(level))
        settled(page)
    page.keyboard.press("n")  # the diagnosis: No
    settled(page)
    page.keyboard.press("4")  # confidence
    settled(page)
    frame, _ = viewer_ready(page)
    frame.evaluate("() => { window.nmbKept = true; }")
    page.keyboard.press("Control+Enter")  # Submit
    wait_until(lambda: _rows(home, "SELECT status FROM expertscore WHERE assignment_id = ?",
                             aid) == [("submitted",)], "the item submitted")
    (criteria_json, correct, confidence), = _rows(
        home, "SELECT criteria, correct_diagnosis, confidence FROM expertscore "
        "WHERE assignment_id = ?", aid)
    assert list(json.loads(criteria_json).values()) == levels
    assert correct == 0 and confidence == 4
    fresh(page).get_by_text("submitted.", exact=False).first.wait_for(timeout=30_000)
    # the next item is shown in the same viewer frame: the confirmation above it moved nothing
    assert viewer_ready(page)[0].evaluate("() => window.nmbKept === true")
    page.close()


def _grey(frame, index: int = 0):
    import io

    import numpy as np
    from PIL import Image

    png = frame.locator("canvas").nth(index).screenshot()
    return np.asarray(Image.open(io.BytesIO(png)).convert("L"), dtype=np.float32)


def test_window_presets_and_drags_change_the_window(webgl_browser, url) -> None:
    page = webgl_browser.new_page(viewport={"width": 1280, "height": 800})
    login(page, url, RATER)
    page.get_by_role("heading", name="Score rationales").wait_for(timeout=30_000)
    settled(page)
    frame, state = viewer_ready(page)
    page.wait_for_timeout(500)
    loaded = _grey(frame)
    frame.get_by_label("Window preset").select_option("stroke")
    page.wait_for_timeout(500)
    assert frame.evaluate("() => window.nmbViewer.state().preset") == "stroke"
    stroke = [_grey(frame, i) for i in range(len(state["tiles"]))]
    assert abs(stroke[0] - loaded).mean() > 1.0  # every series redrawn in the narrow window
    frame.get_by_role("button", name="Reset").click()
    page.wait_for_timeout(500)
    assert abs(_grey(frame) - loaded).mean() < 0.5
    box = frame.locator("canvas").first.bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    for button, modifiers in (("right", []), ("left", ["Control"])):  # both documented drags
        frames = frame.evaluate("() => window.nmbViewer.state().dragFrames")
        before = _grey(frame)
        for key in modifiers:
            page.keyboard.down(key)
        page.mouse.move(x, y)
        page.mouse.down(button=button)
        for k in range(1, 16):
            page.mouse.move(x + 6 * k, y - 4 * k)
        page.mouse.up(button=button)
        for key in modifiers:
            page.keyboard.up(key)
        page.wait_for_timeout(500)
        after = frame.evaluate("() => window.nmbViewer.state()")
        assert after["dragFrames"] > frames, button  # redrawn, once per frame at most
        assert abs(_grey(frame) - before).mean() > 1.0, (button, modifiers)
        assert after["mm"] == pytest.approx(state["mm"])  # a window drag moves no crosshair
    page.close()


def _item_shown(page) -> str:
    """The item list's text: the item the page shows ("107. R-... · draft")."""
    return fresh(page).locator('[data-testid="stSelectbox"] input').first.input_value()


def _header_button(page, icon: str):
    """A header button by its Material icon's name (they have no label, only a tooltip)."""
    return page.get_by_role("button").filter(has_text=icon).first


def _open_filters(page) -> None:
    """Open the queue filters' popover (a click while the viewer lays out a new item's series
    may be lost: then again)."""
    button = page.locator('[data-testid="stPopoverButton"]:visible').filter(has_text="filter_list")
    deadline = time.monotonic() + 60
    while button.get_attribute("aria-expanded") != "true":
        assert time.monotonic() < deadline, "the filters did not open"
        button.click()
        page.wait_for_timeout(300)


def test_every_click_is_stored_on_the_item_it_was_made_on(webgl_browser, url, home) -> None:
    """Go to, Next unscored, the keyboard (Alt+U) and a filter (unscored only, then Next) each
    open a new item; two levels are clicked at once (the second while the first one's run is
    under way), then a third. Before: the first draft turned the item's label in the item list
    from "new" to "draft", the list, which held the current item, lost its value, and the page
    fell back to the first unscored item, where the third click was stored. Now the page stays
    on the item and all three levels are stored on it, nothing elsewhere; a reload stays on it
    too. Then the error classes: five buttons, no "Select all"; Enter on one tags that class
    alone."""
    page = webgl_browser.new_page(viewport={"width": 1280, "height": 800})
    login(page, url, RATER)
    page.get_by_role("heading", name="Score rationales").wait_for(timeout=30_000)
    settled(page)
    drafts = "SELECT assignment_id, draft FROM expertscore WHERE draft IS NOT NULL"
    before = dict(_rows(home, drafts))
    ways = {
        "go to": lambda target: _open(page, target[1]),
        "next unscored": lambda _: _header_button(page, "skip_next").click(),
        "keyboard": lambda _: page.keyboard.press("Alt+u"),
        "filter": lambda _: (_open_filters(page), page.get_by_text("Unscored only").click(),
                             settled(page), page.keyboard.press("Escape"),
                             _header_button(page, "chevron_right").click()),
    }
    scored = []
    for way, move in ways.items():
        queue = _queue(home)
        current = _item_shown(page).split(".")[0]
        later = [row for row in queue if row[1] + 1 > int(current) and row[2] != "submitted"]
        target = later[1] if way == "go to" else later[0]  # go to: beyond the next one
        assert target[2] is None, (way, target)  # a new item: its first draft changes its label
        move(target)
        settled(page)
        code = _rows(home, "SELECT r.blind_code FROM assignment a JOIN response r ON "
                     "r.response_id = a.response_id WHERE a.id = ?", target[0])[0][0]
        assert _item_shown(page).startswith(f"{target[1] + 1}. {code}"), way
        groups = page.locator(f"{RUBRIC} [data-testid='stRadio']")
        for k in (0, 1):  # at once: the second click while the first one's run is under way
            groups.nth(k).locator('[data-testid="stRadioOption"]').nth(2).click()
        settled(page)
        groups.nth(2).locator('[data-testid="stRadioOption"]').nth(2).click()
        settled(page)
        assert _item_shown(page).startswith(f"{target[1] + 1}. {code}"), way  # still there
        scored.append(target[0])
        def levels(aid: int = target[0]) -> list[int]:
            return list(json.loads(dict(_rows(home, drafts)).get(aid) or "{}")
                        .get("criteria", {}).values())
        wait_until(lambda: len(levels()) == 3, f"three levels stored ({way})")
        assert levels() == [2, 2, 2], way
        now = dict(_rows(home, drafts))
        assert {a for a in now if now[a] != before.get(a)} == set(scored), way  # nowhere else
    shown = _item_shown(page).split(" · ")[0]
    page.reload()  # the address names the item: a reload stays on it
    page.get_by_role("heading", name="Score rationales").wait_for(timeout=30_000)
    settled(page)
    assert _item_shown(page).split(" · ")[0] == shown
    tags = page.locator(f'{RUBRIC} [data-testid="stButtonGroup"]')
    names = ["Perceptual failure", "Reasoning failure", "Knowledge gap", "Grounding error",
             "Visual hallucination"]
    tags.get_by_role("button", name=names[-1]).wait_for(timeout=30_000)  # the form drawn
    labels = [b.inner_text().strip() for b in tags.get_by_role("button").all()]
    assert [label for label in labels if label] == names
    assert not page.get_by_text("Select all").count()
    tags.get_by_role("button", name=names[0]).press("Enter")  # keyboard: one class
    wait_until(lambda: json.loads(dict(_rows(home, drafts))[scored[-1]])["error_tags"]
               == ["perceptual_failure"], "one class tagged")
    page.close()
