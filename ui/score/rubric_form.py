"""The rater's rubric form: anchored criteria, the diagnosis judgment, error tags, comment.

Compact: each criterion is one row of its level labels (0 1 2 3 4, N/A where allowed), with the
rubric's short anchor under each level where it has them (`short_anchors`). The full texts are
on demand, in the rubric's column and never in a tooltip (a tooltip opens over the images and
is cut off): one switch at the top, kept for every item of the session, shows the rubric's
instructions, each criterion's description and every anchor, the judgment's definition, the
five error classes' definitions with their examples and the confidence labels, as small text.
Rubric text comes from a file and is shown as text (`escape_markdown`), never as markdown.
Every widget change calls `on_change(values)` so the page can save a draft at once. Widget
keys carry only the assignment number, never anything about the response's source.
"""

from collections.abc import Callable
from typing import Any

import streamlit as st

from db.text_limits import COMMENT
from rubric.render import FormCriterion, FormSpec
from ui.plain_text import escape_markdown

NA = "N/A"
FULL_TEXT_KEY = "rubric_full_text"  # one switch for every item (not under an item's prefix)
FULL_TEXT_LABEL = "Show full anchors and definitions"
STAGE_HELP = ("Optional. Was the answer given at this stage correct, given what was known at "
              "that stage? The last stage's answer is the final answer, judged below.")


def _key(prefix: str, name: str) -> str:
    return f"{prefix}-{name}"


def _seed_state(prefix: str, spec: FormSpec, values: dict[str, Any], stages: int = 0,
                revision: int = 0) -> None:
    """Put saved values into widget state once, so a reopened item shows its draft, and keep
    the revision they belong to (`form_revision`); after `reseed`, again from scratch."""
    if st.session_state.pop(_key(prefix, "_reseed"), False):
        for k in [k for k in st.session_state if str(k).startswith(_key(prefix, ""))]:
            del st.session_state[k]
    if st.session_state.get(_key(prefix, "_seeded")):
        return
    criteria = values.get("criteria") or {}
    for c in spec.criteria:
        if c.key in criteria:
            level = criteria[c.key]
            st.session_state[_key(prefix, c.key)] = NA if level is None else level
    for k, judged in enumerate((values.get("stage_correct") or [])[:stages]):
        if judged is not None:
            st.session_state[_key(prefix, f"stage-{k}")] = "Yes" if judged else "No"
    if values.get("correct_diagnosis") is not None:
        st.session_state[_key(prefix, "correct")] = "Yes" if values["correct_diagnosis"] else "No"
    st.session_state[_key(prefix, "tags")] = list(values.get("error_tags") or [])
    st.session_state[_key(prefix, "comment")] = values.get("comment") or ""
    if values.get("confidence") is not None:
        st.session_state[_key(prefix, "confidence")] = values["confidence"]
    st.session_state[_key(prefix, "_revision")] = revision
    st.session_state[_key(prefix, "_seeded")] = True


def form_revision(prefix: str) -> int:
    """The revision the form's values started from (0: a new item), what a save names as its
    base (`db.raters.scoring.save_draft`), so another tab's submit since is not undone."""
    return st.session_state.get(_key(prefix, "_revision"), 0)


def set_form_revision(prefix: str, revision: int) -> None:
    """The form now holds `revision` (after this tab submitted it)."""
    st.session_state[_key(prefix, "_revision")] = revision


def reseed(prefix: str) -> None:
    """Draw the form afresh from the stored values on the next run (its widgets cannot be
    changed once drawn in this one)."""
    st.session_state[_key(prefix, "_reseed")] = True


def current_values(prefix: str, spec: FormSpec, stages: int = 0) -> dict[str, Any]:
    state = st.session_state
    criteria = {}
    for c in spec.criteria:
        level = state.get(_key(prefix, c.key))
        if level is not None:
            criteria[c.key] = None if level == NA else level
    correct = state.get(_key(prefix, "correct"))
    return {
        "criteria": criteria,
        "correct_diagnosis": None if correct is None else correct == "Yes",
        "error_tags": list(state.get(_key(prefix, "tags")) or []),
        "comment": state.get(_key(prefix, "comment")) or "",
        "confidence": state.get(_key(prefix, "confidence")),
        "stage_correct": None if not stages else [
            None if (v := state.get(_key(prefix, f"stage-{k}"))) is None else v == "Yes"
            for k in range(stages)],
    }


def anchor_text(c: FormCriterion) -> str:
    """A criterion's description and its anchors, level by level, as escaped markdown lines."""
    rows = [f"**{level}** {escape_markdown(text)}" for level, text in c.anchors]
    if c.na_allowed:
        rows.append(f"**{NA}** {escape_markdown(c.na_rule or 'does not apply')}")
    return "  \n".join([escape_markdown(c.description), *rows])


def tag_text(spec: FormSpec) -> str:
    """Every error class's name, definition and example, as escaped markdown paragraphs."""
    return "\n\n".join(f"**{escape_markdown(t.name)}**: {escape_markdown(t.definition)} "
                        f"*Example:* {escape_markdown(t.example)}" for t in spec.tags)


def level_captions(c: FormCriterion) -> list[str] | None:
    """The short anchors under the level labels (none under N/A), or None without them."""
    if not c.short_anchors:
        return None
    return [escape_markdown(t) for t in c.short_anchors] + ([""] if c.na_allowed else [])


def _full_text_switch() -> bool:
    """The switch of the full texts, off until the rater turns it on, then on for every item
    (its state is set again before it is drawn, so leaving the page does not reset it)."""
    st.session_state[FULL_TEXT_KEY] = bool(st.session_state.get(FULL_TEXT_KEY, False))
    return st.toggle(FULL_TEXT_LABEL, key=FULL_TEXT_KEY)


def _still_missing(missing: dict[str, str], field: str, answered: bool) -> None:
    """The message of a field a failed Submit named, under it, until it is answered."""
    if field in missing and not answered:
        st.error(escape_markdown(missing[field]), icon=":material/arrow_upward:")


def rubric_form(
    prefix: str, spec: FormSpec, values: dict[str, Any], on_change: Callable[[dict], None],
    missing: dict[str, str] | None = None, stages: int = 0, revision: int = 0,
) -> dict[str, Any]:
    """Draw the form under its "Rubric" heading and the switch of the full texts, seeded
    with `values`, and return what it holds now; `missing`
    (`rubric.scoring.MissingFields.fields`) puts each message under its field. `stages`
    (multi-turn items: the number of stages but the last) adds a compact Yes/No judgment of
    each of those stages' answers, optional, before the final-answer judgment. `revision`:
    the stored revision `values` belong to (`form_revision`)."""
    _seed_state(prefix, spec, values, stages, revision)
    missing = missing or {}
    state = st.session_state

    def changed() -> None:
        on_change(current_values(prefix, spec, stages))

    st.markdown("##### Rubric")
    full = _full_text_switch()
    if full:
        st.caption(escape_markdown(spec.instructions))
    for c in spec.criteria:
        options: list[Any] = [level for level, _ in c.anchors] + ([NA] if c.na_allowed else [])
        st.radio(escape_markdown(c.name), options, index=None, key=_key(prefix, c.key), horizontal=True,
                 captions=level_captions(c), on_change=changed)
        if full:
            st.caption(anchor_text(c))
        _still_missing(missing, f"criteria.{c.key}", state.get(_key(prefix, c.key)) is not None)
    if stages:
        cells = st.columns(stages) if stages <= 4 else [st.container() for _ in range(stages)]
        for k, cell in enumerate(cells):
            cell.radio(f"Stage {k + 1} answer correct?", ["Yes", "No"], index=None,
                       horizontal=True, key=_key(prefix, f"stage-{k}"), on_change=changed)
        if full:
            st.caption(escape_markdown(STAGE_HELP))
    st.radio(escape_markdown(spec.judgment_question), ["Yes", "No"], index=None, horizontal=True,
             key=_key(prefix, "correct"), on_change=changed)
    if full:
        st.caption(escape_markdown(spec.judgment_help))
    _still_missing(missing, "correct_diagnosis", state.get(_key(prefix, "correct")) is not None)
    names = {t.key: escape_markdown(t.name) for t in spec.tags}
    # Pills, each class a button of its own (Tab, then Space or Enter): a multiselect would offer
    # "Select all" first, and one Enter would tag every class.
    st.pills(
        "Error classes", [t.key for t in spec.tags], selection_mode="multi",
        key=_key(prefix, "tags"), format_func=names.get, on_change=changed,
    )
    if full:
        st.caption(tag_text(spec))
    required = spec.comment_required_when == "always" or (
        spec.comment_required_when == "any_error_tag" and st.session_state.get(_key(prefix, "tags")))
    st.text_area(escape_markdown(spec.comment_prompt) + (" (required)" if required else ""),
                 key=_key(prefix, "comment"), on_change=changed, max_chars=COMMENT)
    _still_missing(missing, "comment", bool((state.get(_key(prefix, "comment")) or "").strip()))
    st.radio(escape_markdown(spec.confidence_question), [v for v, _ in spec.confidence], index=None,
             horizontal=True, key=_key(prefix, "confidence"), on_change=changed)
    if full:
        st.caption("  \n".join(f"**{v}** {escape_markdown(label)}" for v, label in spec.confidence))
    _still_missing(missing, "confidence", state.get(_key(prefix, "confidence")) is not None)
    return current_values(prefix, spec, stages)
