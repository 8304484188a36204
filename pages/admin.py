"""/admin: bundles, users, assignments and rater progress (admin)."""

import streamlit as st

from ui.auth import require_role

user = require_role("admin")
st.title("Data and users")
