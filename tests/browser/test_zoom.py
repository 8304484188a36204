"""The reading room under browser zoom (issue 44, "a layout that holds at 125 % and 150 %
zoom"), in Chromium (software WebGL2) on a private copy of the demo study, one server.

Zoom is emulated as the browser does it: page zoom Z in a window of W x H CSS px lays the page
out in a viewport of W/Z x H/Z CSS px drawn at devicePixelRatio Z (Playwright: viewport
round(W/Z) x round(H/Z), device_scale_factor Z). So 1280 x 800 at 125 % is 1024 x 640 and at
150 % is 853 x 533; 1920 x 1080 is tested at 100 %.
"""

from __future__ import annotations

import pytest

from tests.browser.conftest import HEADER_OVERFLOW, login, settled, viewer_ready
from tests.browser.test_reading_room import keys_to_submit
from tests.browser.test_score_screen import webgl_browser  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

TILE = ("() => { const r = document.querySelector('.tile:not([hidden])').getBoundingClientRect();"
        " return [r.left, r.top, r.width, r.height]; }")


def _first_tile(page, frame) -> tuple[float, float, float, float]:
    """The first viewer tile's box (x, y, width, height) in the window, CSS px."""
    iframe = frame.frame_element().bounding_box()
    left, top, width, height = frame.evaluate(TILE)
    return iframe["x"] + left, iframe["y"] + top, width, height


def _whole(box: tuple[float, float, float, float], w: int, h: int) -> bool:
    x, y, width, height = box
    return x >= 0 and y >= 0 and x + width <= w + 0.5 and y + height <= h + 0.5


@pytest.mark.parametrize(("window", "zoom", "one_screen"), [
    ((1280, 800), 1.25, True), ((1280, 800), 1.5, False), ((1920, 1080), 1.0, True)],
    ids=["1280x800@125%", "1280x800@150%", "1920x1080@100%"])
def test_the_reading_room_holds_under_zoom(webgl_browser, url, window, zoom,  # noqa: F811
                                           one_screen) -> None:
    """/exam and /score: the header line is whole (no text cut); the first viewer tile is
    wholly in the window as the page opens (at 150 % the images are stacked above the text:
    /exam's whole once scrolled to); /score: Submit in at most 5 keys from the page's first
    focus, and where the images stand beside the text the viewer is still wholly in view."""
    w, h = round(window[0] / zoom), round(window[1] / zoom)
    for user, path in (("demo-student", "/exam"), ("demo-expert1", "/score")):
        context = webgl_browser.new_context(viewport={"width": w, "height": h},
                                            device_scale_factor=zoom)
        page = context.new_page()
        login(page, url, user)
        if path == "/score":
            page.reload()  # the page's first focus: a page just loaded
        settled(page)
        frame, _ = viewer_ready(page)
        assert page.evaluate("window.devicePixelRatio") == zoom
        assert page.evaluate(HEADER_OVERFLOW) == [], path
        if path == "/exam":
            box = _first_tile(page, frame)
            if not one_screen:  # stacked: scroll the tile to just below the app's top bar
                viewer = frame.frame_element().bounding_box()
                assert viewer["width"] >= 0.9 * (w - 48), viewer  # the page's width
                page.evaluate("(y) => document.querySelector('[data-testid=\"stMain\"]')"
                              ".scrollBy(0, y)", box[1] - 50)
                page.wait_for_timeout(300)
                box = _first_tile(page, frame)
            assert _whole(box, w, h) and box[3] >= 300, box
        else:
            if one_screen:  # the first tile whole as the page opens
                assert _whole(_first_tile(page, frame), w, h), _first_tile(page, frame)
            keys = keys_to_submit(page)
            assert keys is not None and keys <= 5, keys
            if one_screen:  # the viewer stays in view while the page scrolls to Submit
                page.wait_for_timeout(300)
                assert _whole(_first_tile(page, frame), w, h), _first_tile(page, frame)
        context.close()
