"""Security headers on every answer of the server: pages, Streamlit's routes and ours.

- No framing by another site, or another port of this host (clickjacking a logged-in
  `/score` with a working Submit): `Content-Security-Policy: frame-ancestors 'none'` and
  `X-Frame-Options: DENY`. Streamlit draws custom components (the volume viewer) in iframes
  of the app's own origin, so their files (`/component/...`) may be framed by that origin
  only (`'self'`, `SAMEORIGIN`; the origin includes the port).
- `Referrer-Policy: no-referrer`: no URL of the app leaves it in a Referer header.
- `X-Content-Type-Options: nosniff`: a file is never run as another type than it says.

Reference: OWASP Secure Headers Project; OWASP Clickjacking Defense Cheat Sheet.
A pure ASGI middleware (`st.App(middleware=...)`), so websockets pass through untouched.
"""

from __future__ import annotations

from typing import Any

COMMON = [(b"referrer-policy", b"no-referrer"), (b"x-content-type-options", b"nosniff")]
NO_FRAMING = [(b"content-security-policy", b"frame-ancestors 'none'"),
              (b"x-frame-options", b"DENY")]
SAME_ORIGIN_FRAMING = [(b"content-security-policy", b"frame-ancestors 'self'"),
                       (b"x-frame-options", b"SAMEORIGIN")]
_OURS = {name for name, _ in COMMON + NO_FRAMING}


def headers_for(path: str) -> list[tuple[bytes, bytes]]:
    """The security headers of an answer to `path` (a request path without the query)."""
    framing = SAME_ORIGIN_FRAMING if "/component/" in path else NO_FRAMING
    return COMMON + framing


class SecurityHeaders:
    """Adds `headers_for(path)` to every HTTP answer, replacing any of the same name."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        extra = headers_for(scope.get("path", ""))

        async def with_headers(message: dict) -> None:
            if message["type"] == "http.response.start":
                kept = [(k, v) for k, v in message.get("headers", []) if k.lower() not in _OURS]
                message = {**message, "headers": kept + extra}
            await send(message)

        await self.app(scope, receive, with_headers)
