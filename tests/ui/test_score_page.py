"""/score's compact header on the demo study (AppTest): a blind-code search that ignores
case, queue filters, level labels with their anchors on demand, and the shortcuts listed."""

from pathlib import Path

from sqlmodel import select

from db.engine import session
from db.models import User
from db.raters.scoring import load_item, queue
from db.rubrics import rubric_by_hash
from rubric.render import form_spec
from tests.apptest import page
from ui.auth import LoggedIn
from ui.score.score_keys import SHORTCUTS


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
    assert len(at.selectbox(key="score_current").options) == len(entries)
    lesion = [e for e in entries if e.family == "lesion"]
    assert 0 < len(lesion) < len(entries)
    at.selectbox(key="score_f_family").set_value("lesion").run()
    options = at.selectbox(key="score_current").options
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
    assert len([o for o in at.selectbox(key="score_current").options
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
        assert radio.proto.horizontal and not list(radio.proto.captions)
        for _, text in c.anchors:  # every anchor's text is in the tooltip
            assert text in radio.help
    keys = " ".join(m.value for m in at.markdown)
    for shortcut in SHORTCUTS.values():
        assert shortcut in keys  # listed on the page
    submit = next(b for b in at.button if b.label == "Submit")
    assert submit.proto.shortcut  # Streamlit's own shortcut on the button


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
