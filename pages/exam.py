"""/exam: students and physicians take the benchmark as the human baseline."""

import time

import streamlit as st

from db.engine import session
from db.study.exams import answer_stage, attempt_for, exam_tasks, exams, finish, save_draft
from db.text_limits import ANSWER
from errors import UserError
from ui.actions import confirm, show_confirmation, show_error
from ui.auth import require_role, while_signed_in
from ui.case_panel import case_panel
from ui.response_view import FAMILY_NAMES, response_view, stage_label

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


def finish_now() -> None:
    with session() as s:
        finish(s, attempt=attempt, actor=user.name)


if done == len(tasks):
    st.info("Every task is answered. Finishing locks your answers; until then you can "
            "review them below.", icon=":material/flag:")
    if not st.session_state.get("exam_confirm_finish"):
        if st.button("Finish the exam", type="primary"):
            st.session_state["exam_confirm_finish"] = True
            st.rerun()
    else:
        st.warning("Finish the exam now? Your answers can no longer change afterwards.")
        yes, no, _ = st.columns([1, 1, 3])
        if yes.button("Yes, finish the exam", type="primary"):
            finish_now()
            st.session_state.pop("exam_confirm_finish")
            st.rerun()
        if no.button("Not yet"):
            st.session_state.pop("exam_confirm_finish")
            st.rerun()

labels = {i: f"{i + 1}. {FAMILY_NAMES[t.family]} · level {t.level}" + (" ✓" if t.done else "")
          for i, t in enumerate(tasks)}
if "exam_task" not in st.session_state:
    st.session_state["exam_task"] = next((i for i, t in enumerate(tasks) if not t.done), 0)
pending = [j for j, t in enumerate(tasks) if not t.done]


def next_task() -> None:
    here = st.session_state["exam_task"]
    later = [j for j in pending if j > here] + [j for j in pending if j < here]
    if later:
        st.session_state["exam_task"] = later[0]


if st.session_state.pop("exam_advance", False):
    next_task()
pick, go = st.columns([4, 1], vertical_alignment="bottom")
i = pick.selectbox("Task", list(labels), format_func=labels.get, key="exam_task")
go.button("Next task", on_click=next_task, disabled=not [j for j in pending if j != i],
          use_container_width=True)
task = tasks[i]
show_confirmation("exam_confirmation", i)

with case_panel(key=f"case-{task.task_id}", title=task.case_title, ehr=task.ehr,
                scores=task.scores, series=task.series):
    response_view(task.family, task.level, task.prompt, task.revealed_stages, task.answers,
                  n_stages=task.n_stages)
    if not task.done:
        stage = len(task.answers)
        st.session_state.setdefault(f"exam_started_{task.task_id}_{stage}", time.monotonic())
        key = f"exam_answer_{task.task_id}_{stage}"
        if key not in st.session_state:  # a reopened tab finds the answer being written
            st.session_state[key] = (attempt.drafts or {}).get(task.task_id, "")

        def keep_draft() -> None:
            with session() as s:
                save_draft(s, attempt=attempt, task_id=task.task_id, text=st.session_state[key])

        at = stage_label(stage + 1, task.n_stages)
        text = st.text_area("Your answer" + (f" at {at.lower()}" if at else ""),
                            key=key, height=200, on_change=while_signed_in(keep_draft),
                            max_chars=ANSWER)
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
                last = stage + 1 == task.n_stages
                confirm("exam_confirmation", (
                    f"Answer recorded for task {i + 1}" + (f", {at.lower()}" if at else "")
                    + (". Task complete." if last else ". New information is shown below.")))
                st.session_state["exam_advance"] = last
                st.rerun()
