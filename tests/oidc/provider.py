"""A local OpenID Connect provider for the single sign-on tests, in composable pieces.

`oidc_provider(redirect_uris, identities)` starts `oidc-provider` (npm, `provider.mjs`; a
certified OpenID Provider library) on a free loopback port with one confidential client
registered for `redirect_uris`, and yields its issuer and client; `write_auth_secrets(...)`
writes the `[auth]` section that points an app served at a base URL (any scheme, host and
path prefix) at it. The app reads the file through Streamlit's `secrets.files` option
(`secrets_env`). `sign_on` and `sign_out_at_provider` drive Chromium (Playwright) through the
provider's pages. Without Node or `npm ci --prefix tests/oidc` a test skips, or fails with
NMB_REQUIRE_SERVICES=1 (`tests.services.require`).
"""

import contextlib
import json
import secrets
import shutil
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from tests.services import free_port, require

HERE = Path(__file__).resolve().parent
CLIENT_ID = "nmb-studio"


@dataclass(frozen=True)
class Identity:
    """A person at the provider: `login` is typed into its login form (any password); their
    ID tokens are valid for `id_token_ttl` seconds."""

    login: str
    email: str
    name: str
    email_verified: bool = True
    id_token_ttl: int = 3600


@dataclass(frozen=True)
class Provider:
    issuer: str
    client_id: str
    client_secret: str

    @property
    def metadata_url(self) -> str:
        return f"{self.issuer}/.well-known/openid-configuration"


def callback_url(base_url: str) -> str:
    """The app's redirect URI (`st.login` answers on `oauth2callback` under the base URL)."""
    return f"{base_url.rstrip('/')}/oauth2callback"


def provider_available() -> tuple[bool, str]:
    if shutil.which("node") is None:
        return False, "Node.js not installed (apt-get install nodejs npm)"
    if not (HERE / "node_modules" / "oidc-provider").is_dir():
        return False, "the OpenID Connect provider is not installed (npm ci --prefix tests/oidc)"
    return True, ""


@contextlib.contextmanager
def oidc_provider(redirect_uris: Sequence[str], identities: Sequence[Identity]
                  ) -> Iterator[Provider]:
    """The provider on a free loopback port, its client allowed to return to `redirect_uris`
    (after login and after logout), knowing `identities`; stopped on exit."""
    require(*provider_available())
    port = free_port()
    provider = Provider(f"http://127.0.0.1:{port}", CLIENT_ID, secrets.token_urlsafe(24))
    with tempfile.TemporaryDirectory(prefix="nmb-oidc-") as tmp:
        config = Path(tmp) / "config.json"
        config.write_text(json.dumps({
            "port": port,
            "client": {"client_id": provider.client_id, "client_secret": provider.client_secret,
                       "redirect_uris": list(redirect_uris),
                       "post_logout_redirect_uris": list(redirect_uris)},
            "accounts": {i.login: {k: v for k, v in asdict(i).items() if k != "login"}
                         for i in identities}}))
        log = Path(tmp) / "log"
        with log.open("wb") as out:
            proc = subprocess.Popen(["node", str(HERE / "provider.mjs"), str(config)], cwd=HERE,
                                    stdout=out, stderr=subprocess.STDOUT)
        try:
            _wait_for(provider.metadata_url, proc, log)
            yield provider
        finally:
            proc.terminate()
            proc.wait(timeout=10)


def _wait_for(url: str, proc: subprocess.Popen, log: Path) -> None:
    for _ in range(150):
        if proc.poll() is not None:
            break
        try:
            urllib.request.urlopen(url, timeout=1)
            return
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError(f"the OpenID Connect provider did not start: {log.read_text()[-2000:]}")


def write_auth_secrets(directory: Path, provider: Provider, *, base_url: str) -> Path:
    """`directory/secrets.toml` with the `[auth]` section of an app served at `base_url`
    (as docs/sso.md lists it); returns its path."""
    path = directory / "secrets.toml"
    path.write_text(
        "[auth]\n"
        f"redirect_uri = {json.dumps(callback_url(base_url))}\n"
        f"cookie_secret = {json.dumps(secrets.token_urlsafe(32))}\n"
        f"client_id = {json.dumps(provider.client_id)}\n"
        f"client_secret = {json.dumps(provider.client_secret)}\n"
        f"server_metadata_url = {json.dumps(provider.metadata_url)}\n"
        'client_kwargs = { prompt = "login" }\n')
    return path


def secrets_env(path: Path) -> dict[str, str]:
    """The environment that makes `streamlit run` read its secrets from `path` alone."""
    return {"STREAMLIT_SECRETS_FILES": str(path)}


def sign_on(page, app_url: str, provider: Provider, identity: Identity,
            delay_return: float = 0) -> None:
    """In Playwright's `page`: click single sign-on on the app at `app_url`, log in at the
    provider's form as `identity` and come back to the app (the returning page's connection
    to the app, and so its first run, held back `delay_return` seconds). The connection is
    held, not the page's request: Playwright does not route a request a redirect made, and
    the provider's redirect to the app's callback and the callback's to the app are both."""
    from tests.browser.conftest import settled

    app_url = app_url.rstrip("/")
    page.goto(app_url + "/")
    settled(page)  # the button's click reaches the server
    page.get_by_role("button", name="Log in with single sign-on").click()
    _wait_for_url(page, f"{provider.issuer}/**", "the provider's login form")
    if delay_return:
        page.route_web_socket("**/_stcore/stream",
                              lambda ws: (time.sleep(delay_return), ws.connect_to_server()))
    page.locator('input[name="login"]').fill(identity.login)
    page.locator('input[name="password"]').fill("any password")
    page.get_by_role("button", name="Sign-in").click()
    _wait_for_url(page, f"{app_url}/**", "back at the app")
    settled(page)


def sign_out_at_provider(page, provider: Provider) -> None:
    """After the app's logout: the provider asks before ending its session; then back at the
    app's login page."""
    _wait_for_url(page, f"{provider.issuer}/**", "the provider's sign-out page")
    page.get_by_role("button", name="Yes, sign me out").click()
    page.get_by_role("button", name="Log in with single sign-on").wait_for(timeout=30_000)


def _wait_for_url(page, pattern: str, what: str) -> None:
    """Wait a minute for the page to reach `pattern`; else fail saying where it is instead."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_url(pattern, timeout=60_000)
    except PlaywrightTimeout:
        text = page.locator("body").inner_text(timeout=5_000)[:500]
        raise AssertionError(f"not {what} within a minute: at {page.url}: {text!r}") from None
