"""The screenshots in the docs, taken from the running app in system Chromium.

`make screenshots` (or `.venv/bin/python -m tests.browser.screenshots [OUT_DIR]`, default
`docs/img`): loads the synthetic demo into a temporary NMB_HOME, starts the server
(`serve.py`) on a loopback port and saves `score.png` (`demo-expert1` on `/score`, as it
opens) and `exam.png` (`demo-student` on `/exam`, as it opens: one screen) at 1280x800 with the in-browser
viewer (software WebGL2), `admin-cases.png` (`demo-admin` in the case browser on the stroke case, at
1600x1400), and `calibrate.png` (`demo-admin` takes the grader's held-out look on `/calibrate`;
the top 1500 px at 1600 wide), and `leaderboard-site.png` (the static site of
`nmb results --site`, opened from disk, its first 1500 px at 1280 wide). No patient data: the
demo is synthetic and says so.
"""

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from playwright.sync_api import sync_playwright

from tests.browser.conftest import CHROMIUM, ROOT, SOFTWARE_WEBGL, login, streamlit_app


def _viewer_drawn(page) -> None:
    """Wait (up to 2 minutes) until the viewer has drawn every series."""
    for _ in range(600):
        frames = [f for f in page.frames if "nmb_volume_viewer" in f.url]
        if frames and frames[-1].evaluate("() => !!window.nmbViewer && "
                                          "window.nmbViewer.state().ready"):
            return
        page.wait_for_timeout(200)


def _viewer_page(browser, url: str, user: str, path: Path, scroll: int) -> Path:
    """`user`'s first page at 1280x800, once the viewer has drawn every series, scrolled by
    `scroll` px (the viewer stays in view, the text beside it moves)."""
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    login(page, url, user)
    _viewer_drawn(page)
    page.mouse.move(1000, 600)
    page.mouse.wheel(0, scroll)
    page.wait_for_timeout(1500)
    page.screenshot(path=path)
    page.close()
    return path


def _case_browser(browser, url: str, path: Path) -> Path:
    """`demo-admin` in the case browser, searching for the stroke case, scrolled to the case
    (its lesion mask over the images, its ground truth as labelled fields), at 1600x1400."""
    page = browser.new_page(viewport={"width": 1600, "height": 1400})
    login(page, url, "demo-admin")
    page.goto(url + "/admin?section=Cases")
    search = page.get_by_role("textbox", name="Search cases, tasks and responses")
    search.fill("syn-01")
    search.press("Enter")
    page.get_by_text("Ground truth").wait_for(timeout=60_000)
    _viewer_drawn(page)
    page.get_by_text("Open a case").evaluate("e => e.scrollIntoView({block: 'start'})")
    page.wait_for_timeout(1500)
    page.screenshot(path=path)
    page.close()
    return path


def leaderboard_site(browser, home: Path, path: Path) -> Path:
    """`nmb results --site` of the study in `home`, opened from disk at 1280x1500."""
    env = {**os.environ, "NMB_HOME": str(home)}
    env.pop("NMB_DATABASE_URL", None)
    site = home / "leaderboard-site"
    subprocess.run([sys.executable, "-m", "cli", "results", "--site", str(site)], cwd=ROOT,
                   env=env, check=True, stdout=subprocess.DEVNULL)
    page = browser.new_page(viewport={"width": 1280, "height": 1500})
    page.goto((site / "index.html").as_uri())
    page.screenshot(path=path)
    page.close()
    return path


def take(out: Path) -> list[Path]:
    """Saves and returns `out/score.png`, `out/exam.png`, `out/admin-cases.png`,
    `out/leaderboard-site.png` and `out/calibrate.png`."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / "calibrate.png"
    with tempfile.TemporaryDirectory(prefix="nmb-screenshots-") as tmp:
        env = {**os.environ, "NMB_HOME": tmp}
        env.pop("NMB_DATABASE_URL", None)
        subprocess.run([sys.executable, "-m", "cli", "demo"], cwd=ROOT, env=env, check=True,
                       stdout=subprocess.DEVNULL)
        with streamlit_app(Path(tmp)) as url, sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True,
                                         args=SOFTWARE_WEBGL)
            shots = [_viewer_page(browser, url, "demo-expert1", out / "score.png", 0),
                     _viewer_page(browser, url, "demo-student", out / "exam.png", 0),
                     _case_browser(browser, url, out / "admin-cases.png"),
                     leaderboard_site(browser, Path(tmp), out / "leaderboard-site.png")]
            page = browser.new_page(viewport={"width": 1600, "height": 1500})
            login(page, url, "demo-admin")
            page.get_by_role("link", name="Grader calibration").click()
            page.get_by_role("tab", name="Calibration report").click(timeout=60_000)
            part = page.get_by_role("combobox", name="Part", exact=True)  # the default is dev
            page.locator('[data-testid="stSelectbox"]').filter(has=part).get_by_role(
                "button", name="Open").click(timeout=60_000)
            page.get_by_role("option", name="heldout", exact=True).click(timeout=60_000)
            page.get_by_role("button", name="Take the held-out look").click(timeout=60_000)
            page.get_by_role("button", name="Yes, take the held-out look").click(timeout=60_000)
            page.get_by_text("gate passed").wait_for(timeout=180_000)
            page.get_by_text("alpha, experts + grader").first.wait_for(state="attached",
                                                                       timeout=60_000)
            page.wait_for_timeout(3000)  # the figures are images: let them load
            page.screenshot(path=path)  # Streamlit scrolls inside: the viewport is the page
            browser.close()
    return [*shots, path]


if __name__ == "__main__":
    print(take(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "img"))
