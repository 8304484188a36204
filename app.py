"""Neural-MedBench Studio: login and the role-based router."""

import streamlit as st

from db.bundle.store import prepare_study
from ui.auth import current_user, logout_button, restore_login, write_cookie
from ui.plain_text import escape_markdown
from ui.router import routes
from ui.synthetic_banner import synthetic_data_banner

st.set_page_config(page_title="Neural-MedBench Studio", page_icon=":brain:", layout="wide")


@st.cache_resource
def _migrated() -> bool:
    prepare_study()
    return True


_migrated()
restore_login()
user = current_user()
write_cookie()
if user is not None:
    with st.sidebar:
        st.markdown(f"**{escape_markdown(user.name)}** · {user.role}")
        logout_button()
    synthetic_data_banner()
st.navigation(routes(None if user is None else user.role),
              position="hidden" if user is None else "sidebar").run()
