"""Assignments, drafts, submits and revisions, on SQLite and PostgreSQL, with real threads."""

import threading

import pytest
from sqlalchemy import func
from sqlmodel import Session, select

from db.engine import engine_for
from db.models import Assignment, ExpertScore, ScoreRevision, User
from db.raters.assignments import assign, below_overlap, draw_calibration, rater_progress
from db.raters.scoring import OtherItem, StaleScore, load_item, queue, save_draft, submit
from db.rubrics import ensure_rubric
from errors import UserError
from tests.db.interleave import against, run_threads
from tests.factories import MODELS, make_study


def _setup(url: str):
    eng = engine_for(url)
    with Session(eng, expire_on_commit=False) as s:
        make_study(s)
        rubric = ensure_rubric(s, "neurology-v1")
        assign(s, rubric_hash=rubric.content_hash, raters=["expert1", "expert2", "expert3"],
               overlap=2, seed=3)
        s.commit()
        rater = s.exec(select(User).where(User.name == "expert1")).one()
    return eng, rubric, rater


def _valid(rubric, family: str) -> dict:
    return {"criteria": {c.key: rubric.scale.max for c in rubric.applicable_criteria(family)},
            "correct_diagnosis": True, "error_tags": [], "comment": "", "confidence": 4}


def test_draft_submit_revise(database_url: str) -> None:
    eng, rubric, rater = _setup(database_url)
    with Session(eng, expire_on_commit=False) as s:
        entries = queue(s, rater_id=rater.id)
        assert entries and all(e.status == "new" for e in entries)
        first = entries[0].assignment_id
        item = load_item(s, rater_id=rater.id, assignment_id=first)
        values = _valid(rubric, item.family)
        save_draft(s, rater_id=rater.id, assignment_id=first,
                   values={**values, "comment": "half done"}, active_seconds=12.0)
    with Session(eng) as s:  # a new session, as after a closed tab
        item = load_item(s, rater_id=rater.id, assignment_id=first)
        assert item.values["comment"] == "half done" and item.status == "draft"
        submit(s, rater_id=rater.id, assignment_id=first,
               values=values, active_seconds=3600)  # an idle hour counts 5 minutes at most
        changed = {**values, "confidence": 2}
        score = submit(s, rater_id=rater.id, assignment_id=first,
                       values=changed)
        assert score.revision == 2 and score.confidence == 2
        assert score.active_seconds == pytest.approx(12 + 300)
        revs = s.exec(select(ScoreRevision).order_by(ScoreRevision.revision)).all()
        assert [r.revision for r in revs] == [1, 2]
        assert revs[1].changes == {"confidence": {"from": 4, "to": 2}}
        assert queue(s, rater_id=rater.id)[0].status == "submitted"


def test_out_of_scale_and_foreign_items_are_refused(database_url: str) -> None:
    eng, rubric, rater = _setup(database_url)
    with Session(eng) as s:
        mine = {e.assignment_id for e in queue(s, rater_id=rater.id)}
        other = s.exec(select(Assignment.id).where(Assignment.id.not_in(mine))).first()
        with pytest.raises(UserError, match="not in your queue"):
            load_item(s, rater_id=rater.id, assignment_id=other)
        aid = min(mine)
        item = load_item(s, rater_id=rater.id, assignment_id=aid)
        bad = _valid(rubric, item.family)
        key = next(iter(bad["criteria"]))
        bad["criteria"][key] = rubric.scale.max + 1
        with pytest.raises(UserError, match=key):
            submit(s, rater_id=rater.id, assignment_id=aid,
                   values=bad)
        assert s.exec(select(func.count()).select_from(ExpertScore)).one() == 0


def test_item_carries_no_source_identity(database_url: str) -> None:
    eng, rubric, rater = _setup(database_url)
    with Session(eng) as s:
        for e in queue(s, rater_id=rater.id):
            item = load_item(s, rater_id=rater.id, assignment_id=e.assignment_id)
            text = repr(item)
            assert not any(m in text for m in MODELS)
            assert "source" not in vars(item) and "model" not in vars(item)


def test_concurrent_submits_lose_nothing(database_url: str) -> None:
    """Two tabs of one rater submit the same item at once: both revisions are kept."""
    eng, rubric, rater = _setup(database_url)
    with Session(eng) as s:
        aid = queue(s, rater_id=rater.id)[0].assignment_id
        family = load_item(s, rater_id=rater.id, assignment_id=aid).family
    errors: list[BaseException] = []
    barrier = threading.Barrier(4)

    def tab(conf: int) -> None:
        try:
            barrier.wait()
            with Session(eng) as s:
                submit(s, rater_id=rater.id, assignment_id=aid,
                       values={**_valid(rubric, family), "confidence": conf})
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    for t in run_threads(*(lambda c=c: tab(c) for c in (1, 2, 3, 4))):
        t.join()
    assert not errors
    with Session(eng) as s:
        assert s.exec(select(func.count()).select_from(ExpertScore)).one() == 1
        revs = s.exec(select(ScoreRevision.revision)).all()
        assert sorted(revs) == [1, 2, 3, 4]


def test_progress_and_calibration_draw(database_url: str) -> None:
    eng, rubric, rater = _setup(database_url)
    with Session(eng) as s:
        progress = {p.rater: p for p in rater_progress(s)}
        assert sum(p.assigned for p in progress.values()) == 12 * 2
        assert len(below_overlap(s)) == 12
        counts = draw_calibration(s, n=6, seed=1)
        s.commit()
        assert counts == {"dev": 3, "heldout": 3}
        with pytest.raises(UserError, match="already drawn"):
            draw_calibration(s, n=6, seed=2)


def test_a_disabled_rater_can_no_longer_write(database_url: str) -> None:
    from db.users import disable_user

    eng, rubric, rater = _setup(database_url)
    with Session(eng, expire_on_commit=False) as s:
        first = queue(s, rater_id=rater.id)[0].assignment_id
        values = _valid(rubric, load_item(s, rater_id=rater.id, assignment_id=first).family)
        disable_user(s, name="expert1")
        s.commit()
        for write in (save_draft, submit):
            with pytest.raises(UserError, match="disabled"):
                write(s, rater_id=rater.id, assignment_id=first, values=values)
        s.rollback()
        assert s.exec(select(func.count()).select_from(ExpertScore)).one() == 0


@pytest.mark.parametrize("write", [save_draft, submit])
@pytest.mark.parametrize(("change", "refusal"), [("disable", "disabled"),
                                                 ("demote", "no longer an expert's")])
def test_a_write_racing_the_accounts_disable_is_refused(database_url: str, write, change,
                                                        refusal) -> None:
    """An admin has disabled the rater (or made them a student) and not committed yet; the
    rater's draft or submit waits for it and is refused, nothing stored (before, on
    PostgreSQL: stored, audited after the disable; a demotion was never checked here)."""
    from db.users import change_role, disable_user

    eng, rubric, rater = _setup(database_url)
    with Session(eng) as s:
        aid = queue(s, rater_id=rater.id)[0].assignment_id
        values = _valid(rubric, load_item(s, rater_id=rater.id, assignment_id=aid).family)
    admin = Session(eng)
    if change == "disable":
        disable_user(admin, name="expert1")
    else:
        change_role(admin, name="expert1", role="student")
    admin.flush()
    outcome = against(database_url, admin, lambda s: write(s, rater_id=rater.id,
                                                           assignment_id=aid, values=values))
    assert isinstance(outcome, UserError) and refusal in str(outcome), outcome
    with Session(eng) as s:
        assert s.exec(select(func.count()).select_from(ExpertScore)).one() == 0


def test_tabs_submitting_one_form_at_once_record_it_once(database_url: str) -> None:
    """Four tabs opened on the new item submit at once, each naming the revision its form
    was opened on (0): one revision is recorded, the others are refused (StaleScore), and a
    draft from a tab still on revision 0 is refused too, leaving the submit as it is."""
    eng, rubric, rater = _setup(database_url)
    with Session(eng) as s:
        aid = queue(s, rater_id=rater.id)[0].assignment_id
        family = load_item(s, rater_id=rater.id, assignment_id=aid).family
    outcome: list[object] = []
    barrier = threading.Barrier(4)

    def tab(conf: int) -> None:
        barrier.wait()
        with Session(eng) as s:
            try:
                outcome.append(submit(s, rater_id=rater.id, assignment_id=aid, base_revision=0,
                                      values={**_valid(rubric, family), "confidence": conf}
                                      ).revision)
            except UserError as e:
                outcome.append(e)

    for t in run_threads(*(lambda c=c: tab(c) for c in (1, 2, 3, 4))):
        t.join()
    assert [o for o in outcome if not isinstance(o, StaleScore)] == [1], outcome
    with Session(eng) as s:
        with pytest.raises(StaleScore, match="now revision 1"):
            save_draft(s, rater_id=rater.id, assignment_id=aid, values={"comment": "stale"},
                       base_revision=0)
    with Session(eng) as s:
        assert s.exec(select(ScoreRevision.revision)).all() == [1]
        score = s.exec(select(ExpertScore)).one()
        assert score.draft is None and score.status == "submitted"
        save_draft(s, rater_id=rater.id, assignment_id=aid, values={"comment": "on 1"},
                   base_revision=1)  # a form on the latest revision saves
        assert s.exec(select(ExpertScore)).one().draft["comment"] == "on 1"


def test_a_write_naming_another_item_is_refused(database_url: str) -> None:
    """A draft or submit made on item B's form but sent for item A (the page showed A by the
    time it ran) is refused, nothing stored on either; named right, it is stored."""
    eng, rubric, rater = _setup(database_url)
    with Session(eng) as s:
        a, b = [load_item(s, rater_id=rater.id, assignment_id=e.assignment_id)
                for e in queue(s, rater_id=rater.id)[:2]]
        values = _valid(rubric, a.family)
        for write in (save_draft, submit):
            with pytest.raises(OtherItem, match=f"made on item {b.blind_code}, but item "
                                                f"{a.blind_code} is shown: it is not saved"):
                write(s, rater_id=rater.id, assignment_id=a.assignment_id, values=values,
                      item=b.blind_code)
        assert s.exec(select(func.count()).select_from(ExpertScore)).one() == 0
        save_draft(s, rater_id=rater.id, assignment_id=a.assignment_id, values=values,
                   item=a.blind_code)
        assert s.exec(select(ExpertScore.assignment_id)).all() == [a.assignment_id]
