"""The in-browser volume viewer in Chromium with software WebGL2 (SwiftShader): it draws, the
wheel moves slices, one crosshair is shared by series on different grids, a rubric click
downloads no volume, the route serves header-free copies with cache headers, and without
WebGL2 the page shows the PNG viewer instead."""

from __future__ import annotations

import gzip
import io
import re
import shutil
import sqlite3
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import nibabel as nib
import numpy as np
import pytest
from PIL import Image

from tests.browser.conftest import (
    CHROMIUM,
    SOFTWARE_WEBGL,
    canvas_pixels,
    login,
    login_cookie,
    viewer_ready,
)
from tests.services import require

pytestmark = pytest.mark.browser

NO_WEBGL = ["--no-sandbox", "--disable-webgl", "--disable-3d-apis"]
STROKE = "syn-01"  # T1, DWI, ADC, FLAIR; DWI and ADC on a grid twice as coarse


@pytest.fixture(scope="module")
def playwright() -> Iterator:
    """One Playwright for the module (its sync API cannot be started twice at once)."""
    require(Path(CHROMIUM).exists() or shutil.which("chromium") is not None,
            f"Chromium not found at {CHROMIUM} (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        yield pw


@pytest.fixture(scope="module")
def webgl_browser(playwright):
    b = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=SOFTWARE_WEBGL)
    yield b
    b.close()


def _stroke_item(home: Path, rater: str) -> tuple[int, dict[str, Path]]:
    """Queue position of the rater's first item on the stroke case, and its series' files."""
    db = sqlite3.connect(home / "study.db")
    try:
        (position,) = db.execute(
            "SELECT a.position FROM assignment a JOIN user u ON u.id = a.rater_id "
            "JOIN response r ON r.response_id = a.response_id "
            "JOIN task t ON t.task_id = r.task_id WHERE u.name = ? AND t.case_id = ? "
            "ORDER BY a.position LIMIT 1", (rater, STROKE)).fetchone()
        series = dict(db.execute("SELECT sequence, path FROM series WHERE case_id = ?", (STROKE,)))
    finally:
        db.close()
    return position, {seq: home / path for seq, path in series.items()}


def _open_item(page, position: int) -> None:
    box = page.get_by_role("combobox", name="Item")
    box.click()
    page.keyboard.type(f"{position + 1}. R-")
    page.keyboard.press("Enter")
    deadline = time.monotonic() + 30
    while not box.input_value().startswith(f"{position + 1}. R-"):
        assert time.monotonic() < deadline, f"item {position + 1} not chosen"
        page.wait_for_timeout(100)
    _wait_rerun(page)


def _wait_rerun(page) -> None:
    page.locator('[data-testid="stApp"][data-test-script-state="notRunning"]').wait_for(
        timeout=60_000)


def _world(path: Path, vox: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """World mm of a voxel of the RAS-reoriented grid (as NiiVue indexes it), and voxel sizes."""
    img = nib.as_closest_canonical(nib.load(path))
    return (nib.affines.apply_affine(img.affine, vox),
            np.asarray(nib.affines.voxel_sizes(img.affine)))


def _assert_one_world_point(state: dict, files: dict[str, Path]) -> None:
    """Each series' crosshair voxel lies within half a voxel of the shared world point, so T1
    (fine grid) and DWI (coarse grid) point at the same place within half a voxel of each."""
    shared = np.asarray(state["mm"])
    tiles = {t["label"]: t for t in state["tiles"]}
    points = {}
    for label in ("T1", "DWI"):
        t = tiles[label]
        assert t["inside"], label
        assert np.allclose(t["mm"], shared, atol=1e-3), (label, t["mm"], shared)
        world, size = _world(files[label], t["vox"])
        assert np.all(np.abs(world - shared) <= size / 2 + 1e-3), (label, world, shared)
        points[label] = (world, size)
    (w1, s1), (w2, s2) = points["T1"], points["DWI"]
    assert not np.allclose(s1, s2)  # two grids indeed
    assert np.all(np.abs(w1 - w2) <= (s1 + s2) / 2 + 1e-3)


def test_viewer_draws_scrolls_links_grids_and_survives_reruns(webgl_browser, app_url: str,
                                                              demo_home: Path) -> None:
    position, files = _stroke_item(demo_home, "demo-expert1")
    page = webgl_browser.new_page(viewport={"width": 1280, "height": 800})
    volume_requests: list[str] = []
    page.on("request", lambda r: "/nmb/volumes/" in r.url and volume_requests.append(r.url))
    login(page, app_url, "demo-expert1")
    page.get_by_role("heading", name="Score rationales").wait_for(timeout=30_000)
    viewer_ready(page)  # the first item's case
    _open_item(page, position)
    frame, state = viewer_ready(page, labels=["T1", "DWI", "ADC", "FLAIR"])

    before = canvas_pixels(frame, 0)
    assert (before > 40).mean() > 0.05 and before.std() > 10  # a brain, not a blank canvas
    _assert_one_world_point(state, files)

    box = frame.locator("canvas").nth(0).bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    for _ in range(4):
        page.mouse.wheel(0, 120)
        page.wait_for_timeout(150)
    page.wait_for_timeout(500)
    after = canvas_pixels(frame, 0)
    assert np.abs(after - before).mean() > 1.0  # another slice is drawn
    moved = frame.evaluate("() => window.nmbViewer.state()")
    assert moved["mm"][2] != pytest.approx(state["mm"][2])  # an axial step along z
    _assert_one_world_point(moved, files)

    dwi = frame.locator("canvas").nth(1).bounding_box()
    page.mouse.click(dwi["x"] + dwi["width"] * 0.3, dwi["y"] + dwi["height"] * 0.6)
    page.wait_for_timeout(500)
    clicked = frame.evaluate("() => window.nmbViewer.state()")
    assert clicked["mm"][:2] != pytest.approx(moved["mm"][:2])  # the crosshair moved in x/y
    _assert_one_world_point(clicked, files)

    downloaded = len(volume_requests)
    assert downloaded >= 4  # (8 if the first item was on the same case: the cache answers)
    criteria = page.locator('[data-testid="stRadio"]').filter(  # the rubric's, not a viewer's
        has=page.locator('[data-testid="stRadioOption"]').nth(4))
    for level in (0, 1):  # rubric clicks (one of them at least is a change: a rerun)
        criteria.first.locator('[data-testid="stRadioOption"]').nth(level).click()
        page.wait_for_timeout(500)
        _wait_rerun(page)
    page.wait_for_timeout(1000)
    assert len(volume_requests) == downloaded  # the rerun sent no volume again
    kept = frame.evaluate("() => window.nmbViewer.state()")
    assert kept["firstDrawAt"] == clicked["firstDrawAt"] and kept["mm"] == clicked["mm"]
    cookie = login_cookie(page.context)
    page.close()

    url = volume_requests[0]
    with urllib.request.urlopen(urllib.request.Request(
            url, headers={"Cookie": f"nmb_login={cookie}"})) as response:
        assert response.headers["Cache-Control"] == "private, no-cache"
        assert response.headers["X-Content-Type-Options"] == "nosniff"
        assert response.headers["Content-Encoding"] == "gzip"
        served = nib.Nifti1Image.from_bytes(gzip.decompress(response.read()))
    assert served.header["descrip"].tobytes().strip(b"\0") == b""  # the demo's text is gone
    assert b"SYNTHETIC" in nib.load(files["T1"]).header["descrip"].tobytes()
    for refused_url, headers in ((url, {}),  # the page's own URL without its login cookie
                                 (re.sub(r"/[0-9a-f]{32}/", "/" + "0" * 32 + "/", url),
                                  {"Cookie": f"nmb_login={cookie}"})):  # a forged ticket
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(urllib.request.Request(refused_url, headers=headers))
        assert refused.value.code == 403


def _red(frame, index: int) -> int:
    """How many pixels of a canvas are clearly red (the mask overlay; the images are grey)."""
    png = frame.locator("canvas").nth(index).screenshot()
    rgb = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=np.int16)
    return int(((rgb[..., 0] - rgb[..., 1] > 60) & (rgb[..., 0] - rgb[..., 2] > 60)).sum())


def test_admin_case_browser_overlays_the_lesion_mask(webgl_browser, app_url: str) -> None:
    page = webgl_browser.new_page(viewport={"width": 1280, "height": 800})
    login(page, app_url, "demo-admin")
    page.get_by_role("heading", name="Data and users").wait_for(timeout=30_000)
    page.get_by_role("tab", name="Cases").click()  # the first case is the stroke case (syn-01)
    frame, state = viewer_ready(page, labels=["T1", "DWI", "ADC", "FLAIR"])
    assert [t["masks"] for t in state["tiles"]] == [1, 1, 1, 1]  # no series named: on every one
    page.wait_for_timeout(500)
    with_mask = [_red(frame, i) for i in range(4)], canvas_pixels(frame, 0)
    frame.get_by_label("Masks").uncheck()
    page.wait_for_timeout(500)
    without = [_red(frame, i) for i in range(4)], canvas_pixels(frame, 0)
    assert all(n > 50 for n in with_mask[0]), with_mask[0]  # the infarct, on both grids
    assert all(n < with_mask[0][i] / 10 for i, n in enumerate(without[0])), without[0]
    assert np.abs(with_mask[1] - without[1]).mean() > 0.1
    page.close()


def test_without_webgl2_the_page_shows_slice_images(playwright, app_url: str) -> None:
    browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=NO_WEBGL)
    try:
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        login(page, app_url, "demo-student")
        page.get_by_text("no WebGL2").first.wait_for(timeout=60_000)
        images = page.locator('[data-testid="stImage"] img')
        images.first.wait_for(timeout=60_000)
        assert images.count() >= 2
    finally:
        browser.close()
