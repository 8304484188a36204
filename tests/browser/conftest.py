"""The real app in a real browser: a Streamlit server on a loopback port and system Chromium."""

import contextlib
import io
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest
import sqlalchemy
from PIL import Image

from tests.services import free_port, require

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("NMB_CHROMIUM", "/usr/bin/chromium")
#: Chromium with software WebGL2 (SwiftShader), for the in-browser volume viewer.
SOFTWARE_WEBGL = ["--no-sandbox", "--use-angle=swiftshader", "--enable-unsafe-swiftshader"]


@pytest.fixture(scope="session")
def demo_home(demo_template: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the demo study (2 mm images) for the app server."""
    home = tmp_path_factory.mktemp("browser-home")
    shutil.copytree(demo_template, home, dirs_exist_ok=True)
    return home


@pytest.fixture(scope="module")
def home(demo_template: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the demo study of the test module's own, for tests that change it."""
    home = tmp_path_factory.mktemp("module-home")
    shutil.copytree(demo_template, home, dirs_exist_ok=True)
    return home


@pytest.fixture(scope="module")
def url(home: Path) -> Iterator[str]:
    """The app on the module's `home`."""
    with streamlit_app(home) as u:
        yield u


@contextlib.contextmanager
def streamlit_app(home: Path, env: dict[str, str] | None = None, args: Sequence[str] = (),
                  log: Path | None = None, port: int | None = None,
                  root: Path = ROOT) -> Iterator[str]:
    """`streamlit run serve.py` (the app and its volume route) on a loopback port (`port`, or
    a free one) with NMB_HOME = `home` (and the variables in `env`, the extra command-line
    `args`); yields its URL, with the path prefix if `args` give one. The server's output goes
    to `log` (a temporary file if not given). `root`: the checkout to serve (a benchmark's
    "before")."""
    port = port or free_port()
    inherited = {k: v for k, v in os.environ.items() if k != "NMB_DATABASE_URL"}
    env = {**inherited, **(env or {}), "NMB_HOME": str(home)}  # a database URL only from `env`
    if root != ROOT:
        env["PYTHONPATH"] = str(root)
    prefix = args[list(args).index("--server.baseUrlPath") + 1].strip("/") \
        if "--server.baseUrlPath" in args else ""
    url = f"http://127.0.0.1:{port}" + (f"/{prefix}" if prefix else "")
    with contextlib.ExitStack() as stack:
        if log is None:
            log = Path(stack.enter_context(tempfile.TemporaryDirectory())) / "server.log"
        out = stack.enter_context(log.open("wb"))
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "serve.py", "--server.address", "127.0.0.1",
             "--server.port", str(port), "--server.headless", "true",
             "--browser.gatherUsageStats", "false", *args],
            cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT)
        for _ in range(200):
            try:
                urllib.request.urlopen(url + "/_stcore/health", timeout=1)
                break
            except OSError:
                time.sleep(0.2)
        else:
            proc.kill()
            raise RuntimeError(f"streamlit did not start: {log.read_text()[-2000:]}")
        try:
            yield url
        finally:
            proc.terminate()
            proc.wait(timeout=20)


@pytest.fixture(scope="session")
def app_url(demo_home: Path) -> Iterator[str]:
    with streamlit_app(demo_home) as url:
        yield url


@pytest.fixture(scope="module")
def browser():
    """Chromium for one test module (Playwright's sync API holds an event loop while open)."""
    require(Path(CHROMIUM).exists() or shutil.which("chromium") is not None,
            f"Chromium not found at {CHROMIUM} (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=[
            *SOFTWARE_WEBGL, "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync"])
        yield b
        b.close()


def wait_until(condition, what: str, timeout: float = 30.0) -> None:
    """Poll `condition()` every 0.1 s; AssertionError naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} within {timeout} s")
        time.sleep(0.1)


def login_cookie(context) -> str | None:
    """The browser context's login cookie (set once a login succeeds), or None."""
    return next((c["value"] for c in context.cookies() if c["name"] == "nmb_login"), None)


def settled(page, timeout: float = 30_000) -> None:
    """Wait until the app's script run has ended and no stale element is left (what
    Streamlit's own end-to-end tests wait for). A short pause first lets a rerun that a
    click just requested begin."""
    page.wait_for_timeout(200)
    page.wait_for_selector('[data-testid="stApp"][data-test-script-state="notRunning"]',
                           state="attached", timeout=timeout)
    page.wait_for_function(
        "!document.querySelector('[data-testid=\"stElementContainer\"][data-stale=\"true\"]')",
        timeout=timeout)


def fresh(page):
    """The page's current elements only: not those a rerun is about to replace."""
    return page.locator('[data-testid="stElementContainer"]:not([data-stale="true"])')


def login(page, url: str, name: str, password: str = "demo") -> None:
    page.goto(url)
    page.get_by_role("textbox", name="Username").fill(name)
    page.get_by_role("textbox", name="Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    page.get_by_text(f"{name}").first.wait_for(timeout=30_000)
    wait_until(lambda: login_cookie(page.context), "the login cookie")  # survives a page load


ANSWER_BOX = 'iframe[src*="nmb_answer_box"]'  # the exam's answer box (ui.exam.answer_box)


def answer_box_replaced(page) -> bool:
    """The exam's answer box is gone or a new, empty one: the page has moved past a record
    (the rerun that draws the next stage or task may begin a moment after the record)."""
    frames = fresh(page).locator(ANSWER_BOX)
    try:
        return not frames.count() or frames.first.content_frame.locator("textarea").input_value(
            timeout=1_000) == ""
    except Exception:  # replaced while being read
        return False


def log_out(page) -> None:
    """Click "Log out" in the sidebar, opening the sidebar first where the page starts with it
    collapsed (/score: the images need the width). It waits for the page's run to end first,
    as the page's run sets whether the sidebar starts collapsed. (Log out is a form posted to
    the logout route, so a click during a rerun logs out all the same, single sign-on's
    redirect to the provider included: tests/browser/deploy/test_sso.py clicks it so.)"""
    settled(page)
    expand = page.locator('[data-testid="stExpandSidebarButton"]')
    if expand.count() and expand.first.is_visible():
        expand.first.click()
    page.get_by_role("button", name="Log out").click()


def canvas_pixels(frame, index: int) -> np.ndarray:
    """The grey levels of the viewer's `index`-th canvas as drawn on screen."""
    png = frame.locator("canvas").nth(index).screenshot()
    return np.asarray(Image.open(io.BytesIO(png)).convert("L"), dtype=np.float32)


def submitted_scores(database_url: str, rater: str) -> int:
    """How many scores `rater` has submitted, read from the study database at `database_url`."""
    engine = sqlalchemy.create_engine(database_url)
    try:
        with engine.connect() as c:
            return c.execute(sqlalchemy.text(
                'SELECT count(*) FROM expertscore e JOIN assignment a ON a.id = e.assignment_id '
                'JOIN "user" u ON u.id = a.rater_id WHERE e.status = \'submitted\' '
                'AND u.name = :rater'), {"rater": rater}).scalar_one()
    finally:
        engine.dispose()


def submit_a_score(page, submitted: Callable[[], int],
                   before_submit: Callable[[], None] = lambda: None) -> None:
    """On /score: choose the first level of every criterion left open and Submit (after
    `before_submit()`), until `submitted()` (the rater's count of submitted scores) has grown
    by one."""
    before = submitted()
    for _ in range(3):  # a level clicked while a rerun redraws the form is clicked again
        settled(page)
        for radio in fresh(page).locator('[data-testid="stRadio"]').all():
            if not radio.locator("input:checked").count():
                radio.locator('[data-testid="stRadioOption"]').first.click()
                settled(page)
        before_submit()
        fresh(page).get_by_role("button", name="Submit").click()
        settled(page)
        if submitted() > before:
            break
    wait_until(lambda: submitted() == before + 1, "the score submitted")


def viewer_ready(page, *, unlike: dict | None = None, labels: list[str] | None = None,
                 timeout: float = 120.0):
    """The viewer's frame and state once every series is loaded (with `unlike`, once it shows
    another item or case than that state's; with `labels`, once its series are these). A page
    keeps one viewer frame from item to item (`ui.case_panel.VIEWER_KEY`); another item of the
    same case keeps the view as it was."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for frame in page.frames:
            if "nmb_volume_viewer" not in frame.url:
                continue
            try:
                state = frame.evaluate("() => window.nmbViewer ? window.nmbViewer.state() : null")
            except Exception:  # a frame being replaced
                continue
            if (state and state["ready"] and labels in (None, [t["label"] for t in state["tiles"]])
                    and (unlike is None or (state.get("item"), state["firstDrawAt"])
                         != (unlike.get("item"), unlike["firstDrawAt"]))):
                return frame, state
        page.wait_for_timeout(200)
    raise AssertionError(f"the viewer did not load {labels or 'its series'} within {timeout} s")


#: Text in the page's header line that does not fit its box: [what, needed, room] per element
#: (text elements by scrollWidth; inputs, select boxes included, by their text's or
#: placeholder's width in their font). The header is the page's first row of columns.
HEADER_OVERFLOW = """() => {
  const header = document.querySelector('[data-testid="stMain"] [data-testid="stHorizontalBlock"]');
  const ctx = document.createElement('canvas').getContext('2d');
  const cut = [];
  for (const el of header.querySelectorAll('*')) {
    if (el.clientWidth <= 2) continue;  // visually hidden text for screen readers
    if (el.tagName === 'INPUT') {
      const cs = getComputedStyle(el);
      ctx.font = cs.font;
      const text = el.value || el.placeholder || '';
      const room = el.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
      if (ctx.measureText(text).width > room + 0.5) cut.push([text, ctx.measureText(text).width, room]);
    } else if ((Array.from(el.childNodes).some((n) => n.nodeType === 3 && n.textContent.trim())
                || getComputedStyle(el).textOverflow === 'ellipsis')  // (a title cut with "…")
               && el.scrollWidth > el.clientWidth) {
      cut.push([el.textContent, el.scrollWidth, el.clientWidth]);
    }
  }
  return cut;
}"""
