"""Run a write from a page: one transaction, then its success message or the user's mistake."""

from collections.abc import Callable

import streamlit as st
from sqlmodel import Session

from db.engine import session
from errors import UserError
from ui.plain_text import escape_markdown


def run_write(write: Callable[[Session], str]) -> None:
    """Call `write(s)` and commit; show the message it returns, or the UserError it raised
    (nothing is written then). Both may quote typed or imported values: shown as literal text."""
    try:
        with session() as s:
            message = write(s)
            s.commit()
    except UserError as e:
        show_error(e)
    else:
        st.success(escape_markdown(message))


def show_error(e: UserError) -> None:
    """A user's mistake as one error line; its message may quote typed or imported values."""
    st.error(escape_markdown(str(e)))
