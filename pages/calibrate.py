"""/calibrate: run the LLM grader and compare it with the experts (admin)."""

import streamlit as st

from ui.auth import require_role

user = require_role("admin")
st.title("Grader calibration")
