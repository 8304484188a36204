"""Pictures in Chromium (issue 23): the demo's wide figure (about 3,000 x 1,000 pixels, over the
2,048-pixel WebGL texture limit) is drawn upright, with its own aspect ratio and its red arrow
red, on /score, /exam and the admin case browser; a picture-only case has no plane or slice
controls; a mixed case shows a volume viewer and a picture tile."""

from __future__ import annotations

import io
import json
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from playwright.sync_api import Error as PlaywrightError

from demo.pictures import PICTURE_CASE
from tests.browser.conftest import ROOT, SOFTWARE_WEBGL, login, settled, streamlit_app
from tests.db.bundle import pictures
from tests.db.bundle.bundles import write_bundle

pytestmark = pytest.mark.browser
MIXED = "mixed-1"


def _mixed_bundle(dest: Path) -> Path:
    """The test bundle, its case c1 renamed MIXED, with the wide figure beside its volumes."""
    root = write_bundle(dest, name="mixed", with_responses=[])
    (root / "cases" / "c1").rename(root / "cases" / MIXED)
    folder = root / "cases" / MIXED
    pictures.save(pictures.wide_figure(), folder / "figure.png", "PNG")
    case = json.loads((folder / "case.json").read_text())
    case["case_id"] = MIXED
    case["series"].append({"sequence": "FIG", "file": "figure.png", "plane": "axial"})
    (folder / "case.json").write_text(json.dumps(case))
    tasks = (root / "tasks.jsonl").read_text().replace('"case_id": "c1"', f'"case_id": "{MIXED}"')
    (root / "tasks.jsonl").write_text(tasks.replace('"task_id": "t', '"task_id": "mixed-t'))
    return root


@pytest.fixture(scope="module")
def home(demo_template: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo study plus a mixed case (volumes and a picture)."""
    home = tmp_path_factory.mktemp("pictures-home")
    shutil.copytree(demo_template, home, dirs_exist_ok=True)
    bundle = _mixed_bundle(tmp_path_factory.mktemp("mixed") / "b")
    env = {"NMB_HOME": str(home), "PATH": "/usr/bin:/bin"}
    subprocess.run([sys.executable, "-m", "cli", "import", str(bundle), "--with-demo"], cwd=ROOT,
                   check=True,
                   env=env, capture_output=True, timeout=300)
    return home


@pytest.fixture(scope="module")
def url(home: Path) -> Iterator[str]:
    with streamlit_app(home) as u:
        yield u


@pytest.fixture(scope="module")
def chromium():
    from playwright.sync_api import sync_playwright

    from tests.browser.conftest import CHROMIUM

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=SOFTWARE_WEBGL)
        yield b
        b.close()


def _query(home: Path, sql: str, *args) -> list[tuple]:
    db = sqlite3.connect(home / "study.db")
    try:
        return db.execute(sql, args).fetchall()
    finally:
        db.close()


def _figure(home: Path, case_id: str, sequence: str) -> np.ndarray:
    [(path,)] = _query(home, "SELECT path FROM series WHERE case_id = ? AND sequence = ?",
                       case_id, sequence)
    return np.asarray(Image.open(home / path).convert("RGB"), dtype=np.float32)


def _pictures(page, labels: list[str], timeout: float = 90.0):
    """The picture component's frame once it shows `labels`, all loaded, and its state."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for frame in [f for f in page.frames if "nmb_picture_viewer" in f.url]:
            try:
                state = frame.evaluate("() => window.nmbPictures ? window.nmbPictures.state() "
                                       ": null")
            except PlaywrightError:
                continue
            if (state and state["ready"] and [t["label"] for t in state["tiles"]] == labels
                    and frame.locator("img").first.is_visible()):
                return frame, state
        page.wait_for_timeout(200)
    raise AssertionError(f"the pictures {labels} were not shown within {timeout} s")


def _choose(page, box_name: str, typed: str) -> None:
    box = page.get_by_role("combobox", name=box_name)
    box.click()
    page.keyboard.type(typed)
    page.keyboard.press("Enter")
    settled(page)


def _assert_upright_and_red(frame, source: np.ndarray) -> None:
    """The drawn figure matches the source, not its 180° rotation, at the source's aspect
    ratio, and the red arrow is red."""
    frame.locator("img").first.scroll_into_view_if_needed()
    drawn = np.asarray(Image.open(io.BytesIO(frame.locator("img").first.screenshot()))
                       .convert("RGB"), dtype=np.float32)
    h, w = drawn.shape[:2]
    assert w >= 300 and abs(w / h - source.shape[1] / source.shape[0]) < 0.03, (w, h)
    want = np.asarray(Image.fromarray(source.astype(np.uint8)).resize((w, h),
                      Image.Resampling.BOX), dtype=np.float32)
    upright = np.abs(drawn - want).mean()
    turned = np.abs(drawn - want[::-1, ::-1]).mean()
    assert upright < 12 and turned > 2 * upright, (upright, turned)
    red = (drawn[..., 0] > 170) & (drawn[..., 1] < 90) & (drawn[..., 2] < 90)
    red_source = (want[..., 0] > 170) & (want[..., 1] < 90) & (want[..., 2] < 90)
    assert red_source.sum() > 20 and red.sum() > 0.6 * red_source.sum()


def _no_volume_controls(page, frame) -> None:
    text = frame.locator("body").inner_text()
    for word in ("Axial", "Coronal", "Sagittal", "Crosshair", "slice", "Radiological"):
        assert word not in text
    visible = [f for f in page.frames if "nmb_volume_viewer" in f.url
               and f.frame_element().is_visible()]
    assert visible == []


def test_score_shows_the_picture_case_upright(chromium, url: str, home: Path) -> None:
    rows = _query(home, "SELECT u.name, a.position FROM assignment a JOIN user u ON "
                  "u.id = a.rater_id JOIN response r ON r.response_id = a.response_id JOIN "
                  "task t ON t.task_id = r.task_id WHERE t.case_id = ? ORDER BY u.name, "
                  "a.position LIMIT 1", PICTURE_CASE)
    assert rows, "no assignment on the picture case"
    rater, position = rows[0]
    page = chromium.new_page(viewport={"width": 1280, "height": 900})
    login(page, url, rater)
    page.get_by_role("heading", name="Score rationales").wait_for(timeout=30_000)
    settled(page)
    _choose(page, "Item", f"{position + 1}. R-")
    frame, state = _pictures(page, ["T1", "FLAIR", "T2"])
    _assert_upright_and_red(frame, _figure(home, PICTURE_CASE, "T1"))
    _no_volume_controls(page, frame)
    page.close()


def test_exam_shows_the_picture_case_upright(chromium, url: str, home: Path) -> None:
    [(task_ids,)] = _query(home, "SELECT task_ids FROM exam")
    [(task,)] = _query(home, "SELECT task_id FROM task WHERE case_id = ?", PICTURE_CASE)
    number = json.loads(task_ids).index(task) + 1
    page = chromium.new_page(viewport={"width": 1280, "height": 900})
    login(page, url, "demo-student")
    page.get_by_role("combobox", name="Task").wait_for(timeout=30_000)
    settled(page)
    _choose(page, "Task", f"{number}. ")
    frame, _ = _pictures(page, ["T1", "FLAIR", "T2"])
    _assert_upright_and_red(frame, _figure(home, PICTURE_CASE, "T1"))
    _no_volume_controls(page, frame)
    page.close()


def test_admin_browser_shows_pictures_and_a_mixed_case(chromium, url: str, home: Path) -> None:
    page = chromium.new_page(viewport={"width": 1280, "height": 900})
    login(page, url, "demo-admin")
    page.get_by_role("heading", name="Data and users").wait_for(timeout=30_000)
    page.get_by_role("tab", name="Cases").click()
    settled(page)
    _choose(page, "Open a case", PICTURE_CASE)
    frame, _ = _pictures(page, ["T1", "FLAIR", "T2"])
    _assert_upright_and_red(frame, _figure(home, PICTURE_CASE, "T1"))
    _no_volume_controls(page, frame)
    _choose(page, "Open a case", MIXED)
    frame, _ = _pictures(page, ["FIG"])
    _assert_upright_and_red(frame, _figure(home, MIXED, "FIG"))
    deadline = time.monotonic() + 120
    while True:  # the volumes in the interactive viewer, beside the picture tile
        states = []
        for f in [f for f in page.frames if "nmb_volume_viewer" in f.url]:
            try:
                states.append(f.evaluate("() => window.nmbViewer && window.nmbViewer.state()"))
            except PlaywrightError:
                continue
        if any(s and s["ready"] and [t["label"] for t in s["tiles"]] == ["T1", "FLAIR"]
               for s in states):
            break
        assert time.monotonic() < deadline, states
        page.wait_for_timeout(300)
    page.close()
