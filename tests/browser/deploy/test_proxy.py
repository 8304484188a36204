"""The app as a hospital publishes it: under `/nmb/` (`--server.baseUrlPath nmb`) behind nginx
(`deploy/nginx.conf`, `tests/proxy.py`) terminating TLS with a self-signed certificate. Over
https, Chromium logs in with the password form, /score draws the viewer's canvas from volumes
fetched under the prefix, and a score is submitted (pages and websocket through the proxy);
the login cookie is `Secure`, scoped to `/nmb`; the volume route answers under the prefix only
to the logged-in user; the health endpoint answers under the prefix; a download works; an
upload above the app's cap stops at nginx."""

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from db.engine import HEAD_REVISION
from tests.browser.conftest import (
    canvas_pixels,
    login,
    streamlit_app,
    submit_a_score,
    submitted_scores,
    viewer_ready,
)
from tests.proxy import PREFIX, Proxy, https_get, nginx_proxy, require_nginx, upload_cap_mib

pytestmark = [pytest.mark.browser, pytest.mark.nginx]

@pytest.fixture(scope="module")
def proxied(home: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Proxy, Path]]:
    """The module's demo study served under /nmb/ behind nginx, which it trusts as a proxy;
    the nginx Proxy and the app's log file."""
    require_nginx()
    log = tmp_path_factory.mktemp("proxied-app") / "server.log"
    with streamlit_app(home, env={"NMB_TRUSTED_PROXIES": "127.0.0.1"},
                       args=["--server.baseUrlPath", "nmb"], log=log) as app, \
            nginx_proxy(app) as proxy:
        yield proxy, log


def test_health_redirects_and_the_upload_cap_through_the_proxy(proxied) -> None:
    proxy, log = proxied
    status, headers, body = https_get(proxy, f"{proxy.url}{PREFIX}healthz")
    assert (status, json.loads(body)) == (200, {"status": "ok", "db_revision": HEAD_REVISION})
    assert headers["Strict-Transport-Security"] == "max-age=31536000"
    assert https_get(proxy, f"{proxy.url}/healthz")[0] == 404  # outside the prefix: nothing
    status, headers, _ = https_get(proxy, f"{proxy.http_url}{PREFIX}score")
    assert (status, headers["Location"]) == (301, f"https://127.0.0.1{PREFIX}score")
    status, headers, _ = https_get(proxy, f"{proxy.url}/")
    assert (status, headers["Location"]) == (302, f"{proxy.url}{PREFIX}")

    # An upload one byte above the cap's allowance is refused by nginx before any byte is sent.
    too_big = (upload_cap_mib() + 1) * 2**20 + 1
    host, port = urlsplit(proxy.url).hostname, urlsplit(proxy.url).port
    with socket.create_connection((host, port), 10) as raw, \
            proxy.ssl_context().wrap_socket(raw, server_hostname=host) as tls:
        tls.sendall(f"PUT {PREFIX}_stcore/upload_file/x/y HTTP/1.1\r\nHost: {host}:{port}\r\n"
                    f"Content-Length: {too_big}\r\nConnection: close\r\n\r\n".encode())
        assert tls.recv(64).startswith(b"HTTP/1.1 413")

    assert "INFO nmb: serving under /nmb/ with 1 trusted proxy network(s)" in log.read_text()


def test_an_expert_scores_over_https_under_the_prefix(browser, proxied, home: Path) -> None:
    proxy, _ = proxied
    context = browser.new_context(ignore_https_errors=True, viewport={"width": 1600,
                                                                       "height": 1000})
    page = context.new_page()
    volumes: list = []
    page.on("response", lambda r: "/nmb/volumes/" in r.url and volumes.append(r))
    login(page, f"{proxy.url}{PREFIX}", "demo-expert1")
    page.get_by_role("heading", name="Score rationales").wait_for(timeout=30_000)
    assert urlsplit(page.url).path.startswith(PREFIX)

    frame, _ = viewer_ready(page)
    drawn = canvas_pixels(frame, 0)
    assert (drawn > 40).mean() > 0.05 and drawn.std() > 10  # a brain, not a blank canvas
    assert volumes and all(r.status == 200 for r in volumes)
    assert all(r.url.startswith(f"{proxy.url}{PREFIX}nmb/volumes/") for r in volumes)

    [cookie] = [c for c in context.cookies() if c["name"] == "nmb_login"]
    assert cookie["secure"] and cookie["path"] == "/nmb" and cookie["sameSite"] == "Strict"
    volume = volumes[0].url
    assert https_get(proxy, volume)[0] == 403  # no login cookie
    status, headers, _ = https_get(proxy, volume, cookie["value"])
    assert status == 200 and headers["Cache-Control"] == "private, no-cache"

    submit_a_score(page, lambda: submitted_scores(f"sqlite:///{home / 'study.db'}",
                                                  "demo-expert1"))
    context.close()


def test_a_results_download_works_under_the_prefix(browser, proxied) -> None:
    proxy, _ = proxied
    context = browser.new_context(ignore_https_errors=True, accept_downloads=True,
                                  viewport={"width": 1600, "height": 1000})
    page = context.new_page()
    login(page, f"{proxy.url}{PREFIX}", "demo-admin")
    page.goto(f"{proxy.url}{PREFIX}results")
    button = page.get_by_role("button", name="JSON")
    button.wait_for(timeout=120_000)
    with page.expect_download(timeout=60_000) as download:
        button.click()
    assert download.value.url.startswith(f"{proxy.url}{PREFIX}")  # Streamlit's media route
    results = json.loads(Path(download.value.path()).read_text())
    assert results  # the study's results, parsed
    context.close()
