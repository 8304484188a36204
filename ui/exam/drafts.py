"""What the answer boxes send, kept as drafts, including the text of a box the page has left.

The box sends its text after a pause in typing and when it loses the focus, so a click on
"Next task" or on the task or exam picker sends the last words typed in the same moment as the
click: the run that follows draws another task and never draws, or reads, the box left behind.
Each box is therefore registered with the attempt, task and stage it answers (`box_drawn`), and
every run first keeps whatever any registered box sent since the last one
(`keep_every_draft`); the open box's own fragment keeps its text the same way (`keep_typed`).
"""

import streamlit as st

from db.busy import EXAM_DRAFT_KEPT, retry_when_busy
from db.engine import session
from db.models import ExamAttempt
from db.study.exams import save_draft
from db.text_limits import ANSWER
from errors import UserError
from ui.actions import show_error
from ui.exam.answer_box import Typed, last_typed

BOXES = "exam_boxes"  # {box key: (attempt id, task id, stage)}


def box_drawn(key: str, *, attempt_id: int, task_id: str, stage: int) -> None:
    """Remember what the box under `key` answers, for the runs that no longer draw it."""
    st.session_state.setdefault(BOXES, {})[key] = (attempt_id, task_id, stage)


def keep_typed(key: str, *, attempt_id: int, task_id: str, stage: int) -> Typed | None:
    """Store what the box under `key` sent, when it is new text, as the attempt's draft of
    the task (a refusal is one error line); returns the last message stored."""
    latest, stored = last_typed(key, max_chars=ANSWER), st.session_state.get(f"{key}_stored")
    if latest is not None and (stored is None
                               or (latest.text, latest.edit) != (stored.text, stored.edit)):
        try:
            with session() as s:  # the attempt read in the write's retries too (db.busy)
                retry_when_busy(s, lambda: save_draft(s, attempt=s.get(ExamAttempt, attempt_id),
                                                      task_id=task_id, text=latest.text,
                                                      stage=stage), kept=EXAM_DRAFT_KEPT)
        except UserError as e:
            show_error(e)
        else:
            st.session_state[f"{key}_stored"] = stored = latest
    return stored


def keep_every_draft() -> None:
    """Keep what every box drawn in this session sent since the last run (the box of the
    task, or exam, just left included)."""
    for key, (attempt_id, task_id, stage) in list(st.session_state.get(BOXES, {}).items()):
        keep_typed(key, attempt_id=attempt_id, task_id=task_id, stage=stage)
