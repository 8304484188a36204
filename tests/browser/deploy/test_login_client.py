"""The login throttle counts the address the server can vouch for, in Chromium against the real
server (`serve.py` under `streamlit run`, uvicorn in front): the TCP peer, and the client named
in X-Forwarded-For only when the peer is a trusted proxy (`NMB_TRUSTED_PROXIES`)."""

from pathlib import Path

import pytest
from sqlmodel import Session, select

from db.engine import engine_for, upgrade
from db.models import LoginFailure
from tests.browser.conftest import streamlit_app, wait_until

pytestmark = pytest.mark.browser


def _failed_login(browser, url: str, name: str, headers: dict[str, str]) -> None:
    """A wrong password for `name` from a browser that sends `headers` with every request
    (the page's WebSocket included)."""
    context = browser.new_context(extra_http_headers=headers)
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
    with streamlit_app(tmp_path, env={"NMB_TRUSTED_PROXIES": ""}) as url:
        _failed_login(browser, url, "spoof-1", SPOOF)
        wait_until(lambda: _clients(tmp_path, "spoof-1"), "the failure counted")
        assert _clients(tmp_path, "spoof-1") == ["127.0.0.1"]


def test_behind_a_trusted_proxy_the_client_it_names_is_counted(browser, tmp_path: Path) -> None:
    """The browser plays the proxy on 127.0.0.1: the right-most address it appended is the
    client, what was left of it (written by the client) is not."""
    with streamlit_app(tmp_path, env={"NMB_TRUSTED_PROXIES": "127.0.0.1, ::1"}) as url:
        _failed_login(browser, url, "proxied-1", {
            "X-Forwarded-For": "198.51.100.1, 203.0.113.7", "X-NMB-Peer": "198.51.100.2"})
        wait_until(lambda: _clients(tmp_path, "proxied-1"), "the failure counted")
        assert _clients(tmp_path, "proxied-1") == ["203.0.113.7"]
