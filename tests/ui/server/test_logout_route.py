"""The logout route: a form POST from a page of the login ends every session of the account
(`db.users.log_out`), clears the app's login cookie and sends the browser on to Streamlit's
`/auth/logout` (which clears its identity cookie and, with single sign-on, goes on to the
identity provider); anything else (no or a dead cookie, no or another login's check, a GET)
ends nothing and lands on the login page."""


import pytest
from sqlmodel import Session, func, select
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.testclient import TestClient

from db.engine import engine_for
from db.models import LoginToken, User
from db.users import LOGIN_COOKIE, add_user, open_login
from ui.server import logout_route
from ui.server.security_headers import SecurityHeaders


@pytest.fixture
def logins(sqlite_url: str) -> tuple[Session, dict[str, str]]:
    """ann with two logins (two browsers), bob with one."""
    s = Session(engine_for(sqlite_url), expire_on_commit=False)
    ann = add_user(s, name="ann", role="expert", password="pw-ann-long")
    bob = add_user(s, name="bob", role="expert", password="pw-bob-long")
    s.commit()
    return s, {"ann": open_login(s, ann), "ann-elsewhere": open_login(s, ann),
               "bob": open_login(s, bob)}


def _client() -> TestClient:
    app = Starlette(routes=logout_route.routes(), middleware=[Middleware(SecurityHeaders)])
    return TestClient(app, base_url="https://hospital.example", follow_redirects=False)


def _tokens(s: Session, name: str) -> int:
    s.expire_all()
    return s.exec(select(func.count()).select_from(LoginToken).join(User)
                  .where(User.name == name)).one()


def _changed(check: str) -> str:
    return check[:-1] + ("0" if check[-1] != "0" else "1")


def _post(client: TestClient, cookie: str | None, check: str | None, path: str = ""):
    client.cookies.clear()
    if cookie is not None:
        client.cookies.set(LOGIN_COOKIE, cookie)
    data = {} if check is None else {logout_route.CHECK_FIELD: check}
    return client.post(path or logout_route.logout_url(), data=data)


def test_a_logout_ends_every_session_clears_the_cookie_and_goes_to_streamlits_logout(
        logins) -> None:
    s, tokens = logins
    answer = _post(_client(), tokens["ann"], logout_route.logout_check(tokens["ann"]))
    assert answer.status_code == 303
    assert answer.headers["location"] == "/auth/logout"
    assert answer.headers["cache-control"] == "no-store"
    cookie = answer.headers["set-cookie"]
    assert cookie.startswith(f'{LOGIN_COOKIE}="";') and "Max-Age=0" in cookie
    assert "Path=/;" in cookie and "SameSite=strict" in cookie
    assert _tokens(s, "ann") == 0  # the other browser's login ended too (log_out)
    assert _tokens(s, "bob") == 1
    assert logout_route.left_by_logout(tokens["ann"])
    assert not logout_route.left_by_logout(tokens["ann-elsewhere"])


@pytest.mark.parametrize("case", ["no cookie", "dead cookie", "no check", "another login's check",
                                  "a changed check"])
def test_anything_else_ends_nothing_and_lands_on_the_login_page(logins, case: str) -> None:
    """A cross-site form (it cannot know the check of the victim's login), a stale page, a
    request without the cookie: a redirect to the login page, nothing ended, no cookie set."""
    s, tokens = logins
    ann = tokens["ann"]
    cookie, check = {
        "no cookie": (None, logout_route.logout_check(ann)),
        "dead cookie": ("x" * 43, logout_route.logout_check("x" * 43)),
        "no check": (ann, None),
        "another login's check": (ann, logout_route.logout_check(tokens["bob"])),
        "a changed check": (ann, _changed(logout_route.logout_check(ann))),
    }[case]
    answer = _post(_client(), cookie, check)
    assert answer.status_code == 303 and answer.headers["location"] == "/"
    assert "set-cookie" not in answer.headers
    assert _tokens(s, "ann") == 2 and _tokens(s, "bob") == 1


def test_a_get_or_an_oversized_body_ends_nothing(logins) -> None:
    s, tokens = logins
    client = _client()
    client.cookies.set(LOGIN_COOKIE, tokens["ann"])
    assert client.get(logout_route.logout_url()).status_code == 405  # a link, a prefetch
    check = logout_route.logout_check(tokens["ann"])
    answer = client.post(logout_route.logout_url(),
                         content=f"{logout_route.CHECK_FIELD}={check}&pad={'x' * 10_000}",
                         headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert answer.status_code == 303 and answer.headers["location"] == "/"
    assert _tokens(s, "ann") == 2


def test_under_a_path_prefix_the_route_the_cookie_and_the_redirects_carry_it(
        logins, prefix) -> None:
    s, tokens = logins
    client = _client()
    assert logout_route.logout_url() == "/nmb/nmb/logout"
    answer = _post(client, tokens["ann"], logout_route.logout_check(tokens["ann"]))
    assert answer.status_code == 303 and answer.headers["location"] == "/nmb/auth/logout"
    assert "Path=/nmb;" in answer.headers["set-cookie"]
    assert _tokens(s, "ann") == 0
    refused = _post(client, tokens["bob"], None)
    assert refused.headers["location"] == "/nmb/" and _tokens(s, "bob") == 1
    assert _post(client, tokens["bob"], logout_route.logout_check(tokens["bob"]),
                 path="/nmb/logout").status_code == 404  # not outside the prefix
