"""Login, logout and the server-side session and role check every page run makes.

Every login keeps a login token (`db.users.open_login`) in the `nmb_login` cookie, so a page
reload, which starts a new Streamlit session, logs the user in again, and the volume route
(`ui.server.volume_server`) knows whose request it answers. Single sign-on keeps its own cookie
(`st.login`) as well. Every page run, and every widget callback that writes,
re-checks the account in the database (`current_user`): a disabled account, a changed role, a
logout in any browser or an expired token ends the session at once.
"""

import functools
import html
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import streamlit as st

from db.client_address import client_address, trusted_proxies
from db.engine import session
from db.models import Setting, User
from db.single_sign_on import identity_current, sso_account
from db.users import (
    LOGIN_COOKIE,
    LOGIN_HOURS,
    MAX_NAME,
    authenticate,
    open_login,
    session_user,
    user_for_login,
)
from errors import UserError
from ui.plain_text import escape_markdown
from ui.server.base_path import base_path
from ui.server.logout_route import CHECK_FIELD, left_by_logout, logout_check, logout_url
from ui.server.peer_address import PEER_HEADER


@dataclass(frozen=True)
class LoggedIn:
    id: int
    name: str
    role: str
    demo: bool
    epoch: int = 0  # the account's session epoch at login (db.users.session_user)

    @classmethod
    def of(cls, user: User) -> "LoggedIn":
        return cls(id=user.id, name=user.name, role=user.role, demo=user.demo,
                   epoch=user.session_epoch)


def current_user() -> LoggedIn | None:
    """The session's user if the account still allows this session; otherwise the session
    ends here (state and login cookie cleared) and None."""
    user: LoggedIn | None = st.session_state.get("user")
    if user is None:
        return None
    with session() as s:
        still = session_user(s, user_id=user.id, epoch=user.epoch, role=user.role,
                             token=st.session_state.get("login_token"))
    if still is None:
        _forget()
        return None
    return user


def while_signed_in(callback: Callable[..., Any]) -> Callable[..., Any]:
    """A widget callback (which runs before the page script) that does nothing once the
    session has ended: a disabled or logged-out user's open page cannot write."""

    @functools.wraps(callback)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        return callback(*args, **kwargs) if current_user() is not None else None

    return guarded


def _remember(user: User, token: str | None = None) -> None:
    st.session_state["user"] = LoggedIn.of(user)
    if token is not None:
        st.session_state["login_token"] = token


def _forget() -> None:
    """End this browser session: state, login cookie and single sign-on. When this browser's
    own Log out ended the login, the browser is already on its way through Streamlit's
    `/auth/logout` to the provider (`ui.server.logout_route`): `st.logout()`'s redirect would
    replace that navigation, so the session only stops signing on with the identity it holds."""
    token = st.session_state.get("login_token")
    st.session_state.clear()
    st.session_state["cookie"] = _cookie_script("", 0)
    if not getattr(st.user, "is_logged_in", False):
        return
    if left_by_logout(token):
        st.session_state["signed_out"] = True
    else:
        st.logout()


def _sign_in(user: User) -> None:
    """Log `user` in with a login token in the cookie (page reloads, the volume route)."""
    try:
        with session() as s:
            token = open_login(s, user)
    except UserError as e:  # the study database busy past the write's deadline (db.busy)
        st.error(escape_markdown(str(e)))
        st.stop()
    st.session_state["cookie"] = _cookie_script(token, LOGIN_HOURS * 3600)
    _remember(user, token)
    st.rerun()


def _cookie_script(value: str, max_age: int) -> str:
    """Sets (or, with max_age 0, clears) the login cookie; the token is URL-safe base64.
    `Secure` when the browser's address is https (behind a TLS-terminating proxy too: it is
    the browser's URL), `Path` the app's path prefix (`ui.server.base_path`), `SameSite=Strict`.
    (Not HttpOnly: a script sets it, as Streamlit gives a page no response headers.)"""
    secure = "; Secure" if str(st.context.url or "").startswith("https:") else ""
    return (f"<script>document.cookie = '{LOGIN_COOKIE}={value}; Path={base_path() or '/'}; "
            f"Max-Age={max_age}; SameSite=Strict{secure}';</script>")


def restore_login() -> None:
    """After a page reload: the user of a live login cookie, logged in again."""
    token = st.context.cookies.get(LOGIN_COOKIE)
    if "user" in st.session_state or not isinstance(token, str) or not token:
        return  # (AppTest's context gives a mock, not a str)
    with session() as s:
        user = user_for_login(s, token)
    if user is not None:
        _remember(user, token)
    else:  # logged out, disabled or expired: the browser need not keep it
        st.session_state["cookie"] = _cookie_script("", 0)


def write_cookie() -> None:
    """Sends the browser the cookie change of a login or logout, once. The slot is drawn on
    every run (an empty script when there is no change: it takes no space), so that the
    page's elements below keep their places; one that moves is drawn anew (the viewer's frame
    would be built again: ui.case_panel)."""
    script = st.session_state.pop("cookie", None)  # (a style alone would take no slot)
    st.html(script or "<script></script>", unsafe_allow_javascript=True)


def _oidc_configured() -> bool:
    try:
        return "auth" in st.secrets
    except Exception:  # no secrets file at all
        return False


def single_sign_on() -> None:
    """The single sign-on button; back from the identity provider, while its ID token is
    valid, the identity's account is logged in (`db.single_sign_on`) or the refusal is shown
    in one line, with a button that ends the refused identity's sign-on (to sign on as someone
    else): a navigation to Streamlit's `/auth/logout`, on to the provider's logout."""
    if not getattr(st.user, "is_logged_in", False) or not identity_current(st.user.get("exp")) \
            or st.session_state.get("signed_out"):  # (again, once expired or logged out)
        st.button("Log in with single sign-on", on_click=st.login)
        return
    refusal = st.session_state.get("sso_refused")  # checked (and audited) once a session
    if refusal is None:
        try:
            with session() as s:
                user = sso_account(s, email=st.user.get("email"),
                                   email_verified=st.user.get("email_verified"))
        except UserError as e:
            refusal = st.session_state["sso_refused"] = str(e)
        else:
            _sign_in(user)
    st.error(escape_markdown(refusal))
    _form_button("Log out of single sign-on", f"{base_path()}/auth/logout", "get")


def login_page() -> None:
    """The login form (and, where `[auth]` is configured, single sign-on through st.login)."""
    st.title("Neural-MedBench Studio")
    st.caption("Clinician-validated evaluation of diagnostic reasoning in neurology")
    if _oidc_configured():
        single_sign_on()
    with st.form("login"):
        name = st.text_input("Username", max_chars=MAX_NAME)
        password = st.text_input("Password", type="password")
        submitted = st.form_submit_button("Log in")
    if submitted:
        try:
            client = login_client()
            with session() as s:
                user = authenticate(s, name=name.strip(), password=password, client=client)
        except UserError as e:  # locked out (or a mistyped NMB_TRUSTED_PROXIES)
            st.error(str(e))
            return
        if user is None:
            st.error("Unknown user name or wrong password.")
        else:
            _sign_in(user)
    if demo_active():
        st.info("Demo study loaded: log in as `demo-admin`, `demo-expert1`, `demo-physician` "
                "or `demo-student` (password `demo`). All data are synthetic.")


def _header_values(name: str) -> list[str]:
    try:
        values = st.context.headers.get_all(name)
    except TypeError:  # AppTest's context has no request headers
        return []
    return [v for v in values if isinstance(v, str)] if isinstance(values, list) else []


def login_client() -> str | None:
    """The address this login attempt comes from (`db.client_address`): the TCP peer that
    `serve.py` reports, or the client a trusted proxy names in `X-Forwarded-For`; None where
    no peer is known (then only the per-name limit applies)."""
    peers = _header_values(PEER_HEADER)
    return client_address(peers[-1] if peers else None, _header_values("X-Forwarded-For"),
                          trusted_proxies())


def logout_button() -> None:
    """The "Log out" control: a form that posts this login's check to the logout route
    (`ui.server.logout_route`), a plain navigation with no script run in between, drawn as
    Streamlit's secondary button. The route ends every session of the user, in this browser and
    any other, and sends the browser through Streamlit's `/auth/logout` (single sign-on: on to
    the identity provider's logout) to the login page."""
    check = logout_check(st.session_state.get("login_token") or "")
    _form_button("Log out", logout_url(), "post", f'<input type="hidden" name="{CHECK_FIELD}" '
                                                  f'value="{check}">')


def _form_button(label: str, action: str, method: str, fields: str = "") -> None:
    """A plain HTML form (its hidden `fields` given as HTML) drawn as Streamlit's secondary
    button: a navigation, which no script run can drop as it drops `st.logout()`'s redirect."""
    st.html(f'<form class="nmb-logout" method="{method}" action="{html.escape(action)}">'
            f'{fields}<button type="submit">{label}</button></form>{_LOGOUT_STYLE}')


# Streamlit's secondary button, so that the form looks as st.button did; its text and border
# take the colour of the text around it, so that it reads in the light and the dark theme.
_LOGOUT_STYLE = """<style>
.nmb-logout button { display: inline-flex; align-items: center; justify-content: center;
  min-height: 2.5rem; margin: 0; padding: 0.25rem 0.75rem; font: inherit; font-size: 0.875rem;
  line-height: 1.6; color: inherit; background-color: transparent;
  border: 1px solid color-mix(in srgb, currentColor 20%, transparent);
  border-radius: 0.5rem; cursor: pointer; user-select: none; }
.nmb-logout button:hover { border-color: rgb(255, 75, 75); color: rgb(255, 75, 75); }
.nmb-logout button:active { color: #fff; background-color: rgb(255, 75, 75);
  border-color: rgb(255, 75, 75); }
.nmb-logout button:focus-visible { outline: none; box-shadow: rgba(255, 75, 75, 0.5) 0 0 0 0.2rem; }
</style>"""


def demo_active() -> bool:
    with session() as s:
        flag = s.get(Setting, "demo")
    return flag is not None and flag.value == "1"


def require_role(*roles: str) -> LoggedIn:
    """The logged-in user if their role may see this page; otherwise a refusal and stop."""
    user = current_user()
    if user is None or user.role not in roles:
        st.error("You do not have access to this page.")
        st.stop()
    return user
