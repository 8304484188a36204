"""The one-request preflight on /models and /calibrate: the API key the runs use, and how a
preflight's outcome is shown (success with the answer as plain text, or the failure in a
sentence with the technical reason beside it)."""

import os
from collections.abc import Callable

import streamlit as st
from sqlmodel import Session

from db.engine import session
from errors import UserError
from grading.preflight import Preflight
from ui.plain_text import escape_markdown


def api_key() -> str | None:
    """OPENAI_API_KEY from the app's secrets, else from the environment (never shown)."""
    try:
        return st.secrets.get("OPENAI_API_KEY") or os.environ.get("OPENAI_API_KEY")
    except Exception:  # no secrets file
        return os.environ.get("OPENAI_API_KEY")


def show_preflight(check: Callable[[Session], Preflight]) -> Preflight | None:
    """Run `check` (one request) and show how it went; a mistake in the settings (a bad base
    URL, no key for the official API) is shown as such. Returns the preflight, if one ran."""
    try:
        with st.spinner("Sending one request…"), session() as s:
            got = check(s)
    except UserError as e:
        st.error(escape_markdown(f"Preflight not sent: {e}"))
        return None
    if got.ok:
        st.success(escape_markdown(f"Preflight passed: {got.summary()}"))
        st.code(got.answer or "", language=None, wrap_lines=True)  # plain text
    else:
        st.error(escape_markdown(f"Preflight failed: {got.problem}"))
        st.caption("Details: " + escape_markdown(got.reason or "none given"))
    return got
