"""The TCP peer's address, handed to the app as a request header (`serve.py` wires it).

Streamlit shows a page the address of its WebSocket connection only as `st.context.ip_address`,
which is None for a loopback peer, and uvicorn (under `streamlit run`) replaces that address by
the one in `X-Forwarded-For` whenever the peer is 127.0.0.1 or ::1 (its `FORWARDED_ALLOW_IPS`
default), so any local connection could name its own address. Here uvicorn's rewriting is
turned off, and `PeerAddress` puts the real peer in the `x-nmb-peer` header (any such header
the client sent is dropped), which a page reads from `st.context.headers`; whether
`X-Forwarded-For` is believed is decided by `db.client_address` (`NMB_TRUSTED_PROXIES`).
No Streamlit import here.
"""

from typing import Any

PEER_HEADER = "x-nmb-peer"
_PEER = PEER_HEADER.encode()


class PeerAddress:
    """ASGI middleware: every HTTP and WebSocket request carries the peer's address in
    `x-nmb-peer`, and only the one this server wrote."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] in ("http", "websocket"):
            headers = [(k, v) for k, v in scope["headers"] if k.lower() != _PEER]
            client = scope.get("client")
            if client and client[0]:
                headers.append((_PEER, str(client[0]).encode("latin-1", "replace")))
            scope = {**scope, "headers": headers}
        await self.app(scope, receive, send)


def keep_the_peer_address() -> None:
    """Stop uvicorn's ProxyHeadersMiddleware from rewriting the peer address and scheme from
    `X-Forwarded-*` (it wraps the app whatever `FORWARDED_ALLOW_IPS` says): the app decides
    what to believe. Patching the class works whether or not uvicorn has built it yet."""
    try:
        from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware
    except ImportError:  # another ASGI server: its own proxy settings apply
        return

    async def pass_through(self: Any, scope: dict, receive: Any, send: Any) -> None:
        await self.app(scope, receive, send)

    ProxyHeadersMiddleware.__call__ = pass_through  # type: ignore[method-assign]
