"""/score: an expert scores rationales against the rubric, blinded to their source."""

import time

import streamlit as st

from db.engine import session
from db.raters.scoring import load_item, queue, save_draft, submit
from db.rubrics import rubric_by_hash
from db.study.cases import reference_fields
from db.text_limits import NAME
from errors import UserError
from rubric.render import form_spec
from rubric.scoring import MissingFields
from ui.actions import confirm, show_confirmation, show_error
from ui.auth import require_role, while_signed_in
from ui.case_panel import case_panel
from ui.plain_text import escape_markdown, untrusted_text
from ui.response_view import response_view
from ui.rubric_form import rubric_form

user = require_role("expert")
st.title("Score rationales")

with session() as s:
    entries = queue(s, rater_id=user.id)
if not entries:
    st.info("No items are assigned to you yet.")
    st.stop()

done = sum(e.status == "submitted" for e in entries)
st.progress(done / len(entries), text=f"{done} of {len(entries)} submitted")
if done == len(entries):
    st.success(f"All {len(entries)} items are submitted. Thank you: your queue is complete. "
               "You can still reopen any item below; a change is saved as a new revision.",
               icon=":material/task_alt:")

ids = [e.assignment_id for e in entries]
labels = {e.assignment_id: f"{e.position + 1}. {e.blind_code} · {e.status}" for e in entries}
if st.session_state.get("score_current") not in ids:
    st.session_state["score_current"] = next(
        (e.assignment_id for e in entries if e.status != "submitted"), ids[0])


def next_unscored() -> None:
    current = ids.index(st.session_state["score_current"])
    later = [e for e in entries[current + 1:] + entries[:current] if e.status != "submitted"]
    if later:
        st.session_state["score_current"] = later[0].assignment_id


def step(by: int) -> None:
    st.session_state["score_current"] = ids[
        (ids.index(st.session_state["score_current"]) + by) % len(ids)]


def go_to() -> None:
    """Exact search: an item's position in the queue or its blind code."""
    wanted = st.session_state.get("score_search", "").strip()
    match = next((e for e in entries if wanted in (str(e.position + 1), e.blind_code)), None)
    st.session_state["score_search_miss"] = None if match or not wanted else wanted
    if match:
        st.session_state["score_current"] = match.assignment_id
    st.session_state["score_search"] = ""


if st.session_state.pop("score_advance", False):
    next_unscored()
nav, search = st.columns([3, 2], vertical_alignment="bottom")
nav.selectbox("Item", ids, format_func=labels.get, key="score_current")
search.text_input("Go to item", key="score_search", on_change=go_to, max_chars=NAME,
                  placeholder="Position or blind code, then Enter")
if miss := st.session_state.get("score_search_miss"):
    st.warning(f"No item at position or with blind code “{escape_markdown(miss)}”.")
prev, nxt, unscored, _ = st.columns([1, 1, 1, 3])
prev.button("Previous", on_click=step, args=(-1,), use_container_width=True)
nxt.button("Next", on_click=step, args=(1,), use_container_width=True)
unscored.button("Next unscored", on_click=next_unscored, disabled=done == len(entries),
                use_container_width=True)

aid = st.session_state["score_current"]
show_confirmation("score_confirmation", aid)
with session() as s:
    item = load_item(s, rater_id=user.id, assignment_id=aid)
    spec = form_spec(rubric_by_hash(s, item.rubric_hash), item.family)


def active_seconds() -> float:
    """Seconds since the rater's last interaction (the service caps idle gaps)."""
    now = time.monotonic()
    last = st.session_state.get("score_last_touch", now)
    st.session_state["score_last_touch"] = now
    return now - last


def save(values: dict) -> None:
    with session() as s:
        save_draft(s, rater_id=user.id, assignment_id=aid, values=values,
                   active_seconds=active_seconds())
    st.session_state[f"score_saved_{aid}"] = time.strftime("%H:%M:%S")


st.session_state.setdefault("score_last_touch", time.monotonic())
with case_panel(key=f"case-{item.case_id}", title=item.case_title, ehr=item.ehr,
                scores=item.scores, series=item.series, masks=item.masks):
    response_view(item.family, item.level, item.prompt, item.stages, [item.text, *item.turns],
                  missing="No answer given for this stage.")
    with st.expander("Reference answer"):
        for label, text in reference_fields(item.reference):
            if text:
                st.markdown(f"**{label}**")
                untrusted_text(text)
    st.subheader("Rubric")
    if item.status == "submitted":
        st.caption(f"Submitted (revision {item.revision}); changes here are a new revision.")
    values = rubric_form(f"a{aid}", spec, item.values, on_change=while_signed_in(save),
                         missing=st.session_state.get(f"score_missing_{aid}"))
    saved = st.session_state.get(f"score_saved_{aid}")
    st.caption(f":material/cloud_done: Draft saved at {saved}" if saved
               else "Every change is saved as a draft at once.")
    if note := st.session_state.pop(f"score_missing_note_{aid}", None):
        st.error(escape_markdown(note))
    if st.button("Submit", type="primary"):
        try:
            with session() as s:
                submit(s, rater_id=user.id, assignment_id=aid, values=values,
                       active_seconds=active_seconds(), actor=user.name)
        except MissingFields as e:
            st.session_state[f"score_missing_{aid}"] = e.fields
            st.session_state[f"score_missing_note_{aid}"] = str(e)
            st.rerun()
        except UserError as e:
            show_error(e)
        else:
            st.session_state.pop(f"score_missing_{aid}", None)
            position = ids.index(aid) + 1
            st.session_state["score_advance"] = True
            confirm("score_confirmation", f"Item {position} ({item.blind_code}) submitted.")
            st.rerun()
