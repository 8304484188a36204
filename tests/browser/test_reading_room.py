"""The reading room at 1280 x 800 in Chromium (software WebGL2), on a private copy of the demo
study (issue 44): /exam on one screen, where a case opens (its hanging protocol, an admin's
"use this view"), the viewer's overlay (orientation letters, slice k of n, W/L, scale bar) and
ruler, and the skip link to Submit. One server for the module; each test checks several
points on one page load."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import nibabel as nib
import numpy as np
import pytest
from sqlmodel import select

from db.engine import engine_for, upgrade
from db.models import Exam, User
from db.study.exams import answer_stage, attempt_for, exam_tasks
from db.users import add_user
from demo.study import DEMO_EXAM
from tests.browser.conftest import (
    ANSWER_BOX,
    answer_box_replaced,
    fresh,
    login,
    settled,
    viewer_ready,
    wait_until,
)
from tests.browser.test_score_screen import webgl_browser  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

W, H = 1280, 800
PASSWORD = "reading-room-test-password"
SUBMIT_FOCUSED = "document.activeElement.matches('.st-key-nmb-submit button')"
PROTOCOL_CASE = "syn-02"  # no key slices, no mask (demo.bundle): only the protocol moves it


def _sql(home: Path, sql: str, *args) -> list[tuple]:
    db = sqlite3.connect(home / "study.db")
    try:
        rows = db.execute(sql, args).fetchall()
        db.commit()
        return rows
    finally:
        db.close()


def _session(home: Path):
    from sqlmodel import Session

    url = f"sqlite:///{home / 'study.db'}"
    upgrade(url)
    return Session(engine_for(url), expire_on_commit=False)


def _first_tile_in_view(page, frame) -> None:
    """The first viewer tile lies wholly inside the 1280 x 800 window."""
    iframe = frame.frame_element().bounding_box()
    left, top, width, height = frame.evaluate(
        "() => { const r = document.querySelector('.tile:not([hidden])').getBoundingClientRect();"
        " return [r.left, r.top, r.width, r.height]; }")
    x, y = iframe["x"] + left, iframe["y"] + top
    assert x >= 0 and y >= 0 and x + width <= W + 0.5 and y + height <= H + 0.5, (x, y, width,
                                                                                  height)
    assert height >= 300, height


def _in_view(box: dict | None) -> bool:
    return box is not None and box["y"] >= 0 and box["y"] + box["height"] <= H + 0.5


def _answer_in_view(page) -> None:
    """The answer box's text area and its Record button are wholly in the window."""
    box = fresh(page).locator(ANSWER_BOX).first
    top = box.bounding_box()
    inside = box.content_frame
    for part in (inside.locator("textarea"), inside.get_by_role("button", name="Record answer")):
        b = part.bounding_box()  # (page coordinates)
        assert top is not None and _in_view(b), (top, b)


def test_the_exam_fits_one_screen_and_confirmations_cover_nothing(webgl_browser, url,  # noqa: F811
                                                                  home) -> None:
    """Sidebar folded; on a new task the first tile, the task text and the answer box are in
    view; after a stage is recorded the revealed stage and its box are in view, with no toast
    over them. The overlay: four letters, slice k of n, W/L, a scale bar, none over the bar."""
    with _session(home) as s:
        add_user(s, name="room-taker", role="student", password=PASSWORD)
        s.commit()
        exam = s.exec(select(Exam).where(Exam.name == DEMO_EXAM)).one()
        taker = s.exec(select(User).where(User.name == "room-taker")).one()
        attempt = attempt_for(s, exam_id=exam.id, user_id=taker.id)
        tasks = exam_tasks(s, attempt=attempt)
        level3 = next(t for t in tasks if t.n_stages > 1)
        for position in level3.waiting_for:  # its stages wait for the case's other tasks
            answer_stage(s, attempt=attempt, task_id=exam.task_ids[position - 1], text="done")
        single = [t.task_id for t in exam_tasks(s, attempt=attempt) if not t.done
                  and t.n_stages == 1]
    page = webgl_browser.new_page(viewport={"width": W, "height": H})
    login(page, url, "room-taker", PASSWORD)
    settled(page)
    assert page.locator('[data-testid="stExpandSidebarButton"]').first.is_visible()  # folded
    frame, state = viewer_ready(page)
    first_label = fresh(page).get_by_role("combobox", name="Task").input_value()
    for _ in range(2):  # the first task, then the one "Record answer" opens
        _first_tile_in_view(page, frame)
        assert page.evaluate("document.querySelector('[data-testid=\"stMain\"]').scrollTop") == 0
        assert _in_view(fresh(page).locator('[data-testid="stCaptionContainer"]').filter(
            has_text=re.compile(r"^Task$")).first.bounding_box())  # the task's text begins
        _answer_in_view(page)
        if fresh(page).get_by_role("combobox", name="Task").input_value() != first_label:
            break
        assert state["tiles"], state
        box = fresh(page).locator(ANSWER_BOX).first.content_frame
        box.locator("textarea").fill("Answer of the first task")
        box.get_by_role("button", name="Record answer").click()
        wait_until(lambda: answer_box_replaced(page), "the next task's answer box")
        settled(page)
        old = frame
        frame, state = viewer_ready(page, unlike=state) if single else viewer_ready(page)
        assert frame == old  # the viewer kept its frame (and compiled programs) after the answer
    assert page.locator('[data-testid="stToast"]').count() == 0  # inline, never a toast
    # the overlay of a single plane: letters on four sides, outside the bar with the name
    tile = state["tiles"][0]["overlay"]
    assert len(set(tile["letters"])) == 4 and set(tile["letters"]) <= set("RLAPSI")
    k, n = tile["slice"]
    assert 1 <= k <= n and tile["wl"][0] > 0 and tile["scaleMM"] > 0
    info = frame.locator(".tile .info").first.inner_text()
    assert re.search(rf"\b{k}/{n}\b", info) and "W " in info and " L " in info, info
    bar = frame.locator(".tile .bar").first.bounding_box()
    for side in ("top", "right", "bottom", "left"):
        letter = frame.locator(f".tile .ori.{side}").first
        b = letter.bounding_box()
        assert letter.inner_text().strip() and b["y"] >= bar["y"] + bar["height"], side
    # a multi-turn task: record stage 1, stage 2 is shown in view and uncovered
    picker = fresh(page).get_by_role("combobox", name="Task")
    picker.click()
    page.get_by_role("option", name="level 3").first.click()
    settled(page)
    box = fresh(page).locator(ANSWER_BOX).first.content_frame
    box.locator("textarea").fill("Stage one answer")
    box.get_by_role("button", name="Record answer").click()
    wait_until(lambda: answer_box_replaced(page), "the revealed stage's answer box")
    settled(page)
    heading = fresh(page).get_by_text(f"Stage 2 of {level3.n_stages}", exact=True)
    heading.wait_for(timeout=30_000)
    wait_until(lambda: _in_view(heading.bounding_box()), "the revealed stage in view")
    page.wait_for_timeout(1500)  # the scroll holds while the page settles
    b = heading.bounding_box()
    assert _in_view(b)
    covering = page.evaluate("([x, y]) => document.elementFromPoint(x, y).textContent",
                             [b["x"] + b["width"] / 2, b["y"] + b["height"] / 2])
    assert f"Stage 2 of {level3.n_stages}" in covering  # nothing over it
    assert _in_view(fresh(page).get_by_text("Information revealed at this stage").last
                    .bounding_box())
    _answer_in_view(page)
    assert page.locator('[data-testid="stToast"]').count() == 0
    page.close()


def _disc(path: Path, plane: str, centre: list[float], radius: float) -> tuple[int, float]:
    """The voxels of `path`'s slice through `centre` (its RAS+ grid) within `radius` mm of it
    in the plane: how many, and their mean."""
    img = nib.as_closest_canonical(nib.load(path))
    data, size = np.asarray(img.dataobj, dtype=np.float64), img.header.get_zooms()[:3]
    c = np.linalg.solve(img.affine, [*centre, 1.0])[:3]
    axis = {"sagittal": 0, "coronal": 1, "axial": 2}[plane]
    a, b = (x for x in range(3) if x != axis)
    grid = np.indices((data.shape[a], data.shape[b]), dtype=np.float64)
    inside = ((grid[0] - c[a]) * size[a]) ** 2 + ((grid[1] - c[b]) * size[b]) ** 2 <= radius ** 2
    values = np.take(data, int(round(c[axis])), axis=axis)[inside]
    return int(values.size), float(values.mean())


def _canvas_point(frame, tile: int, mm: list[float]) -> tuple[float, float]:
    """The page coordinates of world point `mm` on tile `tile`'s slice (NiiVue's mapping)."""
    iframe = frame.frame_element().bounding_box()
    point = frame.evaluate("([i, mm]) => window.nmbViewer.pointOf(i, mm)", [tile, mm])
    assert point is not None, mm
    x, y = point
    return iframe["x"] + x, iframe["y"] + y


def _open_case(page) -> None:
    """The admin's case browser on PROTOCOL_CASE (searched for: the only case listed)."""
    search = page.get_by_role("textbox", name="Search cases, tasks and responses")
    search.fill(PROTOCOL_CASE)
    search.press("Enter")
    settled(page)


def test_opening_views_ruler_and_scale_bar(webgl_browser, url, home) -> None:  # noqa: F811
    """A case whose bundle names a hanging protocol (coronal, slice 20 of its first series)
    opens there; the ruler measures 60 mm between two world points 60 mm apart within 1 mm,
    and the scale bar agrees with it; "Use this view" in sagittal stores that view for the
    case (audited) and the case opens there after a reload."""
    (series,) = _sql(home, "SELECT sequence FROM series WHERE case_id = ? AND picture = 0 "
                     "ORDER BY position LIMIT 1", PROTOCOL_CASE)[0]
    protocol = {"plane": "coronal", "slices": [{"series": series, "index": 20}],
                "source": "protocol"}  # as `nmb import` stores a case's hanging_protocol
    _sql(home, 'UPDATE "case" SET opening_view = ? WHERE case_id = ?', json.dumps(protocol),
         PROTOCOL_CASE)
    page = webgl_browser.new_page(viewport={"width": W, "height": H})
    login(page, url, "demo-admin")
    page.goto(url + "/admin?section=Cases")
    _open_case(page)
    frame, state = viewer_ready(page)
    assert state["plane"] == "coronal" and state["start"]["source"] == "protocol", state["start"]
    tiles = {t["label"]: t for t in state["tiles"]}
    assert tiles[series]["vox"][1] == 20  # coronal slice 20 (0-based, RAS+ grid)
    assert tiles[series]["overlay"]["slice"] == [21, tiles[series]["dims"][1]]
    assert tiles[series]["overlay"]["letters"] == ["S", "L", "I", "R"]  # radiological
    # the ruler: two points 60 mm apart along x, on the slice shown
    i = [t["label"] for t in state["tiles"]].index(series)
    a_mm = list(state["mm"])
    a_mm[0] -= 30
    b_mm = list(a_mm)
    b_mm[0] += 60
    frame.get_by_role("button", name="Ruler").click()
    (ax, ay), (bx, by) = _canvas_point(frame, i, a_mm), _canvas_point(frame, i, b_mm)
    page.mouse.move(ax, ay)
    page.mouse.down()
    for k in range(1, 11):
        page.mouse.move(ax + (bx - ax) * k / 10, ay + (by - ay) * k / 10)
    page.mouse.up()
    wait_until(lambda: frame.evaluate("() => window.nmbViewer.state().measured.length") > 0,
               "a length measured")
    measured = frame.evaluate("() => window.nmbViewer.state().measured")[-1]
    assert measured == pytest.approx(60, abs=1.0), measured
    scale = frame.evaluate("() => window.nmbViewer.state()")["tiles"][i]["overlay"]
    assert scale["scalePx"] / scale["scaleMM"] == pytest.approx(abs(bx - ax) / 60, rel=0.03)
    # the circular ROI: from the crosshair 10 mm out; its voxels and mean as numpy finds them
    frame.get_by_role("button", name="ROI").click()
    (cx, cy), (ex, ey) = _canvas_point(frame, i, state["mm"]), _canvas_point(
        frame, i, [state["mm"][0] + 10, *state["mm"][1:]])
    page.mouse.move(cx, cy)
    page.mouse.down()
    for k in range(1, 6):
        page.mouse.move(cx + (ex - cx) * k / 5, cy + (ey - cy) * k / 5)
    page.mouse.up()
    wait_until(lambda: frame.evaluate("() => window.nmbViewer.state().roi"), "an ROI measured")
    roi = frame.evaluate("() => window.nmbViewer.state().roi")
    assert roi["label"] == series and roi["radiusMM"] == pytest.approx(10, abs=0.5)
    (path,) = _sql(home, "SELECT path FROM series WHERE case_id = ? AND sequence = ?",
                   PROTOCOL_CASE, series)[0]
    n, mean = _disc(home / path, "coronal", roi["centreMM"], roi["radiusMM"])
    assert roi["n"] == n and roi["mean"] == pytest.approx(mean, rel=1e-4), (roi, n, mean)
    # "Use this view": sagittal, stored for the case and audited
    frame.get_by_role("button", name="Sagittal").click()
    page.wait_for_timeout(500)
    shown = frame.evaluate("() => window.nmbViewer.state()")
    frame.get_by_role("button", name="Use this view").click()

    def stored() -> dict | None:
        (raw,) = _sql(home, 'SELECT opening_view FROM "case" WHERE case_id = ?',
                      PROTOCOL_CASE)[0]
        view = json.loads(raw) if raw else None
        return view if view and view.get("source") == "admin" else None

    wait_until(stored, "the admin's view stored")
    assert stored()["plane"] == "sagittal"
    assert stored()["mm"] == pytest.approx(shown["mm"], abs=0.01)
    (detail,) = _sql(home, "SELECT detail FROM auditlog WHERE action = 'case.opening_view'")[0]
    assert json.loads(detail)["before"] == protocol and json.loads(detail)["case_id"] == \
        PROTOCOL_CASE
    page.reload()
    _open_case(page)
    frame, state = viewer_ready(page)
    assert state["plane"] == "sagittal" and state["start"]["source"] == "admin"
    assert state["mm"] == pytest.approx(shown["mm"], abs=0.01)
    page.close()


def keys_to_submit(page) -> int | None:
    """On /score, from the page's first focus: how many of Tab, Enter, Tab, Enter, Tab put the
    focus on Submit (None: not within those five)."""
    page.locator(".nmb-skip").wait_for(state="attached", timeout=30_000)
    page.locator(".st-key-nmb-submit button").wait_for(state="attached", timeout=30_000)
    for keys, key in enumerate(("Tab", "Enter", "Tab", "Enter", "Tab"), start=1):
        page.keyboard.press(key)
        if page.evaluate(SUBMIT_FOCUSED):
            return keys
    return None


def test_submit_is_two_keys_from_the_first_focus(webgl_browser, url) -> None:  # noqa: F811
    """/score: from the page's first focus, Tab reaches the skip link and Enter puts the focus
    on Submit (at most 5 keys); icon buttons have names."""
    page = webgl_browser.new_page(viewport={"width": W, "height": H})
    login(page, url, "demo-expert1")
    page.get_by_role("heading", name="Score rationales").wait_for(timeout=30_000)
    settled(page)
    page.reload()  # the page's first focus: a page just loaded
    page.get_by_role("heading", name="Score rationales").wait_for(timeout=30_000)
    settled(page)
    keys = keys_to_submit(page)
    assert keys is not None and keys <= 5, keys
    for name in ("Previous item (Alt+P)", "Next item (Alt+N)", "Next unscored item (Alt+U)"):
        assert page.get_by_role("button", name=name).count() == 1, name
    page.close()


def test_results_open_on_the_headline_table(webgl_browser, url) -> None:  # noqa: F811
    """/results' first screen shows the headline table (pass@1 per model and human group by
    split), its rows included, before any setting or notice."""
    page = webgl_browser.new_page(viewport={"width": W, "height": H})
    login(page, url, "demo-admin")
    page.goto(url + "/results")
    title = page.get_by_text("pass@1 per model and human group by split")
    title.wait_for(timeout=180_000)
    settled(page, timeout=180_000)
    table = page.locator('[data-testid="stDataFrame"]').first
    box = table.bounding_box()
    assert _in_view(title.bounding_box()) and box is not None
    assert box["y"] + min(box["height"], 120) <= H, box  # its header and first rows in view
    assert box["x"] + box["width"] <= W  # within the column (it scrolls inside)
    settings = page.get_by_text("Settings: grader config").bounding_box()
    assert settings["y"] > box["y"]  # the controls come after it
    page.close()
