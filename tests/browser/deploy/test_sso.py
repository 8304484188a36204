"""Single sign-on for real, in Chromium: `st.login` against a local OpenID Connect provider
(`oidc-provider`, tests/oidc). An identity logs in as the account with its e-mail (ignoring
case) and lands on its role's page; an identity without an account, or with a disabled one,
is refused in one line and gets no session; logout ends the session: the login token is
revoked, Streamlit's identity cookie cleared and the provider's session ended; an identity
whose ID token has expired must sign on again."""

import contextlib
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlmodel import Session, func, select

from db.engine import engine_for
from db.models import LoginToken, User
from db.users import add_user, disable_user, set_email
from tests.browser.conftest import (
    fresh,
    log_out,
    login_cookie,
    settled,
    streamlit_app,
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
from tests.services import free_port

pytestmark = [pytest.mark.browser, pytest.mark.oidc]

EXPERT = Identity("dr-known", "SSO.Expert@Hospital.example", "Dr Known")  # the account: lower-case
STRANGER = Identity("dr-stranger", "stranger@hospital.example", "Dr Stranger")
GONE = Identity("dr-gone", "gone@hospital.example", "Dr Gone")
BRIEF = Identity("dr-brief", "sso.expert@hospital.example", "Dr Known", id_token_ttl=1)
SCORER = Identity("dr-scorer", "scorer@hospital.example", "Dr Scorer")  # demo-expert1: a queue
SSO_COOKIE = "_streamlit_user"  # st.login's identity cookie
PROVIDER_SESSION = "_session"  # oidc-provider's session (cookies do not tell ports apart)
RUNNING = '[data-testid="stApp"][data-test-script-state="running"]'  # a page run under way
SSO_BUTTON = b"Log in with single sign-on"


@dataclass
class SsoApp:
    url: str
    home: Path
    provider: Provider


def _db(home: Path) -> Session:
    return Session(engine_for(f"sqlite:///{home / 'study.db'}"), expire_on_commit=False)


@pytest.fixture(scope="module")
def sso(home: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SsoApp]:
    """The app with `[auth]` pointing at the provider; accounts for the expert's and the
    disabled identity's e-mails (none for the stranger's)."""
    with _db(home) as s:
        add_user(s, name="sso-expert", role="expert", password="unused-password",
                 email=EXPERT.email.lower())
        add_user(s, name="sso-gone", role="student", password="unused-password", email=GONE.email)
        disable_user(s, name="sso-gone")
        set_email(s, name="demo-expert1", email=SCORER.email)
        s.commit()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with oidc_provider([callback_url(base)], [EXPERT, STRANGER, GONE, BRIEF, SCORER]) as provider:
        secrets = write_auth_secrets(tmp_path_factory.mktemp("sso"), provider, base_url=base)
        with streamlit_app(home, env=secrets_env(secrets), port=port) as url:
            yield SsoApp(url, home, provider)


def _cookie(context, name: str) -> str | None:
    return next((c["value"] for c in context.cookies() if c["name"] == name), None)


def _tokens(home: Path, name: str) -> int:
    with _db(home) as s:
        return s.exec(select(func.count()).select_from(LoginToken).join(User)
                      .where(User.name == name)).one()


def test_an_identity_logs_in_as_its_account_until_logout(browser, sso: SsoApp) -> None:
    ctx = browser.new_context()
    page = ctx.new_page()
    sign_on(page, sso.url, sso.provider, EXPERT)
    page.get_by_role("heading", name="Score rationales").wait_for(timeout=30_000)  # an expert's
    wait_until(lambda: login_cookie(ctx), "the login cookie")
    assert _cookie(ctx, SSO_COOKIE) and _cookie(ctx, PROVIDER_SESSION)
    assert _tokens(sso.home, "sso-expert") == 1
    page.reload()  # a new Streamlit session: still the expert
    page.get_by_role("heading", name="Score rationales").wait_for(timeout=30_000)

    log_out(page)
    sign_out_at_provider(page, sso.provider)
    assert _tokens(sso.home, "sso-expert") == 0  # the login token is revoked
    wait_until(lambda: not _cookie(ctx, SSO_COOKIE), "the single sign-on cookie cleared")
    assert not _cookie(ctx, PROVIDER_SESSION)  # the provider's session ended too
    page.goto(f"{sso.url}/score")
    settled(page)
    page.get_by_role("button", name="Log in with single sign-on").wait_for(timeout=30_000)
    assert page.get_by_role("heading", name="Score rationales").count() == 0
    ctx.close()


@contextlib.contextmanager
def _writes_held(home: Path) -> Iterator[None]:
    """The study database's write lock held by the test: an app run that saves waits (its
    busy timeout is 30 s) until the block ends."""
    db = sqlite3.connect(home / "study.db", isolation_level=None)
    try:
        db.execute("BEGIN IMMEDIATE")
        yield
        db.execute("ROLLBACK")
    finally:
        db.close()


def _scoring_page(browser, sso: SsoApp):
    """SCORER signed on at /score, the sidebar open: the context, the page, the levels of the
    rubric form's first field (a click saves the draft in a rerun), the Log out button and the
    page's websockets."""
    ctx = browser.new_context()
    page = ctx.new_page()
    sockets = []
    page.on("websocket", lambda ws: sockets.append(ws))
    sign_on(page, sso.url, sso.provider, SCORER)
    level = fresh(page).locator('[data-testid="stRadio"]').first.locator(
        '[data-testid="stRadioOption"]')
    level.first.wait_for(timeout=60_000)
    page.locator('[data-testid="stExpandSidebarButton"]').click()  # /score starts collapsed
    logout = page.get_by_role("button", name="Log out")
    logout.wait_for(timeout=30_000)
    return ctx, page, level, logout, sockets


def _wait_in_page(page, condition, what: str, timeout: float = 30.0) -> None:
    """Wait for `condition()` while a navigation of `page` is pending, letting Playwright deliver
    the page's events (its locators and evaluate would wait for the navigation to finish)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} within {timeout} s")
        page.wait_for_timeout(50)


def _provider_session_ended(ctx, page, sso: SsoApp) -> None:
    """The browser reaches the provider's end-session page, and after it every login is over:
    the provider's session, Streamlit's identity cookie and the app's login token."""
    sign_out_at_provider(page, sso.provider)
    wait_until(lambda: not _cookie(ctx, SSO_COOKIE), "the single sign-on cookie cleared")
    assert not _cookie(ctx, PROVIDER_SESSION)  # the provider's session ended
    assert _tokens(sso.home, "demo-expert1") == 0  # the app's login revoked
    assert login_cookie(ctx) is None


def test_a_logout_clicked_while_a_rerun_draws_the_page_ends_the_providers_session(
        browser, sso: SsoApp) -> None:
    """Log out clicked while a rerun is running: a level of the rubric form is clicked, and
    the rerun it starts waits to save the draft (the test holds the database's write lock)
    until Log out has been clicked and its form posted. The logout is a navigation, not a
    script message a new run could drop (`ui.server.logout_route`), so the app's login and the
    provider's session both end whichever of the two the server finishes first."""
    ctx, page, level, logout, _ = _scoring_page(browser, sso)
    with _writes_held(sso.home):
        level.nth(1).click()  # a rerun, held while it saves the draft...
        page.wait_for_selector(RUNNING, state="attached", timeout=30_000)
        with page.expect_request(f"{sso.url}/nmb/logout"):
            logout.click(no_wait_after=True)  # ...and Log out clicked and posted meanwhile
    _provider_session_ended(ctx, page, sso)
    ctx.close()


def test_a_click_landing_right_after_the_logout_does_not_stop_the_providers_logout(
        browser, sso: SsoApp) -> None:
    """Another click lands after the logout, while the browser is on its way to the provider:
    the logout's answer and the next step, Streamlit's /auth/logout (which clears its identity
    cookie), are fetched in the browser's context while its page waits, and the page's next
    step, to the provider's end-session endpoint, waits until the run the click starts has
    ended the page's session. That run sends no redirect of its own (it would replace the
    navigation and, the identity cookie gone, land on the login page, the provider's session
    kept), nor signs on again with the identity the session still holds; the browser reaches
    the provider's end-session endpoint."""
    ctx, page, level, logout, sockets = _scoring_page(browser, sso)
    held = []

    def hold(route) -> None:  # the POST reaches the server; its answer waits in the browser
        held.append((route, route.fetch(max_redirects=0)))

    page.route(f"{sso.url}/nmb/logout", hold)
    level.nth(2).scroll_into_view_if_needed()
    other = level.nth(2).bounding_box()  # (a locator's click would wait for the navigation)
    logout.click(no_wait_after=True)
    _wait_in_page(page, lambda: held, "the logout posted")
    route, answer = held[0]
    assert answer.status == 303 and answer.headers["location"] == "/auth/logout"
    assert _tokens(sso.home, "demo-expert1") == 0  # the login has ended on the server
    streamlit_logout = ctx.request.get(sso.url + answer.headers["location"], max_redirects=0)
    to_provider = streamlit_logout.headers["location"]
    assert to_provider.startswith(f"{sso.provider.issuer}/")
    assert not _cookie(ctx, SSO_COOKIE)  # Streamlit's identity cookie is gone already
    received = []  # what the server sends the page (its document is kept until the answer)
    sockets[-1].on("framereceived", lambda payload: received.append(payload))
    page.mouse.click(other["x"] + other["width"] / 2, other["y"] + other["height"] / 2)
    _wait_in_page(page, lambda: any(SSO_BUTTON in bytes(p, "utf-8") if isinstance(p, str)
                                    else SSO_BUTTON in p for p in received),
                  "the page's run ended its session and offers single sign-on, not signed on")
    route.fulfill(status=303, headers={"Location": to_provider})  # on to the provider
    _provider_session_ended(ctx, page, sso)
    ctx.close()


@pytest.mark.parametrize(("identity", "message"), [
    (STRANGER, "No account has the e-mail stranger@hospital.example; ask an admin to add it."),
    (GONE, "The account for gone@hospital.example is disabled; ask an admin."),
])
def test_an_identity_without_an_enabled_account_is_refused(
        browser, sso: SsoApp, identity: Identity, message: str) -> None:
    ctx = browser.new_context()
    page = ctx.new_page()
    with _db(sso.home) as s:
        tokens = s.exec(select(func.count()).select_from(LoginToken)).one()
    sign_on(page, sso.url, sso.provider, identity)
    page.get_by_text(message, exact=True).wait_for(timeout=30_000)
    assert login_cookie(ctx) is None
    with _db(sso.home) as s:
        assert s.exec(select(func.count()).select_from(LoginToken)).one() == tokens  # no session
    page.goto(f"{sso.url}/score")  # no page opens either
    page.get_by_text(message, exact=True).wait_for(timeout=30_000)
    assert page.get_by_role("button", name="Log out", exact=True).count() == 0

    page.get_by_role("button", name="Log out of single sign-on").click()  # to sign on anew
    sign_out_at_provider(page, sso.provider)
    wait_until(lambda: not _cookie(ctx, SSO_COOKIE), "the single sign-on cookie cleared")
    assert not _cookie(ctx, PROVIDER_SESSION)
    assert page.get_by_text(message, exact=True).count() == 0
    ctx.close()


def test_an_identity_whose_id_token_expired_must_sign_on_again(browser, sso: SsoApp) -> None:
    """Streamlit keeps the identity for 30 days; a session opens only while its ID token is
    valid (here 1 s, and the page back from the provider connects to the app 3 s later)."""
    ctx = browser.new_context()
    page = ctx.new_page()
    tokens = _tokens(sso.home, "sso-expert")
    sign_on(page, sso.url, sso.provider, BRIEF, delay_return=3)
    page.get_by_role("button", name="Log in with single sign-on").wait_for(timeout=30_000)
    assert _cookie(ctx, SSO_COOKIE)  # Streamlit still holds the identity...
    assert login_cookie(ctx) is None and _tokens(sso.home, "sso-expert") == tokens  # ...unused
    assert page.get_by_role("heading", name="Score rationales").count() == 0
    ctx.close()
