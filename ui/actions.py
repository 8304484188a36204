"""Run a write from a page: one transaction, then its success message or the user's mistake."""

from collections.abc import Callable

import streamlit as st
from sqlmodel import Session

from db.engine import session
from errors import UserError


def run_write(write: Callable[[Session], str]) -> None:
    """Call `write(s)` and commit; show the message it returns, or the UserError it raised
    (nothing is written then)."""
    try:
        with session() as s:
            message = write(s)
            s.commit()
    except UserError as e:
        st.error(str(e))
    else:
        st.success(message)
