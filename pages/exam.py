"""/exam: students and physicians take the benchmark as the human baseline.

The answer box keeps what is typed as a draft on the server (`ui.exam.answer_box`: after a pause
in typing, without leaving the box), so a reload or another browser finds it. After a stage
is recorded the page lands on the stage it reveals. A finished attempt shows its review (the
taker's answers beside the reference answers) only where the exam allows it.
"""

import time

import streamlit as st

from db.engine import session
from db.study.exams import (
    answer_stage,
    attempt_for,
    exam_tasks,
    exams,
    finish,
    review_tasks,
)
from db.study.practice import LABEL as PRACTICE
from db.study.viewer_tools import viewer_tools
from db.text_limits import ANSWER
from errors import UserError
from ui.actions import confirm, show_confirmation, show_error
from ui.auth import current_user, require_role
from ui.case_panel import case_panel
from ui.element_keys import opaque_key
from ui.exam.answer_box import answer_box, last_typed
from ui.exam.drafts import box_drawn, keep_every_draft, keep_typed
from ui.exam.exam_state import exam_opened
from ui.exam.stage_scroll import scroll_to_stage
from ui.page_header import header_columns
from ui.page_keys import skip_link
from ui.plain_text import escape_markdown, untrusted_text
from ui.response_view import FAMILY_NAMES, response_view, stage_label

STAGES_KEY = "exam-stages"  # the container of the task's stages (where the scroll looks)
ANSWER_BOX = 'iframe[src*="nmb_answer_box"]'  # the skip link's target (ui.exam.answer_box)
ANSWER_HEIGHT = 130  # px of the answer's box: with the stage text, in view at 1280 x 800
EXAM_CSS = """<style>
[data-testid="stMainBlockContainer"] { padding-top: 3.75rem; padding-bottom: 2rem;
  padding-left: 1.5rem; padding-right: 1.5rem; }
[data-testid="stHtml"] h5 { margin: 0; padding: 0.25rem 0 0; }
[data-testid="stMain"] [data-testid="stVerticalBlock"] { gap: 0.6rem; }
</style>"""

user = require_role("physician", "student")
# One screen at 1280 x 800, as /score: the sidebar folded, one header line, the viewer beside
# the question from the top (as /score: docs/scoring.md).
st.set_page_config(initial_sidebar_state="collapsed")
st.html(EXAM_CSS)
skip_link(label="Skip to your answer", target=ANSWER_BOX)
# (weight, least width in rem) of each column; the task's group wraps whole when narrow (zoom)
title, exam_box, progress_box, task_box, go = header_columns(
    "nmb-header", [[(1.1, 4.5), (2.2, 14), (1.8, 10)], [(3.2, 16), (1.1, 6.5)]],
    vertical_alignment="bottom")
title.markdown("##### Exam")
keep_every_draft()  # the text a box sent as the taker moved on to another task or exam

with session() as s:
    available = sorted(exams(s), key=lambda e: e.closed_at is not None)  # open ones first
    tools = viewer_tools(s)
if not available:
    st.info("No exam is open yet.")
    st.stop()
names = {e.id: e.name + (" (closed)" if e.closed_at is not None else "") for e in available}
# keyed: an exam opened meanwhile does not reset it
exam_id = exam_box.selectbox("Exam", list(names), format_func=names.get, key="exam_pick",
                             label_visibility="collapsed")
exam = next(e for e in available if e.id == exam_id)
exam_opened(exam_id)  # another exam: its own task open, no question or message of the last
try:
    with session() as s:
        attempt = attempt_for(s, exam_id=exam_id, user_id=user.id)
        tasks = exam_tasks(s, attempt=attempt)
except UserError as e:  # the study database busy past the write's deadline (db.busy)
    show_error(e)
    st.stop()

done = sum(t.done for t in tasks)
progress_box.progress(done / len(tasks), text=f"{done} of {len(tasks)} tasks answered")


def review() -> None:
    """The taker's answers beside the reference answers, one task at a time (text only)."""
    with session() as s:
        reviewed = review_tasks(s, attempt=attempt)
    st.subheader("Review")
    st.caption("Your answers, stage by stage, beside the reference answer of each task.")
    titles = {i: f"{i + 1}. {FAMILY_NAMES[t.family]} · level {t.level}"
              for i, t in enumerate(reviewed)}
    t = reviewed[st.selectbox("Task", list(titles), format_func=titles.get,
                              key="exam_review_task")]
    yours, reference = st.columns(2, gap="large")
    with yours:
        st.markdown("**Your answers**")
        response_view(t.family, t.level, t.prompt, t.stages, t.answers,
                      missing="No answer given for this stage.")
    with reference:
        st.markdown("**Reference answer**")
        if t.withheld:
            st.caption("Withheld while a task of this case waits for you in an exam you have not "
                       "finished: "
                       + ", ".join(f"“{escape_markdown(name)}”" for name in t.withheld) + ".")
        elif not t.reference:
            st.caption("This case has no reference answer.")
        for label, text in t.reference:
            st.caption(label)
            untrusted_text(text)


if attempt.finished_at is not None:
    st.success("You have finished this exam. Thank you.")
    if exam.review:
        review()
    st.stop()


def finish_now() -> bool:
    """Finish the attempt; False, with one error line, when it cannot be (another tab of the
    taker finished it meanwhile)."""
    try:
        with session() as s:
            finish(s, attempt=attempt, actor=user.name)
    except UserError as e:
        show_error(e)
        return False
    return True


def finish_buttons() -> None:
    """The "Finish the exam" button, then its confirmation."""
    if not st.session_state.get("exam_confirm_finish"):
        if st.button("Finish the exam", type="primary"):
            st.session_state["exam_confirm_finish"] = True
            st.rerun()
    else:
        st.warning("Finish the exam now? Your answers can no longer change afterwards.")
        yes, no, _ = st.columns([1, 1, 3])
        if yes.button("Yes, finish the exam", type="primary"):
            st.session_state.pop("exam_confirm_finish")
            if finish_now():
                st.rerun()
        if no.button("Not yet"):
            st.session_state.pop("exam_confirm_finish")
            st.rerun()


if exam.closed_at is not None:  # no new answer; what was recorded can still be handed in
    answered = sum(t.answered for t in tasks)
    st.info(f"This exam is closed: it takes no new answers. Finish it to hand in the "
            f"{answered} of {len(tasks)} tasks you answered fully.", icon=":material/lock:")
    finish_buttons()
    st.stop()

with st.container(key="exam-notices"):  # always drawn: the viewer keeps its place (/score)
    if done == len(tasks):
        st.info("Every task is answered. Finishing locks your answers; until then you can "
                "review them below.", icon=":material/flag:")
        finish_buttons()

labels = {i: f"{i + 1}. " + (f"{PRACTICE} · " if t.practice else "")
          + f"{FAMILY_NAMES[t.family]} · level {t.level}" + (" ✓" if t.done else "")
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
if (first := st.session_state.pop("exam_goto", None)) is not None:  # a task to answer first
    st.session_state["exam_task"] = first
i = task_box.selectbox("Task", list(labels), format_func=labels.get, key="exam_task",
                       label_visibility="collapsed")
go.button("Next task", on_click=next_task, disabled=not [j for j in pending if j != i],
          use_container_width=True)
task = tasks[i]
revealed = st.session_state.pop("exam_revealed", None)  # (task, stage label, message)


def answer_area(stage: int) -> None:
    """The box for the answer to `stage` (0-based): its text is stored as typed, and its
    button records it. A fragment: a pause in typing reruns only this part of the page."""
    # opaque (the task id may name the diagnosis); by attempt: a task in two exams, two boxes
    key = f"exam_answer_{attempt.id}_{opaque_key('task', task.task_id)}_{stage}"
    handled_key = f"{key}_handled"
    box = {"attempt_id": attempt.id, "task_id": task.task_id, "stage": stage}
    box_drawn(key, **box)
    latest = last_typed(key, max_chars=ANSWER)  # what the box sent since the last run
    if latest is not None and current_user() is None:  # the session ended: to the login
        st.rerun()
    stored = keep_typed(key, **box)  # its text, as the attempt's draft
    handled = st.session_state.get(handled_key, 0)
    if latest is not None and latest.record > handled:  # the button was clicked: record it
        st.session_state[handled_key] = handled = latest.record
        record_answer(stage, latest.text)
    at = stage_label(stage + 1, task.n_stages)
    answer_box(label="Your answer" + (f" at {at.lower()}" if at else ""),
               text=(attempt.drafts or {}).get(task.task_id, ""), max_chars=ANSWER,
               saved=stored.edit if stored is not None and latest is not None else 0,
               handled=handled, action="Record answer", key=key, height=ANSWER_HEIGHT)
    note = "Answers cannot be changed once recorded. What you type is saved as a draft."
    if task.n_stages > 1:
        note += " More information is revealed after each answer."
    st.caption(note)


def waiting_note(waiting: list[int]) -> str:
    """Why the next stage is not shown yet: the tasks about the same case to answer first."""
    many = len(waiting) > 1
    return (f"The next stage of this task is revealed once task{'s' if many else ''} "
            f"{', '.join(map(str, waiting))}, about the same case, {'are' if many else 'is'} "
            "answered: what it reveals would tell the answer.")


def record_answer(stage: int, text: str) -> None:
    """Record `text` as the answer to `stage`; then the whole page moves on: to the stage it
    reveals (scrolled into view), or to the next task (at its top)."""
    started = st.session_state[f"exam_started_{attempt.id}_{task.task_id}_{stage}"]
    try:
        with session() as s:
            answer_stage(s, attempt=attempt, task_id=task.task_id, text=text,
                         seconds=time.monotonic() - started, stage=stage)
    except UserError as e:
        show_error(e)
        return
    at = stage_label(stage + 1, task.n_stages)
    message = f"Answer recorded for task {i + 1}" + (f", {at.lower()}" if at else "")
    if stage + 1 == task.n_stages:
        confirm("exam_confirmation", message + ". Task complete.")
        st.session_state["exam_advance"] = True
    elif task.waiting_for:  # its next stage waits for the case's other tasks: go there
        confirm("exam_confirmation", f"{message}. {waiting_note(task.waiting_for)}")
        st.session_state["exam_goto"] = task.waiting_for[0] - 1
    else:
        following = stage_label(stage + 2, task.n_stages)
        st.session_state["exam_revealed"] = (task.task_id, following,
                                             f"{message}. {following} is shown.")
    st.rerun(scope="app")


def following_volumes() -> list:
    """The volumes of the task "Next task" opens, fetched by the browser while this one is
    answered (none when it is this case)."""
    later = [j for j in pending if j > i] + [j for j in pending if j < i]
    if not later or tasks[later[0]].series == task.series:
        return []
    return [x for x in tasks[later[0]].series if not getattr(x, "picture", False)]


with case_panel(key=opaque_key("task", task.task_id), title=task.case_title, ehr=task.ehr,
                scores=task.scores, series=task.series, key_slices=task.key_slices,
                compact=True, opening=task.opening_view, family=task.family,
                prefetch=following_volumes(), tools=tools):
    # Confirmations are inline, in this column: never a toast over the stage or box they confirm.
    show_confirmation("exam_confirmation", i, toast=False)  # a completed task: the next at its top
    if task.practice:  # first in the exam (db.study.practice)
        st.info(f"**{PRACTICE}**: answer it as any task, to learn the exam; it is never part "
                "of the results.", icon=":material/school:")
    with st.container(key=STAGES_KEY):
        response_view(task.family, task.level, task.prompt, task.revealed_stages,
                      task.answers, n_stages=task.n_stages)
    if revealed and revealed[0] == task.task_id:
        st.caption(f":green[:material/check_circle: {escape_markdown(revealed[2])}]")
        scroll_to_stage(STAGES_KEY, revealed[1])
    if task.elsewhere is not None:
        st.info(f"Not asked here: in the exam “{escape_markdown(task.elsewhere)}” you answered "
                "this task, or saw more of its case (a later stage, or its reference answer in "
                "the review). A task is answered once, before more of its case is known.",
                icon=":material/done_all:")
    elif not task.done and not task.answerable:
        st.info(waiting_note(task.waiting_for), icon=":material/lock:")
    elif not task.done:
        stage = len(task.answers)
        started = f"exam_started_{attempt.id}_{task.task_id}_{stage}"
        st.session_state.setdefault(started, time.monotonic())
        st.fragment(answer_area)(stage)
