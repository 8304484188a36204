"""/score: an expert scores rationales against the rubric, blinded to their source."""

import time

import streamlit as st

from db.engine import session
from db.raters.scoring import (
    QueueFilter,
    StaleForm,
    filter_queue,
    find_entry,
    load_item,
    queue,
    save_draft,
    submit,
)
from db.rubrics import rubric_by_hash
from db.study.cases import reference_fields
from db.text_limits import NAME
from errors import UserError, counted
from rubric.render import form_spec
from rubric.scoring import MissingFields
from ui.actions import confirm, show_confirmation, show_error
from ui.auth import require_role, while_signed_in
from ui.case_panel import case_panel
from ui.element_keys import opaque_key
from ui.plain_text import escape_markdown, untrusted_text
from ui.response_view import response_view
from ui.score.rubric_form import form_revision, reseed, rubric_form, set_form_revision
from ui.score.score_keys import (
    COMPACT_CSS,
    RUBRIC_KEY,
    SHORTCUT_HELP,
    SHORTCUTS,
    item_key,
    score_keys,
)
from ui.score.score_queue import filter_controls, queue_filter

user = require_role("expert")
st.set_page_config(initial_sidebar_state="collapsed")  # the images need the width (docs/scoring.md)
st.html(COMPACT_CSS)

with session() as s:
    entries = queue(s, rater_id=user.id)
if not entries:
    st.title("Score rationales")
    st.info("No items are assigned to you yet.")
    st.stop()

done = sum(e.status == "submitted" for e in entries)
ids = [e.assignment_id for e in entries]
if st.session_state.get("score_current") not in ids:
    st.session_state["score_current"] = next(
        (e.assignment_id for e in entries if e.status != "submitted"), ids[0])
wanted = queue_filter(entries)
listed = filter_queue(entries, wanted)


def next_unscored() -> None:
    current = ids.index(st.session_state["score_current"])
    later = [e for e in entries[current + 1:] + entries[:current]
             if e.status != "submitted" and wanted.admits(e)]
    if later:
        st.session_state["score_current"] = later[0].assignment_id


def step(by: int) -> None:
    """The next (previous) item of the listed ones, from the current item's queue position."""
    if not listed:
        return
    position = ids.index(st.session_state["score_current"])
    order = [e.assignment_id for e in listed]
    after = [e for e in listed if (ids.index(e.assignment_id) - position) * by > 0]
    st.session_state["score_current"] = (
        (after[0] if by > 0 else after[-1]).assignment_id if after
        else order[0 if by > 0 else -1])


def go_to() -> None:
    """Search: a position in the queue or a blind code (ignoring case; a unique part will do)."""
    text = st.session_state.get("score_search", "").strip()
    match = find_entry(entries, text)
    st.session_state["score_search_miss"] = None if match or not text else text
    if match:
        st.session_state["score_current"] = match.assignment_id
    st.session_state["score_search"] = ""


if st.session_state.pop("score_advance", False):
    next_unscored()
current = st.session_state["score_current"]
options = [e.assignment_id for e in listed] or [current]
if current not in options:  # the item shown stays choosable whatever the filters say
    options = sorted([*options, current], key=ids.index)
labels = {e.assignment_id: f"{e.position + 1}. {e.blind_code} · {e.status}"
          + (" · flagged" if e.flagged else "") for e in entries}
title, progress, item_box, search, prev, nxt, unscored, filters, keys = st.columns(
    [1.9, 1.5, 2.5, 1.6, 0.95, 0.95, 0.95, 0.5, 0.5], gap="small", vertical_alignment="center")
title.markdown("##### Score rationales")
progress.progress(done / len(entries), text=f"{done} of {len(entries)} submitted")
item_box.selectbox("Item", options, format_func=labels.get, key="score_current",
                   label_visibility="collapsed")
search.text_input("Go to item", key="score_search", on_change=go_to, max_chars=NAME,
                  placeholder="Go to: position or code", label_visibility="collapsed",
                  help="A queue position or a blind code, then Enter; case does not matter "
                       "and a unique part of a code will do.")
prev.button("", icon=":material/chevron_left:", on_click=step, args=(-1,), help="Previous item",
            shortcut=SHORTCUTS["previous"], use_container_width=True)
nxt.button("", icon=":material/chevron_right:", on_click=step, args=(1,), help="Next item",
           shortcut=SHORTCUTS["next"], use_container_width=True)
unscored.button("", icon=":material/skip_next:", on_click=next_unscored,
                disabled=done == len(entries), help="Next unscored item",
                shortcut=SHORTCUTS["unscored"], use_container_width=True)
with filters.popover("", icon=":material/filter_list:", help="Filter the queue",
                     use_container_width=True):
    filter_controls(entries)
with keys.popover("", icon=":material/keyboard:", help="Keyboard shortcuts",
                  use_container_width=True):
    st.markdown(SHORTCUT_HELP)
if miss := st.session_state.get("score_search_miss"):
    st.warning(f"No item at position or with blind code “{escape_markdown(miss)}”.")
if wanted != QueueFilter():
    st.caption(f"Filtered: {len(listed)} of {counted(len(entries), 'item')} listed"
               + ("" if listed else " (none matches: the current item stays shown)") + ".")
if done == len(entries):
    every = "The item is" if len(entries) == 1 else f"All {len(entries)} items are"
    st.success(f"{every} submitted. Thank you: your queue is complete. "
               "You can still reopen any item; a change is saved as a new revision.",
               icon=":material/task_alt:")

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


def shown() -> str:
    """The item as the rater saw it: as the last run drew it (`ScoringItem.shown`), not as this
    run, which a click starts, has just loaded it."""
    return st.session_state.get(f"score_shown_{aid}", item.shown)


def stale(e: StaleForm) -> None:
    """Another tab or session submitted this item since the form was drawn, or the item
    changed: the form is drawn again from what is stored, with a line saying so."""
    reseed(item_key(item))
    st.session_state[f"score_stale_{aid}"] = str(e)


def save(values: dict) -> None:
    try:
        with session() as s:
            save_draft(s, rater_id=user.id, assignment_id=aid, values=values,
                       active_seconds=active_seconds(), base_revision=form_revision(item_key(item)),
                       shown=shown())
    except StaleForm as e:
        stale(e)
        return
    except UserError as e:  # the study database busy past the write's deadline (db.busy)
        st.session_state[f"score_unsaved_{aid}"] = str(e)
        return
    st.session_state.pop(f"score_unsaved_{aid}", None)
    st.session_state[f"score_saved_{aid}"] = time.strftime("%H:%M:%S")


st.session_state.setdefault("score_last_touch", time.monotonic())
with case_panel(key=opaque_key("case", item.case_id), title=item.case_title, ehr=item.ehr,
                scores=item.scores, series=item.series, masks=item.masks,
                key_slices=item.key_slices, compact=True):
    response_view(item.family, item.level, item.prompt, item.stages, [item.text, *item.turns],
                  missing="No answer given for this stage.")
    with st.expander("Reference answer"):
        for label, text in reference_fields(item.reference):
            if text:
                st.markdown(f"**{label}**")
                untrusted_text(text)
    if item.status == "submitted":
        st.caption(f"Submitted (revision {item.revision}); changes here are a new revision.")
    with st.container(key=RUBRIC_KEY):
        values = rubric_form(item_key(item), spec, item.values, on_change=while_signed_in(save),
                             missing=st.session_state.get(f"score_missing_{aid}"),
                             stages=len(item.stages), revision=item.revision)
    saved = st.session_state.get(f"score_saved_{aid}")
    if unsaved := st.session_state.get(f"score_unsaved_{aid}"):
        st.error(escape_markdown(unsaved))
    st.caption(f":material/cloud_done: Draft saved at {saved}" if saved
               else "Every change is saved as a draft at once.")
    if note := st.session_state.pop(f"score_missing_note_{aid}", None):
        st.error(escape_markdown(note))
    if note := st.session_state.pop(f"score_stale_{aid}", None):
        st.warning(escape_markdown(note), icon=":material/sync_problem:")
    if st.button("Submit", type="primary", shortcut=SHORTCUTS["submit"]):
        try:
            with session() as s:
                score = submit(s, rater_id=user.id, assignment_id=aid, values=values,
                               active_seconds=active_seconds(), actor=user.name,
                               base_revision=form_revision(item_key(item)), shown=shown())
        except StaleForm as e:
            stale(e)
            st.rerun()
        except MissingFields as e:
            st.session_state[f"score_missing_{aid}"] = e.fields
            st.session_state[f"score_missing_note_{aid}"] = str(e)
            st.rerun()
        except UserError as e:
            show_error(e)
        else:
            set_form_revision(item_key(item), score.revision)
            st.session_state.pop(f"score_missing_{aid}", None)
            position = ids.index(aid) + 1
            st.session_state["score_advance"] = True
            confirm("score_confirmation", f"Item {position} ({item.blind_code}) submitted.")
            st.rerun()
score_keys(item=item.blind_code)
st.session_state[f"score_shown_{aid}"] = item.shown  # what a click on this run's page saw
