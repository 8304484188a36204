"""The login throttle counts the address the server can vouch for, in Chromium against the real
server (`serve.py` under `streamlit run`, uvicorn in front): the TCP peer, and the client named
in X-Forwarded-For only when the peer is a trusted proxy (`NMB_TRUSTED_PROXIES`)."""

import contextlib
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from sqlmodel import Session, select

from db.engine import engine_for, upgrade
from db.models import LoginFailure
from tests.browser.conftest import streamlit_app, wait_until

pytestmark = pytest.mark.browser


def _failed_login(browser, url: str, name: str) -> None:
    """A wrong password for `name`, typed in a browser at `url`."""
    context = browser.new_context()
    page = context.new_page()
    page.goto(url)
    page.get_by_role("textbox", name="Username").fill(name)
    page.get_by_role("textbox", name="Password").fill("wrong")
    page.get_by_role("button", name="Log in").click()
    page.get_by_text("Unknown user name or wrong password.").wait_for(timeout=30_000)
    context.close()


def _clients(home: Path, name: str) -> list[str | None]:
    url = f"sqlite:///{home / 'study.db'}"
    upgrade(url)
    with Session(engine_for(url)) as s:
        return list(s.exec(select(LoginFailure.client).where(LoginFailure.name == name)))


SPOOF = {"X-Forwarded-For": "203.0.113.7", "X-NMB-Peer": "198.51.100.1"}


def test_a_local_browser_is_counted_by_its_own_address_whatever_it_claims(
        browser, tmp_path: Path) -> None:
    """From localhost the client was unknown (st.context.ip_address is None), and uvicorn
    believed any X-Forwarded-For a local connection sent."""
    spoof = "\r\n".join(f"{k}: {v}" for k, v in SPOOF.items()).encode()
    with streamlit_app(tmp_path, env={"NMB_TRUSTED_PROXIES": ""}) as url, _proxy(url, spoof) as via:
        _failed_login(browser, via, "spoof-1")
        wait_until(lambda: _clients(tmp_path, "spoof-1"), "the failure counted")
        assert _clients(tmp_path, "spoof-1") == ["127.0.0.1"]


@contextlib.contextmanager
def _proxy(url: str, header: bytes) -> Iterator[str]:
    """A proxy on 127.0.0.1 in front of `url` that adds `header` to the first request of each
    connection (the page's WebSocket handshake among them), as a reverse proxy appends
    X-Forwarded-For; Chromium does not send a context's extra headers on a WebSocket."""
    target = urlsplit(url)
    listener = socket.create_server(("127.0.0.1", 0))

    def pipe(src: socket.socket, dst: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := src.recv(65536):
                dst.sendall(data)
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)

    def serve(client: socket.socket) -> None:
        head = b""
        while b"\r\n\r\n" not in head and (chunk := client.recv(65536)):
            head += chunk
        first, _, rest = head.partition(b"\r\n")
        upstream = socket.create_connection((target.hostname, target.port))
        upstream.sendall(first + b"\r\n" + header + b"\r\n" + rest)
        threading.Thread(target=pipe, args=(upstream, client), daemon=True).start()
        pipe(client, upstream)

    def accept() -> None:
        with contextlib.suppress(OSError):
            while True:
                threading.Thread(target=serve, args=(listener.accept()[0],), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}{target.path}"
    finally:
        listener.close()


def test_behind_a_trusted_proxy_the_client_it_names_is_counted(browser, tmp_path: Path) -> None:
    """A proxy on 127.0.0.1 appends the client's address: the right-most address it appended is
    the client, what was left of it (written by the client) is not."""
    xff = b"X-Forwarded-For: 198.51.100.1, 203.0.113.7\r\nX-NMB-Peer: 198.51.100.2"
    with (streamlit_app(tmp_path, env={"NMB_TRUSTED_PROXIES": "127.0.0.1, ::1"}) as url,
          _proxy(url, xff) as proxied):
        _failed_login(browser, proxied, "proxied-1")
        wait_until(lambda: _clients(tmp_path, "proxied-1"), "the failure counted")
        assert _clients(tmp_path, "proxied-1") == ["203.0.113.7"]
