"""/score's compact header on the demo study (AppTest): a blind-code search that ignores
case, queue filters, level labels with their anchors on demand, and the shortcuts listed; the
short anchors under the levels and the full texts behind one switch (a small study)."""

import re
from pathlib import Path

from sqlmodel import select

from db.engine import session
from db.models import Case, ExpertScore, User
from db.raters.assignments import assign
from db.raters.scoring import load_item, queue, submit
from db.rubrics import ensure_rubric, rubric_by_hash
from rubric.render import form_spec
from tests.apptest import page
from tests.factories import make_study
from ui.auth import LoggedIn
from ui.score.rubric_form import FULL_TEXT_KEY, FULL_TEXT_LABEL
from ui.score.score_keys import SHORTCUTS, item_key


def _expert() -> LoggedIn:
    with session() as s:
        u = s.exec(select(User).where(User.name == "demo-expert1")).one()
    return LoggedIn(id=u.id, name=u.name, role=u.role, demo=u.demo)


def test_search_ignores_case_and_the_prefix(demo_study: Path) -> None:
    expert = _expert()
    with session() as s:
        entries = queue(s, rater_id=expert.id)
    at = page("pages/score.py", expert).run()
    target = entries[7]
    at.text_input(key="score_search").input(target.blind_code.lower()).run()
    assert at.session_state["score_current"] == target.assignment_id
    at.text_input(key="score_search").input(target.blind_code[2:]).run()  # no "R-"
    assert at.session_state["score_current"] == target.assignment_id
    at.text_input(key="score_search").input("R-not-a-code").run()
    assert any("No item at position" in w.value for w in at.warning)
    assert at.session_state["score_current"] == target.assignment_id


def test_filters_narrow_the_item_list_and_next(demo_study: Path) -> None:
    expert = _expert()
    with session() as s:
        entries = queue(s, rater_id=expert.id)
    at = page("pages/score.py", expert).run()
    assert len(at.selectbox(key="score_item_list").options) == len(entries)
    lesion = [e for e in entries if e.family == "lesion"]
    assert 0 < len(lesion) < len(entries)
    at.selectbox(key="score_f_family").set_value("lesion").run()
    options = at.selectbox(key="score_item_list").options
    current = at.session_state["score_current"]
    listed = {f"{e.position + 1}. {e.blind_code}" for e in lesion}
    shown = [o for o in options if o.split(" · ")[0] in listed]
    assert len(shown) == len(lesion) and len(options) - len(shown) <= 1  # and the current one
    assert f"{len(lesion)} of {len(entries)} items listed" in " ".join(c.value for c in at.caption)
    next_button = next(b for b in at.button if b.help == "Next item")
    for _ in range(3):  # Next stays within the listed items
        next_button.click().run()
        current = at.session_state["score_current"]
        assert current in {e.assignment_id for e in lesion}
        next_button = next(b for b in at.button if b.help == "Next item")
    at.selectbox(key="score_f_family").set_value("All").run()
    at.toggle(key="score_f_unscored").set_value(True).run()
    unscored = [e for e in entries if e.status != "submitted"]
    assert len([o for o in at.selectbox(key="score_item_list").options
                if "· submitted" not in o]) == len(unscored)


def test_levels_are_labels_with_their_anchors_on_demand(demo_study: Path) -> None:
    expert = _expert()
    at = page("pages/score.py", expert).run()
    aid = at.session_state["score_current"]
    with session() as s:
        item = load_item(s, rater_id=expert.id, assignment_id=aid)
        spec = form_spec(rubric_by_hash(s, item.rubric_hash), item.family)
    for c in spec.criteria:
        radio = at.radio(key=f"item-{item.blind_code}-{c.key}")
        assert [str(o) for o in radio.options][:len(c.anchors)] == [str(lv) for lv, _ in c.anchors]
        captions = [_as_shown(x) for x in radio.proto.captions]  # the demo's v1.1: short ones
        assert radio.proto.horizontal and c.short_anchors
        assert captions[:len(c.anchors)] == list(c.short_anchors)
    at.toggle(key=FULL_TEXT_KEY).set_value(True).run()
    shown = " ".join(_as_shown(c.value) for c in at.caption)
    for c in spec.criteria:  # every anchor's text, under its criterion
        assert all(text in shown for _, text in c.anchors)
    keys = " ".join(m.value for m in at.markdown)
    for shortcut in SHORTCUTS.values():
        assert shortcut in keys  # listed on the page
    submit = next(b for b in at.button if b.label == "Submit")
    assert submit.proto.shortcut  # Streamlit's own shortcut on the button


def _as_shown(markdown: str) -> str:
    """Escaped markdown as the page shows it (a backslash before punctuation dropped)."""
    return re.sub(r"\\(.)", r"\1", markdown)


def test_short_anchors_under_the_levels_and_full_texts_behind_one_switch(sqlite_url: str) -> None:
    """neurology-v1.1: each level's short anchor under its number; no tooltip on the rubric
    (it would open over the images); the switch, off at first and kept from item to item,
    shows every criterion's description and anchors and the five error classes' definitions
    and examples in full, in the rubric's column."""
    with session() as s:
        make_study(s, n_tasks=2, experts=1)  # a differential and a lesion task
        rubric = ensure_rubric(s, "neurology-v1.1")
        assign(s, rubric_hash=rubric.content_hash, raters=["expert1"], overlap=1)
        s.commit()
        u = s.exec(select(User).where(User.name == "expert1")).one()
        expert = LoggedIn(id=u.id, name=u.name, role=u.role, demo=u.demo)
        items = [load_item(s, rater_id=u.id, assignment_id=e.assignment_id)
                 for e in queue(s, rater_id=u.id)]
    assert {i.family for i in items} == {"differential", "lesion"}
    at = page("pages/score.py", expert)
    full = [e.definition for e in rubric.error_classes] + [e.example for e in rubric.error_classes]
    for k, item in enumerate(items):
        at.session_state["score_current"] = item.assignment_id
        at.run()
        assert not at.exception, at.exception
        switch = at.toggle(key=FULL_TEXT_KEY)
        assert switch.label == FULL_TEXT_LABEL and switch.value is (k > 0)  # off, then kept
        shown = " ".join(_as_shown(c.value) for c in at.caption)
        assert (k > 0) == all(text in shown for text in full)
        for c in rubric.applicable_criteria(item.family):
            radio = at.radio(key=f"{item_key(item.blind_code)}-{c.key}")
            captions = [_as_shown(x) for x in radio.proto.captions]
            assert captions == c.short_anchors + ([""] if c.na_allowed else []), c.key
            assert not radio.help
            assert (k > 0) == all(text in shown for text in [c.description, *c.anchors])
        rubric_widgets = [w for w in [*at.radio, *at.get("button_group"), *at.text_area]
                          if str(w.key).startswith(item_key(item.blind_code))]
        assert len(rubric_widgets) == len(rubric.applicable_criteria(item.family)) + 4
        assert not [w.help for w in rubric_widgets if w.help]  # no tooltip: none over the images
        assert not next(m for m in at.markdown if m.value == "##### Rubric").help
        if k == 0:
            switch.set_value(True).run()
            shown = " ".join(_as_shown(c.value) for c in at.caption)
            assert all(text in shown for text in full)  # the five definitions, in full


def test_a_multi_turn_item_asks_a_judgment_per_stage_and_saves_it(demo_study: Path) -> None:
    expert = _expert()
    with session() as s:
        entries = queue(s, rater_id=expert.id)
        multi = next(e for e in entries if e.level == 3)
        single = next(e for e in entries if e.level < 3)
        item = load_item(s, rater_id=expert.id, assignment_id=multi.assignment_id)
        n = len(item.stages)
        before = item.values.get("stage_correct") or [None] * n  # the demo's expert may have judged
    at = page("pages/score.py", expert)
    at.session_state["score_current"] = single.assignment_id
    at.run()
    assert not [r for r in at.radio if r.label.startswith("Stage ")]  # single-turn: none
    at.session_state["score_current"] = multi.assignment_id
    at.run()
    aid = multi.assignment_id
    stages = [r for r in at.radio if r.label.startswith("Stage ")]
    assert [r.label for r in stages] == [f"Stage {k + 1} answer correct?" for k in range(n)]
    at.radio(key=f"item-{multi.blind_code}-stage-0").set_value("No").run()
    with session() as s:
        saved = load_item(s, rater_id=expert.id, assignment_id=aid).values["stage_correct"]
    assert saved == [False] + list(before[1:])  # the one judgment changed, the others kept


def _two_tabs_on_a_submitted_item(expert: LoggedIn):
    """Tabs A and B of one rater on one item whose revision 1 is submitted (confidence 4)."""
    with session() as s:
        entry = next(e for e in queue(s, rater_id=expert.id) if e.level < 3)
        item = load_item(s, rater_id=expert.id, assignment_id=entry.assignment_id)
        rubric = rubric_by_hash(s, item.rubric_hash)
        values = {"criteria": {c.key: rubric.scale.max
                               for c in rubric.applicable_criteria(item.family)},
                  "correct_diagnosis": True, "error_tags": [], "comment": "", "confidence": 4}
        first = submit(s, rater_id=expert.id, assignment_id=entry.assignment_id, values=values)
    tabs = []
    for _ in range(2):
        tab = page("pages/score.py", expert)
        tab.session_state["score_current"] = entry.assignment_id
        tabs.append(tab.run())
    return entry.assignment_id, first.revision, tabs, item_key(item.blind_code)


def _stored(expert: LoggedIn, aid: int) -> tuple[int, int, dict | None]:
    with session() as s:
        score = s.exec(select(ExpertScore).where(ExpertScore.assignment_id == aid)).one()
        return score.revision, score.confidence, score.draft


def test_a_tab_opened_before_a_submit_cannot_undo_it(demo_study: Path) -> None:
    """Tab A revises the confidence to 2 and submits; tab B, still showing 4, then submits
    (before: a revision with B's stale 4, silently undoing A's) or changes a field (before: a
    stale draft on the submitted score): refused with a line, nothing stored, and B's form
    is drawn again from what A submitted."""
    expert = _expert()
    aid, revision, (a, b), key = _two_tabs_on_a_submitted_item(expert)
    a.radio(key=f"{key}-confidence").set_value(2).run()
    next(x for x in a.button if x.label == "Submit").click().run()
    assert not a.exception and _stored(expert, aid)[:2] == (revision + 1, 2)
    next(x for x in b.button if x.label == "Submit").click().run()
    assert not b.exception
    assert _stored(expert, aid) == (revision + 1, 2, None)
    assert any("submitted in another tab or session" in w.value for w in b.warning)
    assert b.radio(key=f"{key}-confidence").value == 2  # the latest revision, drawn again
    b.text_area[0].input("now on the latest").run()  # B goes on from there: saved
    assert _stored(expert, aid)[2]["comment"] == "now on the latest"
    a.session_state["score_current"] = aid  # A moved on after its submit: back to the item
    a.run().text_area[0].input("A's form is on revision 2 too").run()
    assert _stored(expert, aid)[2]["comment"] == "A's form is on revision 2 too"


def test_a_stale_tabs_change_is_not_saved_over_a_submit(demo_study: Path) -> None:
    expert = _expert()
    aid, revision, (a, b), _ = _two_tabs_on_a_submitted_item(expert)
    next(x for x in a.button if x.label == "Submit").click().run()  # revision 2, unchanged
    b.text_area[0].input("typed in the stale tab").run()
    assert not b.exception
    assert _stored(expert, aid) == (revision + 1, 4, None)
    assert any("submitted in another tab or session" in w.value for w in b.warning)
    assert b.text_area[0].value == ""  # drawn again from revision 2


def test_a_submit_from_a_page_that_showed_another_answer_is_refused(demo_study: Path) -> None:
    """The page showed the case's reference answer; the answer is then changed (as an import
    may, while no score has used it). The click's run loads the new answer, but what counts is
    what the rater saw: refused with a line, nothing stored, the new answer drawn; the next
    submit, from that page, is stored (before: stored at once, against an answer never seen)."""
    expert = _expert()
    aid, revision, (tab, _), _ = _two_tabs_on_a_submitted_item(expert)
    with session() as s:
        item = load_item(s, rater_id=expert.id, assignment_id=aid)
        case = s.get(Case, item.case_id)
        case.ground_truth = {**case.ground_truth, "final_diagnosis": "Neurosarcoidosis (new)"}
        s.add(case)
        s.commit()
    next(x for x in tab.button if x.label == "Submit").click().run()
    assert not tab.exception and _stored(expert, aid)[0] == revision
    assert any("changed since this form showed it" in w.value for w in tab.warning)
    assert "Neurosarcoidosis (new)" in [t.value for t in tab.text]
    next(x for x in tab.button if x.label == "Submit").click().run()
    assert _stored(expert, aid)[0] == revision + 1


def test_a_click_on_a_form_no_longer_shown_is_refused(demo_study: Path) -> None:
    """The page drew item B (as a navigation's run does) while a level is clicked on item A's
    form, still in the browser: refused with one error line, nothing stored on either item,
    and B's form drawn (before, the click's run wrote wherever the page then was)."""
    expert = _expert()
    with session() as s:
        a, b = [e for e in queue(s, rater_id=expert.id) if e.status == "new"][:2]
        shown_b = load_item(s, rater_id=expert.id, assignment_id=b.assignment_id).on_screen()
    at = page("pages/score.py", expert)
    at.session_state["score_current"] = a.assignment_id
    at.run()
    level = at.radio(key=f"item-{a.blind_code}-coherence")
    at.session_state["score_current"] = b.assignment_id  # what the server drew meanwhile
    at.session_state["score_on_screen"] = shown_b
    level.set_value(2).run()
    assert [e.value.replace("\\", "") for e in at.error] == [  # (escaped as Markdown)
        f"this change was made on item {a.blind_code}, but item {b.blind_code} is shown: it is "
        f"not saved; the form shows item {b.blind_code}"]
    with session() as s:
        assert not s.exec(select(ExpertScore).where(
            ExpertScore.assignment_id.in_([a.assignment_id, b.assignment_id]))).all()
    assert at.radio(key=f"item-{b.blind_code}-coherence").value is None
