"""The calibration report screenshot in the docs, taken from the running app in system Chromium.

`make screenshots` (or `.venv/bin/python -m tests.browser.screenshots [OUT_DIR]`, default
`docs/img`): loads the synthetic demo into a temporary NMB_HOME, starts Streamlit on a loopback
port, logs in as `demo-admin`, takes the grader's held-out look on `/calibrate` and
saves `calibrate.png` (the top 1500 px). No patient data: the demo is synthetic and says so.
`score.png` and `exam.png` were taken by hand from the same demo.
"""

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from playwright.sync_api import sync_playwright

from tests.browser.conftest import CHROMIUM, ROOT, login, streamlit_app


def take(out: Path) -> Path:
    """Saves and returns `out/calibrate.png`."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / "calibrate.png"
    with tempfile.TemporaryDirectory(prefix="nmb-screenshots-") as tmp:
        env = {**os.environ, "NMB_HOME": tmp}
        env.pop("NMB_DATABASE_URL", None)
        subprocess.run([sys.executable, "-m", "cli", "demo"], cwd=ROOT, env=env, check=True,
                       stdout=subprocess.DEVNULL)
        with streamlit_app(Path(tmp)) as url, sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True,
                                         args=["--no-sandbox", "--disable-gpu"])
            page = browser.new_page(viewport={"width": 1600, "height": 1500})
            login(page, url, "demo-admin")
            page.get_by_role("link", name="Grader calibration").click()
            page.get_by_role("tab", name="Calibration report").click(timeout=60_000)
            page.get_by_role("button", name="Take the held-out look").click(timeout=60_000)
            page.get_by_text("gate passed").wait_for(timeout=180_000)
            page.get_by_text("alpha, experts + grader").first.wait_for(state="attached",
                                                                       timeout=60_000)
            page.wait_for_timeout(3000)  # the figures are images: let them load
            page.screenshot(path=path)  # Streamlit scrolls inside: the viewport is the page
            browser.close()
    return path


if __name__ == "__main__":
    print(take(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "img"))
