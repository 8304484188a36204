"""/score's writes, each bound to the item it was made on: the form's drafts and its Submit.

The page records the item whose form it draws (`draw`); a widget callback runs on a later run,
before that run draws anything, so what is recorded then is what the browser was shown. Every
draft and submit names the blind code of the form it came from (`made_on`) and is stored on the
recorded item, or refused by the service (`db.raters.scoring.OtherItem`) when the two differ:
a click that was on its way while the page moved to another item lands nowhere, with a line
saying so, rather than on the item now shown. Messages wait in session state for the run that
draws the form (`show_notes`).
"""

from __future__ import annotations

import time

import streamlit as st

from db.engine import session
from db.raters.scoring import OnScreen, OtherItem, ScoringItem, StaleForm, save_draft, submit
from errors import UserError
from rubric.render import FormSpec
from rubric.scoring import MissingFields
from ui.actions import confirm
from ui.auth import LoggedIn
from ui.plain_text import escape_markdown
from ui.score.rubric_form import current_values, form_revision, reseed, set_form_revision
from ui.score.score_keys import item_key

ON_SCREEN = "score_on_screen"
CONFIRMATION = "score_confirmation"
ADVANCE = "score_advance"  # after a submit: open the next unscored item


def draw(item: ScoringItem) -> None:
    """Record `item` as the one whose form this run sends (before the form: a click on it comes
    back on a later run); another item than the last one drawn gets its form from what is
    stored, not from widget values left from an earlier visit."""
    if st.session_state.get(ON_SCREEN, item.on_screen()).blind_code != item.blind_code:
        reseed(item_key(item.blind_code))
    st.session_state[ON_SCREEN] = item.on_screen()
    st.session_state.setdefault("score_last_touch", time.monotonic())


def _on_screen() -> OnScreen:
    return st.session_state[ON_SCREEN]


def _active_seconds() -> float:
    """Seconds since the rater's last interaction (the service caps idle gaps)."""
    now = time.monotonic()
    last = st.session_state.get("score_last_touch", now)
    st.session_state["score_last_touch"] = now
    return now - last


def _refused(e: StaleForm, made_on: str) -> None:
    """The form of the item shown is drawn again from what is stored, with a line saying why:
    an error when the click was on another item's form, else a warning (`show_notes`)."""
    shown = _on_screen()
    reseed(item_key(shown.blind_code))
    if made_on != shown.blind_code:
        reseed(item_key(made_on))
    st.session_state["score_refused" if isinstance(e, OtherItem) else "score_stale"] = str(e)


def save(user: LoggedIn, made_on: str, values: dict) -> None:
    """A change of the form of item `made_on` (blind code): the shown item's draft."""
    shown = _on_screen()
    try:
        with session() as s:
            save_draft(s, rater_id=user.id, assignment_id=shown.assignment_id, item=made_on,
                       values=values, active_seconds=_active_seconds(),
                       base_revision=form_revision(item_key(made_on)), shown=shown.shown)
    except StaleForm as e:
        _refused(e, made_on)
        return
    except UserError as e:  # the study database busy past the write's deadline (db.busy)
        st.session_state["score_unsaved"] = str(e)
        return
    st.session_state[f"score_saved_{shown.assignment_id}"] = time.strftime("%H:%M:%S")


def submit_form(user: LoggedIn, made_on: str, spec: FormSpec, stages: int, position: int) -> None:
    """Submit the form of item `made_on` (at queue `position`, 1-based) as the shown item's
    score; then the page opens the next unscored item (`ADVANCE`)."""
    shown, prefix = _on_screen(), item_key(made_on)
    try:
        with session() as s:
            score = submit(s, rater_id=user.id, assignment_id=shown.assignment_id, item=made_on,
                           values=current_values(prefix, spec, stages),
                           active_seconds=_active_seconds(), actor=user.name,
                           base_revision=form_revision(prefix), shown=shown.shown)
    except StaleForm as e:
        _refused(e, made_on)
    except MissingFields as e:
        st.session_state[f"score_missing_{shown.assignment_id}"] = e.fields
        st.session_state[f"score_missing_note_{shown.assignment_id}"] = str(e)
    except UserError as e:
        st.session_state["score_submit_error"] = str(e)
    else:
        set_form_revision(prefix, score.revision)
        st.session_state.pop(f"score_missing_{shown.assignment_id}", None)
        st.session_state[ADVANCE] = True
        confirm(CONFIRMATION, f"Item {position} ({made_on}) submitted.")


def missing(aid: int) -> dict[str, str] | None:
    """The fields a failed Submit of item `aid` named (`rubric.scoring.MissingFields.fields`)."""
    return st.session_state.get(f"score_missing_{aid}")


def saved_at(aid: int) -> str | None:
    return st.session_state.get(f"score_saved_{aid}")


def show_notes(aid: int, where: str) -> None:
    """The messages of refused writes, once, one line each: "above" the form (a click on
    another item's form), or "below" it, by Submit (missing fields, a stale form, a refused
    submit, a draft the busy database kept out). Their texts may quote typed values: shown as
    literal text."""
    pop = st.session_state.pop
    if where == "above":
        for key in ("score_refused", "score_unsaved"):
            if note := pop(key, None):
                st.error(escape_markdown(note))
        return
    if note := pop(f"score_missing_note_{aid}", None):
        st.error(escape_markdown(note))
    if note := pop("score_stale", None):
        st.warning(escape_markdown(note), icon=":material/sync_problem:")
    if note := pop("score_submit_error", None):
        st.error(escape_markdown(note))
