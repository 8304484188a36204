"""Single sign-on as a hospital publishes the app: under `/nmb/` behind nginx terminating TLS
(tests/proxy.py), against the local OpenID Connect provider (tests/oidc). Chromium signs on
over https, lands on the expert's page, and logout ends the session and the provider's."""

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlmodel import Session

from db.engine import engine_for
from db.users import add_user
from tests.browser.conftest import log_out, login_cookie, streamlit_app, wait_until
from tests.oidc.provider import (
    Identity,
    Provider,
    callback_url,
    oidc_provider,
    secrets_env,
    sign_on,
    sign_out_at_provider,
    write_auth_secrets,
)
from tests.proxy import PREFIX, nginx_proxy, require_nginx
from tests.services import free_port

pytestmark = [pytest.mark.browser, pytest.mark.oidc, pytest.mark.nginx]

EXPERT = Identity("dr-known", "sso.expert@hospital.example", "Dr Known")


@pytest.fixture(scope="module")
def published(home: Path, tmp_path_factory: pytest.TempPathFactory
              ) -> Iterator[tuple[str, Provider]]:
    """The app's public https URL under the prefix, and the provider it signs on with."""
    require_nginx()
    with Session(engine_for(f"sqlite:///{home / 'study.db'}")) as s:
        add_user(s, name="sso-expert", role="expert", password="unused-password",
                 email=EXPERT.email)
        s.commit()
    port = free_port()  # nginx's: the redirect URI names it before anything starts
    public = f"https://127.0.0.1:{port}{PREFIX.rstrip('/')}"
    with oidc_provider([callback_url(public)], [EXPERT]) as provider:
        secrets = write_auth_secrets(tmp_path_factory.mktemp("sso"), provider, base_url=public)
        with streamlit_app(home, env={**secrets_env(secrets), "NMB_TRUSTED_PROXIES": "127.0.0.1"},
                           args=["--server.baseUrlPath", PREFIX.strip("/")]) as app, \
                nginx_proxy(app, port=port):
            yield public, provider


def test_single_sign_on_over_https_under_the_prefix(browser, published) -> None:
    public, provider = published
    ctx = browser.new_context(ignore_https_errors=True)  # nginx's self-signed certificate
    page = ctx.new_page()
    sign_on(page, public, provider, EXPERT)
    page.get_by_role("heading", name="Score rationales").wait_for(timeout=30_000)
    assert page.url.startswith(public + "/")
    wait_until(lambda: login_cookie(ctx), "the login cookie")
    [cookie] = [c for c in ctx.cookies() if c["name"] == "nmb_login"]
    assert cookie["secure"] and cookie["path"] == PREFIX.rstrip("/")
    log_out(page)
    sign_out_at_provider(page, provider)
    assert page.url.startswith(public + "/")
    wait_until(lambda: not any(c["name"] == "_streamlit_user" for c in ctx.cookies()),
               "the single sign-on cookie cleared")
    ctx.close()
