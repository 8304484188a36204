"""Run a write from a page: one transaction, then its success message or the user's mistake."""

from collections.abc import Callable
from typing import NoReturn

import streamlit as st
from sqlmodel import Session

from db.engine import session
from errors import UserError
from ui.plain_text import escape_markdown

WRITTEN = "_written"


def run_write(write: Callable[[Session], str], *, redraw: bool = False) -> None:
    """Call `write(s)` and commit; show the message it returns, or the UserError it raised
    (nothing is written then). Both may quote typed or imported values: shown as literal text.
    With `redraw` (the write changes what the page shows above the form: counts, a table, a
    list), the page is drawn again after the commit and `show_written` shows the message."""
    try:
        with session() as s:
            message = write(s)
            s.commit()
    except UserError as e:
        show_error(e)
    else:
        if redraw:
            redraw_after(message)
        st.success(escape_markdown(message))


def redraw_after(message: str) -> NoReturn:
    """Draw the page again (what it shows above changed), `message` to be shown there by
    `show_written`."""
    confirm(WRITTEN, message)
    st.rerun()


def show_written(item: object) -> None:
    """Where the page shows it, the message of the write that `redraw_after` drew the page
    again for (`show_confirmation`, kept while `item` is shown)."""
    show_confirmation(WRITTEN, item)


def show_error(e: UserError) -> None:
    """A user's mistake as one error line; its message may quote typed or imported values."""
    st.error(escape_markdown(str(e)))


def scroll_to_top() -> None:
    """Scroll the page back to its top once this run has drawn (the next item opens at its
    beginning, not where the rater left the previous one). The counter makes each call a new
    element, so the browser runs it again."""
    n = st.session_state["_scroll_to_top"] = st.session_state.get("_scroll_to_top", 0) + 1
    st.html(
        f"<script>/* {n} */ setTimeout(() => {{ for (const el of document.querySelectorAll("
        "'[data-testid=\"stMain\"], [data-testid=\"stAppViewContainer\"]')) el.scrollTo(0, 0);"
        " window.scrollTo(0, 0); }, 50);</script>",
        unsafe_allow_javascript=True)


def confirm(key: str, message: str) -> None:
    """Queue `message` for `show_confirmation(key, ...)` on the next run (after st.rerun)."""
    st.session_state[key] = message


def show_confirmation(key: str, item: object, *, toast: bool = True) -> None:
    """The confirmation queued under `key`: once, a toast (unless `toast` is False: /exam,
    where a toast in the window's corner covered the answer box it confirmed) and a scroll to
    the top; then an inline message that stays while `item` (the item or task now open) is
    shown, so a later rerun (a click, a component) does not take it away before it is read."""
    if fresh := st.session_state.pop(key, None):
        st.session_state[f"{key}_shown"] = (fresh, item)
        if toast:
            st.toast(escape_markdown(fresh), icon=":material/check_circle:")
        scroll_to_top()
    shown = st.session_state.get(f"{key}_shown")
    if shown and shown[1] == item:
        if toast:
            st.success(escape_markdown(shown[0]))
        else:  # one line: what it confirms stays where it was
            st.caption(f":green[:material/check_circle: {escape_markdown(shown[0])}]")
