"""/score: an expert scores rationales against the rubric, blinded to their source."""

import functools

import streamlit as st

from db.engine import session
from db.raters.scoring import (
    QueueFilter,
    filter_queue,
    find_entry,
    first_to_open,
    item_volumes,
    load_item,
    next_unscored,
    queue,
    step,
)
from db.rubrics import rubric_by_hash
from db.study.cases import reference_fields
from db.study.practice import LABEL as PRACTICE
from db.study.viewer_tools import viewer_tools
from db.text_limits import NAME
from errors import counted
from rubric.render import form_spec
from ui.actions import show_confirmation
from ui.auth import require_role, while_signed_in
from ui.case_panel import case_panel
from ui.element_keys import opaque_key
from ui.page_header import header_columns
from ui.page_keys import skip_link
from ui.plain_text import escape_markdown, untrusted_text
from ui.response_view import response_view
from ui.score.rubric_form import rubric_form
from ui.score.score_keys import (
    COMPACT_CSS,
    RUBRIC_KEY,
    SHORTCUT_HELP,
    SHORTCUTS,
    item_key,
    score_keys,
)
from ui.score.score_queue import filter_controls, queue_filter
from ui.score.score_writes import (
    ADVANCE,
    CONFIRMATION,
    draw,
    missing,
    save,
    saved_at,
    show_notes,
    submit_form,
)

user = require_role("expert")
st.set_page_config(initial_sidebar_state="collapsed")  # the images need the width (docs/scoring.md)
st.html(COMPACT_CSS)
SUBMIT_KEY = "nmb-submit"
skip_link(label="Skip to Submit (Ctrl+Enter submits)", target=f".st-key-{SUBMIT_KEY} button",
          names={"score-previous": "Previous item (Alt+P)", "score-next": "Next item (Alt+N)",
                 "score-unscored": "Next unscored item (Alt+U)",
                 "score-filters": "Filter the queue", "score-keys-help": "Keyboard shortcuts"})

with session() as s:
    entries = queue(s, rater_id=user.id)
if not entries:
    st.title("Score rationales")
    st.info("No items are assigned to you yet.")
    st.stop()

done = sum(e.status == "submitted" for e in entries)
ids = [e.assignment_id for e in entries]
# The item shown is the session's own `score_current`, moved only by the navigation callbacks
# below. The item list is a widget of its own that follows it: when it held the item itself, a
# browser still showing its old label (a first draft turns "new" into "draft") sent back a label
# that is no item, and the page fell back to the first unscored item.
if st.session_state.get("score_current") not in ids:
    st.session_state["score_current"] = first_to_open(entries, st.query_params.get("item"))
wanted = queue_filter(entries)
listed = filter_queue(entries, wanted)


def move(to: int) -> None:
    st.session_state["score_current"] = to


def chosen() -> None:
    """The item list's choice (a label from a page drawn before the item's status changed is
    no item: ignored)."""
    if (choice := st.session_state.get("score_item_list")) in ids:
        move(choice)


def go_to() -> None:
    """Search: a position in the queue or a blind code (ignoring case; a unique part will do)."""
    text = st.session_state.get("score_search", "").strip()
    match = find_entry(entries, text)
    st.session_state["score_search_miss"] = None if match or not text else text
    if match:
        move(match.assignment_id)
    st.session_state["score_search"] = ""


if st.session_state.pop(ADVANCE, False):
    move(next_unscored(entries, st.session_state["score_current"], wanted))
current = st.session_state["score_current"]
if st.query_params.get("item") != (code := next(e.blind_code for e in entries
                                                 if e.assignment_id == current)):
    st.query_params["item"] = code  # a reload stays on the item
options = [e.assignment_id for e in listed] or [current]
if current not in options:  # the item shown stays choosable whatever the filters say
    options = sorted([*options, current], key=ids.index)
labels = {e.assignment_id: f"{e.position + 1}. " + (f"{PRACTICE} · " if e.practice else "")
          + f"{e.blind_code} · {e.status}" + (" · flagged" if e.flagged else "") for e in entries}
st.session_state["score_item_list"] = current
# (weight, least width in rem) of each column: the navigation's group wraps whole when narrow
title, progress, item_box, search, prev, nxt, unscored, filters, keys = header_columns(
    "nmb-header", [[(2.1, 10.5), (1.4, 8.5), (2.3, 13)],
                   [(1.6, 11.5), (0.95, 5.5), (0.95, 5.5), (0.95, 5.5), (0.5, 3.5), (0.5, 3.5)]])
title.markdown("##### Score rationales")
progress.progress(done / len(entries), text=f"{done} of {len(entries)} submitted")
item_box.selectbox("Item", options, format_func=labels.get, key="score_item_list",
                   on_change=chosen, label_visibility="collapsed")
search.text_input("Go to item", key="score_search", on_change=go_to, max_chars=NAME,
                  placeholder="Go to: position or code", label_visibility="collapsed",
                  help="A queue position or a blind code, then Enter; case does not matter "
                       "and a unique part of a code will do.")
prev.button("", icon=":material/chevron_left:", on_click=move,
            args=(step(entries, current, wanted, -1),), help="Previous item",
            shortcut=SHORTCUTS["previous"], use_container_width=True, key="score-previous")
nxt.button("", icon=":material/chevron_right:", on_click=move,
           args=(step(entries, current, wanted, 1),), help="Next item",
           shortcut=SHORTCUTS["next"], use_container_width=True, key="score-next")
unscored.button("", icon=":material/skip_next:", on_click=move,
                args=(next_unscored(entries, current, wanted),),
                disabled=done == len(entries), help="Next unscored item",
                shortcut=SHORTCUTS["unscored"], use_container_width=True, key="score-unscored")
with filters.popover("", icon=":material/filter_list:", help="Filter the queue",
                     use_container_width=True, key="score-filters"):
    filter_controls(entries)
with keys.popover("", icon=":material/keyboard:", help="Keyboard shortcuts",
                  use_container_width=True, key="score-keys-help"):
    st.markdown(SHORTCUT_HELP)
aid = st.session_state["score_current"]
# The notices sit in one container that is always drawn, so that the viewer below keeps its
# place in the page from item to item: a page element that moves is drawn anew, and the
# viewer's frame and its compiled WebGL programs would be built again (ui.case_panel).
with st.container(key="score-notices"):
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
    show_confirmation(CONFIRMATION, aid)
with session() as s:
    item = load_item(s, rater_id=user.id, assignment_id=aid)
    spec = form_spec(rubric_by_hash(s, item.rubric_hash), item.family)
    following = next_unscored(entries, aid, wanted)  # its images fetched while this is scored
    ahead = [] if following == aid else item_volumes(s, rater_id=user.id,
                                                      assignment_id=following)
    tools = viewer_tools(s)

draw(item)
with case_panel(key=opaque_key("case", item.case_id), title=item.case_title, ehr=item.ehr,
                scores=item.scores, series=item.series, masks=item.masks,
                key_slices=item.key_slices, compact=True, opening=item.opening_view,
                family=item.family, prefetch=ahead, tools=tools):
    if item.practice:  # first in the queue (db.study.practice)
        st.info(f"**{PRACTICE}**: score it as any item, to learn the tool; it is never part "
                "of the results.", icon=":material/school:")
    response_view(item.family, item.level, item.prompt, item.stages, [item.text, *item.turns],
                  missing="No answer given for this stage.")
    with st.expander("Reference answer"):
        for label, text in reference_fields(item.reference):
            if text:
                st.markdown(f"**{label}**")
                untrusted_text(text)
    if item.status == "submitted":
        st.caption(f"Submitted (revision {item.revision}); changes here are a new revision.")
    show_notes(aid, "above")
    with st.container(key=RUBRIC_KEY):
        rubric_form(item_key(item.blind_code), spec, item.values,
                    on_change=while_signed_in(functools.partial(save, user, item.blind_code)),
                    missing=missing(aid), stages=len(item.stages), revision=item.revision)
    saved = saved_at(aid)
    st.caption(f":material/cloud_done: Draft saved at {saved}" if saved
               else "Every change is saved as a draft at once.")
    show_notes(aid, "below")
    # Keyed by the item: a click on an earlier item's Submit is that item's, never this one's.
    with st.container(key=SUBMIT_KEY):  # the skip link's target
        st.button("Submit", type="primary", shortcut=SHORTCUTS["submit"],
                  key=f"{item_key(item.blind_code)}-submit",
                  on_click=while_signed_in(submit_form),
                  args=(user, item.blind_code, spec, len(item.stages), ids.index(aid) + 1))
score_keys(item=item.blind_code)
