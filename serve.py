"""The server: the Streamlit app (`app.py`), the route that serves case volumes to the
in-browser viewer (`ui.server.volume_server`) and the security headers of every answer
(`ui.server.security_headers`). Start with `streamlit run serve.py` (`make run`).

The login throttle's client address is the TCP peer, handed to the app by `PeerAddress`;
`X-Forwarded-For` is believed only from `NMB_TRUSTED_PROXIES` (`db.client_address`), checked
here so that a mistyped setting stops the server with one line."""

import sys

import streamlit as st
from starlette.middleware import Middleware

from db.client_address import trusted_proxies
from errors import UserError
from ui.server.peer_address import PeerAddress, keep_the_peer_address
from ui.server.security_headers import SecurityHeaders
from ui.server.volume_server import routes

try:
    trusted_proxies()
except UserError as e:  # a mistake in the setting: one line, exit 2, as the CLI does
    print(f"nmb: {e}", file=sys.stderr)
    raise SystemExit(2) from None
keep_the_peer_address()
app = st.App("app.py", routes=routes(),
             middleware=[Middleware(SecurityHeaders), Middleware(PeerAddress)])
