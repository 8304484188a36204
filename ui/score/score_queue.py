"""The /score queue's filters: unscored, flagged by the rater, task family, task level.

The choices live in widget state (`score_f_*`), so they hold from item to item; what they
admit is decided by `db.raters.scoring.QueueFilter`. Family and level are the task's, never
anything about the response's source.
"""

from __future__ import annotations

import streamlit as st

from db.raters.scoring import QueueEntry, QueueFilter
from ui.response_view import FAMILY_NAMES, LEVEL_NAMES

ALL = "All"


def queue_filter(entries: list[QueueEntry]) -> QueueFilter:
    """The filter the rater chose (widget state), a choice no longer in the queue ignored."""
    state = st.session_state
    family = state.get("score_f_family", ALL)
    level = state.get("score_f_level", ALL)
    return QueueFilter(
        unscored=bool(state.get("score_f_unscored")), flagged=bool(state.get("score_f_flagged")),
        family=None if family == ALL or family not in {e.family for e in entries} else family,
        level=None if level == ALL or level not in {e.level for e in entries} else level)


def filter_controls(entries: list[QueueEntry]) -> None:
    """The filter widgets (in the header's popover)."""
    st.toggle("Unscored only", key="score_f_unscored", help="Items not yet submitted.")
    st.toggle("Flagged only", key="score_f_flagged",
              help="Items you gave confidence 1 (“I would like another rater to look at this”).")
    families = sorted({e.family for e in entries})
    st.selectbox("Task family", [ALL, *families], key="score_f_family",
                 format_func=lambda f: FAMILY_NAMES.get(f, f))
    levels = sorted({e.level for e in entries})
    st.selectbox("Task level", [ALL, *levels], key="score_f_level",
                 format_func=lambda v: v if v == ALL else f"{v} ({LEVEL_NAMES.get(v, '')})")
