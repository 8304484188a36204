"""The server: the Streamlit app (`app.py`), the route that serves case volumes to the
in-browser viewer (`ui.server.volume_server`), the logout route (`ui.server.logout_route`),
the health endpoint (`ui.server.health`) and the security headers of every answer
(`ui.server.security_headers`). Start with
`streamlit run serve.py` (`make run`); `--server.baseUrlPath nmb` (or
`STREAMLIT_SERVER_BASE_URL_PATH=nmb`) serves everything under `/nmb/` (`ui.server.base_path`).

The login throttle's client address is the TCP peer, handed to the app by `PeerAddress`;
`X-Forwarded-For` is believed only from `NMB_TRUSTED_PROXIES` (`db.client_address`), checked
here so that a mistyped setting stops the server with one line, as a mistyped
`NMB_LOG_LEVEL` does. Logs go to stdout (`ui.server.logs`)."""

import logging
import sys

import streamlit as st
from starlette.middleware import Middleware

from db.client_address import trusted_proxies
from errors import UserError
from ui.server import health, logout_route, volume_server
from ui.server.base_path import base_path
from ui.server.logs import log_level, log_to_stdout
from ui.server.peer_address import PeerAddress, keep_the_peer_address
from ui.server.security_headers import SecurityHeaders

try:
    proxies = trusted_proxies()
    level = log_level()
except UserError as e:  # a mistake in a setting: one line, exit 2, as the CLI does
    print(f"nmb: {e}", file=sys.stderr)
    raise SystemExit(2) from None
log_to_stdout(level)
keep_the_peer_address()
logging.getLogger("nmb").info("serving under %s/ with %d trusted proxy network(s)",
                              base_path(), len(proxies))
app = st.App("app.py", routes=[*volume_server.routes(), *logout_route.routes(), *health.routes()],
             middleware=[Middleware(SecurityHeaders), Middleware(PeerAddress)])
