"""The server: the Streamlit app (`app.py`), the route that serves case volumes to the
in-browser viewer (`ui.volume_server`) and the security headers of every answer
(`ui.security_headers`). Start with `streamlit run serve.py` (`make run`)."""

import streamlit as st
from starlette.middleware import Middleware

from ui.security_headers import SecurityHeaders
from ui.volume_server import routes

app = st.App("app.py", routes=routes(), middleware=[Middleware(SecurityHeaders)])
