"""What /exam remembers between runs belongs to the exam open: picking another exam forgets it.

A taker may have two exams open. The page keeps, in the session, the task open, a confirmation
shown under it ("Answer recorded for task 3. Task complete."), the question "Finish the exam
now?", where a recorded answer moves to and the task open in a finished exam's review; kept
across a change of exam, the other exam opened at the same position (not at its first
unanswered task), showed the first exam's confirmation and asked to finish without its Finish
button being clicked.
"""

import streamlit as st

OPEN = "exam_open"  # the id of the exam the state below belongs to
PER_EXAM = ("exam_task", "exam_confirm_finish", "exam_advance", "exam_goto",
            "exam_confirmation", "exam_confirmation_shown", "exam_revealed", "exam_review_task")


def exam_opened(exam_id: int) -> None:
    """Call once the exam is picked, before anything of it is drawn: when another exam was
    open in the last run, what the page kept of that one is dropped."""
    if st.session_state.get(OPEN, exam_id) != exam_id:
        for key in PER_EXAM:
            st.session_state.pop(key, None)
    st.session_state[OPEN] = exam_id
