"""Who gets images and who may frame the app, against the real server in Chromium: the volume
route answers a page's own requests and nothing else (no cookie, another account's cookie,
a cookie after logout), and a page on another port cannot frame the app."""

import http.server
import threading
import urllib.error
import urllib.request

import pytest

from tests.browser.conftest import log_out, login, login_cookie
from tests.services import free_port

pytestmark = pytest.mark.browser


def _status(url: str, cookie: str | None = None) -> int:
    headers = {"Cookie": f"nmb_login={cookie}"} if cookie else {}
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers)) as answer:
            answer.read()
            return answer.status
    except urllib.error.HTTPError as refused:
        return refused.code


def _viewer_downloads(browser, url: str, name: str, heading: str):
    """A logged-in page of `name` and the volume answers its viewer received."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    answers: list = []
    page.on("response", lambda r: "/nmb/volumes/" in r.url and answers.append(r))
    login(page, url, name)
    page.get_by_role("heading", name=heading).wait_for(timeout=30_000)
    for _ in range(600):  # (Playwright delivers events while it waits, not in time.sleep)
        if answers:
            break
        page.wait_for_timeout(200)
    assert answers, f"{name}'s viewer downloaded no volume"
    return context, page, answers


def test_volumes_reach_their_page_only_and_stop_at_logout(browser, app_url: str) -> None:
    expert, page, answers = _viewer_downloads(browser, app_url, "demo-expert1",
                                              "Score rationales")
    assert all(a.status == 200 for a in answers)  # the page's own requests are answered
    url, cookie = answers[0].url, login_cookie(expert)
    assert _status(url, cookie) == 200
    assert _status(url) == 403  # no cookie
    student, student_page, student_answers = _viewer_downloads(
        browser, app_url, "demo-student", "Exam")
    assert all(a.status == 200 for a in student_answers)  # an exam taker sees the exam's case
    assert _status(url, login_cookie(student)) == 403  # the expert's URL, the student's cookie
    student.close()

    log_out(page)  # from /score, whose sidebar starts collapsed
    page.get_by_role("textbox", name="Password").wait_for(timeout=30_000)
    assert _status(url, cookie) == 403  # the cookie of a login that has ended
    expert.close()


def test_every_answer_forbids_framing_by_another_origin(browser, app_url: str) -> None:
    """A logged-in expert's browser opens a page served from another port of the same host
    that frames `/score` and the viewer's component file: Chromium refuses both frames (the
    cookie would be sent: `SameSite` does not separate ports), while the app itself still
    frames its own component."""
    for path in ("/", "/score", "/_stcore/health"):
        with urllib.request.urlopen(app_url + path) as answer:
            assert answer.headers["X-Frame-Options"] == "DENY", path
            assert answer.headers["Content-Security-Policy"] == "frame-ancestors 'none'", path
            assert answer.headers["Referrer-Policy"] == "no-referrer", path
            assert answer.headers["X-Content-Type-Options"] == "nosniff", path

    context, app_page, _ = _viewer_downloads(browser, app_url, "demo-expert1",
                                             "Score rationales")
    [component] = {f.url for f in app_page.frames if "nmb_volume_viewer" in f.url}
    with urllib.request.urlopen(component) as answer:
        assert answer.headers["X-Frame-Options"] == "SAMEORIGIN"
        assert answer.headers["Content-Security-Policy"] == "frame-ancestors 'self'"
    port = free_port()
    page_html = "".join(f'<iframe src="{src}" width="800" height="600"></iframe>'
                        for src in (f"{app_url}/score", component))

    class Framer(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(page_html.encode())

        def log_message(self, *args) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Framer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        page = context.new_page()  # the same browser, logged in
        page.goto(f"http://127.0.0.1:{port}/")
        page.wait_for_load_state("load")
        frames = [f for f in page.frames if f != page.main_frame]
        assert len(frames) == 2
        for frame in frames:  # Chromium refuses the documents: each frame holds its error page
            assert frame.url.startswith("chrome-error://"), frame.url
            assert frame.locator('[data-testid="stApp"], canvas').count() == 0
        page.close()
    finally:
        server.shutdown()
        context.close()


def test_the_agent_api_is_off(app_url: str) -> None:
    """Streamlit's agent API (a non-browser client driving the app) is pinned off in
    .streamlit/config.toml: the interaction route answers `not_available` without running
    anything."""
    request = urllib.request.Request(app_url + "/_stcore/agent/interact", method="POST",
                                     data=b'{"tool": "snapshot"}',
                                     headers={"Content-Type": "application/json"})
    try:
        urllib.request.urlopen(request)
        body = b""
    except urllib.error.HTTPError as e:
        body = e.read()
    assert b"not_available" in body
