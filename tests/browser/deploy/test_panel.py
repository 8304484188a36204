"""A panel's deployment end to end (issue 29): the study on PostgreSQL, the app under `/nmb/`
(`--server.baseUrlPath nmb`) behind nginx terminating TLS with a self-signed certificate
(`deploy/nginx.conf`, tests/proxy.py), single sign-on against the local OpenID Connect
provider (tests/oidc). Chromium signs on by SSO over https as an expert mapped by e-mail,
opens /score, sees the viewer's canvas drawn from volumes fetched under the prefix and submits
a score; the volume route answers under the prefix only to the logged-in user; logout ends the
app's session and the provider's."""

import os
import subprocess
import sys
from collections.abc import Iterator
from typing import NamedTuple

import pytest

from tests.browser.conftest import (
    ROOT,
    canvas_pixels,
    log_out,
    streamlit_app,
    submit_a_score,
    submitted_scores,
    viewer_ready,
    wait_until,
)
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
from tests.proxy import PREFIX, Proxy, https_get, nginx_proxy, require_nginx
from tests.services import free_port

pytestmark = [pytest.mark.browser, pytest.mark.oidc, pytest.mark.nginx, pytest.mark.postgres]

EXPERT = Identity("dr-panel", "Panel.Expert@Hospital.example", "Dr Panel")


class Panel(NamedTuple):
    public: str  # https://127.0.0.1:PORT/nmb
    proxy: Proxy
    provider: Provider
    database_url: str


def _nmb(*args: str, env: dict[str, str]) -> None:
    subprocess.run([sys.executable, "-m", "cli", *args], cwd=ROOT, env=env, check=True,
                   capture_output=True, timeout=900)


@pytest.fixture(scope="module")
def panel(postgres_server, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Panel]:
    """The demo study on a new PostgreSQL database, its first expert's account given the
    identity's e-mail, published as a hospital would."""
    require_nginx()
    home = tmp_path_factory.mktemp("panel-home")
    database_url = postgres_server.create_database()
    study = {"NMB_HOME": str(home), "NMB_DATABASE_URL": database_url}
    _nmb("demo", "--resolution", "2", env={**os.environ, **study})
    _nmb("users", "email", "demo-expert1", EXPERT.email, env={**os.environ, **study})
    port = free_port()  # nginx's: the redirect URI names it before anything starts
    public = f"https://127.0.0.1:{port}{PREFIX.rstrip('/')}"
    with oidc_provider([callback_url(public)], [EXPERT]) as provider:
        secrets = write_auth_secrets(tmp_path_factory.mktemp("sso"), provider, base_url=public)
        env = {**secrets_env(secrets), "NMB_TRUSTED_PROXIES": "127.0.0.1",
               "NMB_DATABASE_URL": database_url}
        with streamlit_app(home, env=env, args=["--server.baseUrlPath", PREFIX.strip("/")]) \
                as app, nginx_proxy(app, port=port) as proxy:
            yield Panel(public, proxy, provider, database_url)


def test_an_expert_signs_on_over_https_under_the_prefix_and_scores(browser, panel: Panel
                                                                    ) -> None:
    context = browser.new_context(ignore_https_errors=True,  # nginx's self-signed certificate
                                  viewport={"width": 1600, "height": 1000})
    page = context.new_page()
    volumes: list = []
    page.on("response", lambda r: "/volumes/" in r.url and volumes.append(r))
    sign_on(page, panel.public, panel.provider, EXPERT)
    page.get_by_role("heading", name="Score rationales").wait_for(timeout=60_000)
    assert page.url.startswith(panel.public + "/")

    frame, _ = viewer_ready(page)
    drawn = canvas_pixels(frame, 0)
    assert (drawn > 40).mean() > 0.05 and drawn.std() > 10  # a brain, not a blank canvas
    assert volumes and all(r.status == 200 for r in volumes)
    assert all(r.url.startswith(f"{panel.public}/nmb/volumes/") for r in volumes)

    wait_until(lambda: any(c["name"] == "nmb_login" for c in context.cookies()),
               "the login cookie")
    [cookie] = [c for c in context.cookies() if c["name"] == "nmb_login"]
    assert cookie["secure"] and cookie["path"] == PREFIX.rstrip("/")
    apps = {c["name"]: c["secure"] for c in context.cookies() if c["name"].startswith("_streamlit")}
    assert "_streamlit_user" in apps and all(apps.values()), apps  # Secure through the proxy
    volume = volumes[0].url
    assert https_get(panel.proxy, volume)[0] == 403  # no login: nothing
    assert https_get(panel.proxy, volume, cookie["value"])[0] == 200
    outside = volume.replace(panel.public, panel.proxy.url, 1)  # the route without the prefix
    assert https_get(panel.proxy, outside, cookie["value"])[1].get_content_type() == "text/html"

    submit_a_score(page, lambda: submitted_scores(panel.database_url, "demo-expert1"))

    with page.expect_request(f"{panel.public}/nmb/logout") as posted:  # the route, prefixed
        log_out(page)
    assert posted.value.method == "POST"
    sign_out_at_provider(page, panel.provider)
    wait_until(lambda: not any(c["name"] == "_streamlit_user" for c in context.cookies()),
               "the single sign-on cookie cleared")
    assert not any(c["name"] == "nmb_login" for c in context.cookies())  # cleared by the route
    assert https_get(panel.proxy, volume, cookie["value"])[0] == 403  # the token is revoked
    context.close()
