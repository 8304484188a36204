"""Log out by a plain navigation: the sidebar's "Log out" is a form that POSTs to
`/nmb/logout` (under the app's path prefix, `ui.server.base_path`, when it has one), so no
script run, and no click that starts one, stands between the click and the identity
provider's logout.

The route (`routes()`, mounted by `serve.py` through `st.App`) ends the login named by the
request's login cookie (`db.users.LOGIN_COOKIE`) when the form's `check` field is that login's
`logout_check`: every session of the account ends (`db.users.log_out`, as `ui.auth` did from a
button callback before), the app's login cookie is cleared, and the browser is sent (303) to
Streamlit's `<prefix>/auth/logout`, which clears Streamlit's identity cookie and sends the
browser on to the provider's `end_session_endpoint` (OpenID Connect RP-Initiated Logout 1.0,
section 2), or, without single sign-on, to `<prefix>/`, the login page.

The check is the logout's CSRF token (OWASP CSRF Prevention Cheat Sheet, synchronizer token):
an HMAC of the login token, so a page of this login can send it and another site cannot. The
request's `Origin` is no help here (the app's `Referrer-Policy: no-referrer` makes a form's
`Origin` "null"), nor is `Sec-Fetch-Site` (not sent over plain http to a non-local host).
Anything else (no or a dead cookie, a missing or wrong check, an oversized body) ends nothing
and is sent to the login page, with no error page and nothing to learn. GET is not a logout
(405): a link or a prefetch ends nothing.

The logins ended here are remembered in this process (`left_by_logout`), so that a script run
of the same browser that starts after the logout (another click landing while the browser is
still on its way to the provider) does not send the browser anywhere else (`ui.auth`): a
redirect of its own would replace this navigation, and Streamlit's cookie may already be gone.
"""

from __future__ import annotations

import hashlib
import hmac
import threading
from collections import OrderedDict
from urllib.parse import parse_qs

from db.engine import session
from db.users import LOGIN_COOKIE, log_out, user_for_login
from ui.server.base_path import base_path

ROUTE = "/nmb/logout"
CHECK_FIELD = "check"
MAX_BODY = 1024  # bytes of the form: its one field is 64 hex digits
_REMEMBERED = 4096  # logins ended here, kept for `left_by_logout` (oldest forgotten first)

_left: OrderedDict[str, None] = OrderedDict()
_left_lock = threading.Lock()


def logout_url() -> str:
    """Where the "Log out" form posts: the route under the app's path prefix."""
    return base_path() + ROUTE


def logout_check(login_token: str) -> str:
    """The form's check for the login `login_token`: HMAC-SHA256 keyed by the token, so only
    a page that knows the login can make it (and it reveals nothing of the token)."""
    return hmac.new(login_token.encode(), b"nmb logout", hashlib.sha256).hexdigest()


def _key(login_token: str) -> str:
    return hashlib.sha256(login_token.encode()).hexdigest()


def left_by_logout(login_token: str | None) -> bool:
    """Whether the login `login_token` was ended by this route (in this server process): its
    browser is then on its way through Streamlit's `/auth/logout`."""
    if not login_token:
        return False
    with _left_lock:
        return _key(login_token) in _left


def end_login(cookie: str | None, check: str | None) -> bool:
    """End every session of the account of login `cookie` if `check` is its logout check;
    whether it did."""
    if not cookie or not check or not hmac.compare_digest(logout_check(cookie), check):
        return False
    with session() as s:
        user = user_for_login(s, cookie)
        if user is None:
            return False
        with _left_lock:  # remembered before the login ends, so no run sees it ended unmarked
            _left[_key(cookie)] = None
            while len(_left) > _REMEMBERED:
                _left.popitem(last=False)
        log_out(s, user_id=user.id)
    return True


def routes() -> list:
    """The Starlette route of the logout (for `st.App(routes=...)`), under the path prefix."""
    from starlette.concurrency import run_in_threadpool
    from starlette.requests import Request
    from starlette.responses import RedirectResponse, Response
    from starlette.routing import Route

    async def form_check(request: Request) -> str | None:
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_BODY:
                return None
        values = parse_qs(body.decode("latin-1"), max_num_fields=4).get(CHECK_FIELD, [])
        return values[0] if len(values) == 1 else None

    async def logout(request: Request) -> Response:
        try:
            check = await form_check(request)
        except ValueError:  # more fields than a logout form has
            check = None
        ended = await run_in_threadpool(end_login, request.cookies.get(LOGIN_COOKIE), check)
        prefix = base_path()
        target = f"{prefix}/auth/logout" if ended else f"{prefix}/"
        answer = RedirectResponse(target, status_code=303, headers={"Cache-Control": "no-store"})
        if ended:
            answer.delete_cookie(LOGIN_COOKIE, path=prefix or "/", samesite="strict")
        return answer

    return [Route(base_path() + ROUTE, logout, methods=["POST"])]
