"""The exam's answer box: a textarea whose text the server keeps while it is typed, and the
button that records it.

Streamlit's `st.text_area` sends its text only on blur or Ctrl+Enter, so an answer typed but
not yet left was lost on a reload. This small component (`ui/exam/answer_frontend/index.html`,
plain HTML and JavaScript, no build step) sends `{"text", "edit", "record"}` after a pause in
typing (under a second), on blur, on Ctrl/Cmd+Enter and when its button is clicked; the page
stores the text as the attempt's draft (`db.study.exams.save_draft`), so a reload or another
browser finds it. The button is part of the box so that a click and the text it records
travel in one message (a separate Streamlit button could arrive before the last keystrokes).
`edit` counts changes, `record` counts clicks of the button.

The box receives its label, the text to start from (the stored draft, used once when the box
is new), the longest answer allowed (`max_chars`, enforced by the box and again by the
server), `saved` (the last edit the server stored: the box shows "Draft saved" or
"Saving..."), `handled` (the last click the page acted on: the button waits for it, so a
double click records once) and the button's label.

What comes back is untrusted: `typed` accepts only a string of at most `max_chars`
characters with whole edit and click numbers; the text is only ever a textarea's value.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import streamlit as st
import streamlit.components.v1 as components

FRONTEND = Path(__file__).parent / "answer_frontend"
_component = components.declare_component("nmb_answer_box", path=str(FRONTEND))


@dataclass(frozen=True)
class Typed:
    """What the box sent last: its text, the number of the edit it is and of the last click
    of its button (0: never clicked)."""

    text: str
    edit: int
    record: int = 0


def typed(value: Any, *, max_chars: int) -> Typed | None:
    """The box's message as `Typed`, or None when it is not one (nothing typed yet, or a
    message of another shape). Text longer than `max_chars` is refused: None."""
    if not isinstance(value, dict):
        return None
    text, edit, record = value.get("text"), value.get("edit"), value.get("record", 0)
    if not isinstance(text, str) or not all(_count(n) for n in (edit, record)):
        return None
    if len(text) > max_chars:
        return None
    return Typed(text, edit, record)


def _count(n: Any) -> bool:
    return isinstance(n, int) and not isinstance(n, bool) and 0 <= n < 2**53


def last_typed(key: str, *, max_chars: int) -> Typed | None:
    """What the box under `key` sent before this run (read before drawing it, so the page
    can store it first and tell the box it is saved)."""
    return typed(st.session_state.get(key), max_chars=max_chars)


def answer_box(*, label: str, text: str, max_chars: int, saved: int, handled: int, action: str,
               key: str, height: int = 200) -> None:
    """Draw the box (filled with `text` when it is new) and its button labelled `action`;
    `saved`: the last stored edit, `handled`: the last click acted on."""
    _component(label=label, text=text, max_chars=max_chars, saved=saved, handled=handled,
               action=action, height=height, key=key, default=None)
