"""Neural-MedBench Studio: login and the role-based router."""

import streamlit as st

from db.engine import upgrade
from ui.auth import PAGES, current_user, demo_active, login_page, logout, restore_login, write_cookie
from ui.plain_text import escape_markdown

st.set_page_config(page_title="Neural-MedBench Studio", page_icon=":brain:", layout="wide")


@st.cache_resource
def _migrated() -> bool:
    upgrade()
    return True


_migrated()
restore_login()
user = current_user()
write_cookie()
if user is None:
    st.navigation([st.Page(login_page, title="Log in", url_path="login")], position="hidden").run()
else:
    pages = [st.Page(f, title=t, url_path=u, icon=i) for f, t, u, i in PAGES[user.role]]
    with st.sidebar:
        st.markdown(f"**{escape_markdown(user.name)}** · {user.role}")
        st.button("Log out", on_click=logout)
    if demo_active():
        st.warning("Demo data: every case, record, response and score here is synthetic.",
                   icon=":material/science:")
    st.navigation(pages).run()
