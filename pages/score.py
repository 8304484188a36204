"""/score: an expert scores rationales against the rubric, blinded to their source."""

import streamlit as st

from ui.auth import require_role

user = require_role("expert")
st.title("Score rationales")
