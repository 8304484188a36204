"""The case viewer measured from the browser: Chromium (software WebGL2, SwiftShader) on the
1 mm demo study served by `serve.py` on a loopback port.

1. Page open to first volume drawn: from the navigation start of /score (the top page's
   `performance.timeOrigin`) to the viewer's first drawn volume (its `firstDrawAt`), in a new
   browser context (empty HTTP cache) and on reload (volumes from the browser cache). The very
   first view of the case (the server writes the browser copies) is shown once.
2. Wheel to pixels: a wheel event dispatched on the first series' canvas, until `readPixels`
   returns changed pixels (every linked series is redrawn by then), and until the next
   animation frame (on screen).
3. A rubric click's round trip: from the pointer going down on a rubric level to the end of
   the page's rerun (`data-test-script-state` back to `notRunning`), with the interactive
   viewer, with the PNG viewer and with no images ("Hidden"), in the same session.
4. The PNG viewer's slider to image: an arrow key on the slice slider until the first series'
   image changes.
5. A window/level drag: a right-button drag of 40 pointer moves on the first series, its
   duration, the preview redraws the viewer made (a CSS filter, one per animation frame at
   most, with the latest pointer position), their rate, and the exact redraw on release.
6. Scrolling to score one item with the mouse at 1280 x 800: the pixels the page scrolls (the
   sum of every scroll step) from opening the item to clicking Submit, when each question is
   brought just into view before it is clicked (a single-turn and a multi-turn item;
   target for single-turn: under 1,500 px).
Medians; the machine is shared, so figures vary from run to run.

`python -m benchmarks.bench_viewer_browser submit [REV]` (also the last part of `make bench`)
measures only what issue 44 asked for,
before and after in one run: first pixels (login done, /score opened in a new browser context,
to the first volume drawn) and Submit to the next item's first volume drawn, for the code at git
revision REV (default `BEFORE`) and for this checkout, each serving its own demo study at once,
in alternate rounds.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# `submit`'s "before": the viewer as session 17 left it (a new frame and new NiiVue instances
# for every case); `python -m benchmarks.bench_viewer_browser submit REV` compares another one.
BEFORE = "4240d71"

_WHEEL = """async ([n]) => {
  const canvas = document.querySelectorAll('canvas')[0];
  const gl = canvas.getContext('webgl2');
  const w = gl.drawingBufferWidth, h = gl.drawingBufferHeight;
  let before = new Uint8Array(w * h * 4), after = new Uint8Array(w * h * 4);
  const r = canvas.getBoundingClientRect();
  const wheel = (dy) => canvas.dispatchEvent(new WheelEvent('wheel', {deltaY: dy, bubbles: true,
    cancelable: true, clientX: r.left + r.width / 2, clientY: r.top + r.height / 2}));
  const frame = () => new Promise((done) => requestAnimationFrame(() => done()));
  wheel(100); gl.readPixels(0, 0, w, h, gl.RGBA, gl.UNSIGNED_BYTE, before);
  const pixels = [], shown = [];
  let unchanged = 0;
  for (let k = 0; k < n; k++) {
    const t0 = performance.now();
    wheel(k % 20 < 10 ? 100 : -100);
    gl.readPixels(0, 0, w, h, gl.RGBA, gl.UNSIGNED_BYTE, after);
    const t1 = performance.now();
    let same = true;
    for (let i = 0; i < after.length; i += 4) if (after[i] !== before[i]) { same = false; break; }
    if (same) unchanged++; else pixels.push(t1 - t0);
    await frame();
    shown.push(performance.now() - t0);
    [before, after] = [after, before];
    await new Promise((done) => setTimeout(done, 20));
  }
  return {pixels, shown, unchanged};
}"""

_ARM_RERUN = """() => {
  const app = document.querySelector('[data-testid="stApp"]');
  const t = window.nmbRerun = {};
  document.addEventListener('pointerdown', () => { t.start = performance.now(); },
                            {capture: true, once: true});
  let running = false;
  const watch = new MutationObserver((changes) => {
    const s = app.getAttribute('data-test-script-state');
    // a quick rerun can start and end between two callbacks: its start is in oldValue
    if (s === 'running' || changes.some((c) => c.oldValue === 'running')) running = true;
    if (running && s === 'notRunning') { t.end = performance.now(); watch.disconnect(); }
  });
  watch.observe(app, {attributes: true, attributeFilter: ['data-test-script-state'],
                      attributeOldValue: true});
}"""

_SLIDER = """([slider]) => new Promise((done) => {
  const img = document.querySelector('[data-testid="stImage"] img');
  const src = img.getAttribute('src');
  const t0 = performance.now();
  const poll = () => {
    const now = document.querySelector('[data-testid="stImage"] img');
    if (now && now.getAttribute('src') !== src) done(performance.now() - t0);
    else requestAnimationFrame(poll);
  };
  slider.dispatchEvent(new KeyboardEvent('keydown', {key: 'ArrowRight', code: 'ArrowRight',
    keyCode: 39, bubbles: true}));
  requestAnimationFrame(poll);
})"""


_ARM_SCROLL = """() => {
  const main = document.querySelector('[data-testid="stMain"]');
  const s = window.nmbScroll = window.nmbScroll || {px: 0, last: main.scrollTop};
  if (!s.armed) {
    main.addEventListener('scroll', () => { s.px += Math.abs(main.scrollTop - s.last);
                                            s.last = main.scrollTop; });
    s.armed = true;
  }
  s.px = 0; s.last = main.scrollTop;
}"""

_DRAG_DONE = """() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(
  () => { const s = window.nmbViewer.state(); done([s.dragFrames, s.dragSettle]); })))"""


def _ms(values: list[float]) -> str:
    return f"{statistics.median(values):7.0f} ms (n={len(values)})" if values else "   n/a"


def _open_to_first_volume(page, url: str) -> tuple[float, dict]:
    from tests.browser.conftest import viewer_ready

    page.goto(url + "/score")
    frame, state = viewer_ready(page, timeout=180)
    origin = page.evaluate("() => performance.timeOrigin")
    return state["firstDrawAt"] - origin, state


def _mode(page, name: str) -> None:
    page.get_by_role("radio", name=name, exact=True).click()  # the "Images" switch
    page.locator('[data-testid="stApp"][data-test-script-state="notRunning"]').wait_for()
    page.wait_for_timeout(1500)


def _rubric_clicks(page, n: int) -> list[float]:
    """Click levels 3 and 4 of the first rubric criterion in turn, after level 0 (so every timed
    click is a change and reruns the page)."""
    criteria = page.locator('[data-testid="stRadio"]').filter(  # not the PNG viewer's plane
        has=page.locator('[data-testid="stRadioOption"]').nth(4))
    levels = criteria.first.locator('[data-testid="stRadioOption"]')
    levels.nth(0).click()
    page.wait_for_timeout(3000)
    times = []
    for k in range(n):
        page.evaluate(_ARM_RERUN)
        levels.nth(3 + k % 2).click()
        page.wait_for_function("() => window.nmbRerun.end !== undefined", polling=100,
                               timeout=60_000)
        times.append(page.evaluate("() => window.nmbRerun.end - window.nmbRerun.start"))
        page.wait_for_timeout(300)
    return times


def _open_position(page, position: int) -> None:
    box = page.get_by_placeholder("Go to: position or code")
    box.fill(str(position + 1))
    box.press("Enter")
    page.locator('[data-testid="stApp"][data-test-script-state="notRunning"]').wait_for()
    page.wait_for_timeout(1500)


def _scroll_to_score(page, position: int) -> int:
    """Pixels scrolled from opening the item at `position` to clicking Submit, each question
    brought just into view (`block: nearest`) before its first level is clicked."""
    _open_position(page, position)
    page.evaluate("document.querySelector('[data-testid=\"stMain\"]').scrollTo(0, 0)")
    page.evaluate(_ARM_SCROLL)
    groups = page.locator('.st-key-nmb-rubric [data-testid="stRadio"]')
    for k in range(groups.count()):
        group = groups.nth(k)
        group.evaluate("(g) => g.scrollIntoView({block: 'nearest'})")
        group.locator('[data-testid="stRadioOption"]').first.click()
        page.locator('[data-testid="stApp"][data-test-script-state="notRunning"]').wait_for()
        page.wait_for_timeout(300)
    submit = page.get_by_role("button", name="Submit")
    submit.evaluate("(b) => b.scrollIntoView({block: 'nearest'})")
    scrolled = page.evaluate("() => window.nmbScroll.px")
    submit.click()
    page.locator('[data-testid="stApp"][data-test-script-state="notRunning"]').wait_for()
    page.wait_for_timeout(1000)
    return round(scrolled)


def _window_drag(page, frame, moves: int = 40) -> tuple[float, int, float]:
    """(ms, preview redraws, ms of the exact redraw on release) of a right-button drag of
    `moves` pointer moves on the first series."""
    box = frame.locator("canvas").first.bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    before = frame.evaluate("() => window.nmbViewer.state().dragFrames")
    page.mouse.move(x, y)
    t0 = time.perf_counter()
    page.mouse.down(button="right")
    for k in range(moves):
        page.mouse.move(x + (k % 20) * 3 - 30, y + (k % 10) * 2)
    page.mouse.up(button="right")
    frames, settle = frame.evaluate(_DRAG_DONE)
    return (time.perf_counter() - t0) * 1000, frames - before, settle


def _queue_positions(home: str) -> tuple[int | None, int | None]:
    """Queue positions of demo-expert1's first unsubmitted single-turn and multi-turn items."""
    import sqlite3

    db = sqlite3.connect(Path(home) / "study.db")
    try:
        rows = db.execute(
            "SELECT a.position, t.level FROM assignment a JOIN user u ON u.id = a.rater_id "
            "JOIN response r ON r.response_id = a.response_id JOIN task t ON t.task_id = "
            "r.task_id LEFT JOIN expertscore e ON e.assignment_id = a.id WHERE u.name = "
            "'demo-expert1' AND (e.status IS NULL OR e.status != 'submitted') "
            "ORDER BY a.position").fetchall()
    finally:
        db.close()
    single = next((p for p, level in rows if level < 3), None)
    multi = next((p for p, level in rows if level == 3), None)
    return single, multi


def main() -> None:
    from playwright.sync_api import sync_playwright

    from tests.browser.conftest import CHROMIUM, SOFTWARE_WEBGL, login, streamlit_app, viewer_ready

    with tempfile.TemporaryDirectory(prefix="nmb-bench-viewer-") as home:
        env = {**os.environ, "NMB_HOME": home}
        env.pop("NMB_DATABASE_URL", None)
        subprocess.run([sys.executable, "-m", "cli", "demo", "--resolution", "1"], cwd=ROOT,
                       env=env, check=True, capture_output=True)
        with streamlit_app(Path(home)) as url, sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=SOFTWARE_WEBGL)

            def fresh_page():
                context = browser.new_context(viewport={"width": 1280, "height": 800})
                page = context.new_page()
                login(page, url, "demo-expert1")  # returns once the login cookie is set
                return page

            shutil.rmtree(Path(home) / "viewer", ignore_errors=True)
            page = fresh_page()
            first_ever, state = _open_to_first_volume(page, url)
            case = ", ".join(f"{t['label']} {'x'.join(map(str, t['dims']))}" for t in state["tiles"])
            page.context.close()
            cold, warm = [], []
            for _ in range(5):
                page = fresh_page()
                cold.append(_open_to_first_volume(page, url)[0])
                for _ in range(2):
                    warm.append(_open_to_first_volume(page, url)[0])
                page.context.close()
            print(f"case: {case} (1 mm demo; Chromium, software WebGL2, 1280x800)")
            print("page open -> first volume drawn:")
            print(f"  first view ever (server writes browser copies):  {first_ever:7.0f} ms")
            print(f"  new browser context (empty HTTP cache):          {_ms(cold)}")
            print(f"  reload (volumes from the browser cache):         {_ms(warm)}"
                  "   target <= 1500 ms", flush=True)

            page = fresh_page()  # on /score (a reopened /score may keep a "page not found" box)
            frame, _ = viewer_ready(page, timeout=180)
            wheel = frame.evaluate(_WHEEL, [40])
            print("wheel -> changed pixels (every linked series redrawn):")
            print(f"  readPixels shows the new slice:                  {_ms(wheel['pixels'])}"
                  f"  ({wheel['unchanged']} events left pixels unchanged)")
            print(f"  next animation frame (on screen):                {_ms(wheel['shown'])}",
                  flush=True)
            drags = [_window_drag(page, frame) for _ in range(3)]
            print("window/level drag, 40 pointer moves (right button):")
            print(f"  drag duration:                                   "
                  f"{_ms([d[0] for d in drags])}")
            rate = statistics.median(d[1] / d[0] * 1000 for d in drags)
            print(f"  preview redraws per drag: {statistics.median(d[1] for d in drags):.0f} "
                  f"({rate:.1f} per second; at most one per animation frame)")
            print(f"  exact redraw on release:                         "
                  f"{_ms([d[2] for d in drags])}", flush=True)
            with_viewer = _rubric_clicks(page, 15)
            _mode(page, "Hidden")
            hidden = _rubric_clicks(page, 15)
            _mode(page, "Static")
            static = _rubric_clicks(page, 15)
            slider = page.get_by_role("slider").first.element_handle()
            png = []
            for _ in range(15):
                png.append(page.evaluate(_SLIDER, [slider]))
                page.wait_for_timeout(400)
            page.context.close()
            page = fresh_page()
            viewer_ready(page, timeout=180)
            single, multi = _queue_positions(home)
            scrolls = {name: _scroll_to_score(page, p) for name, p in
                       (("single-turn", single), ("multi-turn", multi)) if p is not None}
            browser.close()

    print("pixels scrolled to score one item with the mouse (1280x800, 1 mm demo):")
    for name, px in scrolls.items():
        target = "   target < 1500 px" if name == "single-turn" else ""
        print(f"  {name + ':':49s}{px:7d} px{target}")
    print("rubric click -> rerun done:")
    print(f"  with the interactive viewer:                     {_ms(with_viewer)}")
    print(f"  without images (Hidden):                         {_ms(hidden)}")
    print(f"  with the PNG viewer (Static):                    {_ms(static)}")
    ratio = statistics.median(with_viewer) / statistics.median(hidden)
    print(f"  interactive / hidden = {ratio:.2f} (target <= 1.2)")
    print(f"PNG viewer, slider arrow key -> new image:          {_ms(png)}")
    print("\nSubmit -> next item, before and after (`submit`):", flush=True)
    submit_main()


def _handover_items(home: str) -> list[int]:
    """Queue positions of demo-expert1's unsubmitted items whose next unsubmitted item is
    another case (so that Submit opens other images)."""
    import sqlite3

    db = sqlite3.connect(Path(home) / "study.db")
    try:
        rows = db.execute(
            "SELECT a.position, t.level, t.case_id FROM assignment a JOIN user u ON u.id = "
            "a.rater_id JOIN response r ON r.response_id = a.response_id JOIN task t ON "
            "t.task_id = r.task_id LEFT JOIN expertscore e ON e.assignment_id = a.id WHERE "
            "u.name = 'demo-expert1' AND (e.status IS NULL OR e.status != 'submitted') "
            "ORDER BY a.position").fetchall()
    finally:
        db.close()
    return [p for (p, _, case), (_, _, after) in zip(rows, rows[1:], strict=False)
            if case != after]


def _submit_to_next(page, position: int) -> float:
    """ms from Submit on the item at `position` (every question answered first, its viewer and
    the prefetch given 4 s) to the next item's first volume drawn (in the same frame, or in a
    new one where the code under test makes one per case)."""
    from tests.browser.conftest import viewer_ready

    _open_position(page, position)
    _, shown = viewer_ready(page, timeout=180)
    page.wait_for_timeout(4000)  # the rater reads: the next item's volumes may be fetched
    for group in page.locator('.st-key-nmb-rubric [data-testid="stRadio"]').all():
        group.locator('[data-testid="stRadioOption"]').first.click()
        page.locator('[data-testid="stApp"][data-test-script-state="notRunning"]').wait_for()
    page.wait_for_timeout(300)
    clicked = page.evaluate("() => performance.timeOrigin + performance.now()")
    page.get_by_role("button", name="Submit").click()
    _, state = viewer_ready(page, unlike=shown, timeout=120)
    return state["firstDrawAt"] - clicked


def _checkout(rev: str, into: Path) -> Path:
    """The code at git revision `rev`, checked out (detached) at `into`."""
    subprocess.run(["git", "worktree", "add", "--detach", str(into), rev], cwd=ROOT, check=True,
                   capture_output=True)
    return into


def submit_main(before: str = BEFORE, rounds: int = 3) -> None:
    """First pixels and Submit -> next item's images: the code at `before` and this checkout,
    each serving its own 1 mm demo study at once, measured in alternate rounds (so that the
    machine's load falls on both alike)."""
    import contextlib

    from playwright.sync_api import sync_playwright

    from tests.browser.conftest import CHROMIUM, SOFTWARE_WEBGL, login, streamlit_app

    names = (f"before ({before})", "after (this checkout)")
    figures = {name: {"first": [], "handover": []} for name in names}
    with (tempfile.TemporaryDirectory(prefix="nmb-bench-submit-") as tmp, sync_playwright() as pw,
          contextlib.ExitStack() as servers):
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=SOFTWARE_WEBGL)
        old = _checkout(before, Path(tmp) / "before")
        servers.callback(subprocess.run, ["git", "worktree", "remove", "--force", str(old)],
                         cwd=ROOT, capture_output=True)
        servers.callback(browser.close)
        sides = []
        for name, root in zip(names, (old, ROOT), strict=True):
            home = Path(tmp) / f"home-{len(sides)}"
            env = {k: v for k, v in os.environ.items() if k != "NMB_DATABASE_URL"}
            subprocess.run([sys.executable, "-m", "cli", "demo", "--resolution", "1"],
                           cwd=root, env={**env, "NMB_HOME": str(home), "PYTHONPATH": str(root)},
                           check=True, capture_output=True)
            url = servers.enter_context(streamlit_app(home, root=root))
            sides.append((name, url, _handover_items(str(home))))
        for _ in range(rounds):
            for name, url, items in sides:
                context = browser.new_context(viewport={"width": 1280, "height": 800})
                page = context.new_page()
                login(page, url, "demo-expert1")
                figures[name]["first"].append(_open_to_first_volume(page, url)[0])
                figures[name]["handover"].append(_submit_to_next(page, items.pop(0)))
                context.close()
    print("1 mm demo; Chromium, software WebGL2, 1280x800; a new browser context per round")
    print(f"{'':34s}{'first pixels (login -> /score)':>34s}{'Submit -> next item drawn':>32s}")
    for name, f in figures.items():
        print(f"{name:34s}{_ms(f['first']):>34s}{_ms(f['handover']):>32s}")
    for what, label in (("first", "first pixels"), ("handover", "Submit -> next item")):
        ratio = (statistics.median(figures[names[1]][what])
                 / statistics.median(figures[names[0]][what]))
        print(f"{label}, after / before = {ratio:.2f}")
    print("targets: first pixels <= 1500 ms; next item after Submit about 1000 ms")


if __name__ == "__main__":
    if sys.argv[1:2] == ["submit"]:
        submit_main(*sys.argv[2:3])
    else:
        main()
