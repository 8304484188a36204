"""The server: the Streamlit app (`app.py`) plus the route that serves case volumes to the
in-browser viewer (`ui.volume_server`). Start with `streamlit run serve.py` (`make run`)."""

import streamlit as st

from ui.volume_server import routes

app = st.App("app.py", routes=routes())
