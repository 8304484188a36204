"""/exam: students and physicians take the benchmark as the human baseline."""

import time

import streamlit as st

from db.engine import session
from db.exams import answer_stage, attempt_for, exam_tasks, exams, finish, save_draft
from errors import UserError
from ui.actions import show_error
from ui.auth import require_role, while_signed_in
from ui.case_panel import case_panel
from ui.response_view import FAMILY_NAMES, response_view

user = require_role("physician", "student")
st.title("Exam")

with session() as s:
    available = exams(s)
if not available:
    st.info("No exam is open yet.")
    st.stop()
names = {e.id: e.name for e in available}
exam_id = st.selectbox("Exam", list(names), format_func=names.get)
with session() as s:
    attempt = attempt_for(s, exam_id=exam_id, user_id=user.id)
    tasks = exam_tasks(s, attempt=attempt)

done = sum(t.done for t in tasks)
st.progress(done / len(tasks), text=f"{done} of {len(tasks)} tasks answered")
if attempt.finished_at is not None:
    st.success("You have finished this exam. Thank you.")
    st.stop()

labels = {i: f"{i + 1}. {FAMILY_NAMES[t.family]} · level {t.level}" + (" ✓" if t.done else "")
          for i, t in enumerate(tasks)}
if "exam_task" not in st.session_state:
    st.session_state["exam_task"] = next((i for i, t in enumerate(tasks) if not t.done), 0)
i = st.selectbox("Task", list(labels), format_func=labels.get, key="exam_task")
task = tasks[i]

left, right = st.columns([3, 2])
with left:
    case_panel(key=f"case-{task.task_id}", title=task.case_title, ehr=task.ehr,
               scores=task.scores, series=task.series)
with right:
    response_view(task.family, task.level, task.prompt, task.revealed_stages, task.answers)
    if not task.done:
        stage = len(task.answers)
        st.session_state.setdefault(f"exam_started_{task.task_id}_{stage}", time.monotonic())
        key = f"exam_answer_{task.task_id}_{stage}"
        if key not in st.session_state:  # a reopened tab finds the answer being written
            st.session_state[key] = (attempt.drafts or {}).get(task.task_id, "")

        def keep_draft() -> None:
            with session() as s:
                save_draft(s, attempt=attempt, task_id=task.task_id, text=st.session_state[key])

        text = st.text_area("Your answer" + (" (after the new information)" if stage else ""),
                            key=key, height=200, on_change=while_signed_in(keep_draft))
        note = "Answers cannot be changed once recorded."
        if task.n_stages > 1:
            note += " More information is revealed after each answer."
        st.caption(note)
        if st.button("Record answer", type="primary"):
            started = st.session_state[f"exam_started_{task.task_id}_{stage}"]
            try:
                with session() as s:
                    answer_stage(s, attempt=attempt, task_id=task.task_id, text=text,
                                 seconds=time.monotonic() - started)
            except UserError as e:
                show_error(e)
            else:
                st.rerun()

if done == len(tasks) and st.button("Finish the exam"):
    with session() as s:
        finish(s, attempt=attempt, actor=user.name)
    st.rerun()
