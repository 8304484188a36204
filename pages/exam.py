"""/exam: students and physicians take the benchmark as the human baseline."""

import streamlit as st

from ui.auth import require_role

user = require_role("physician", "student")
st.title("Exam")
