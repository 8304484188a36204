"""Two admins (or the admin page and `nmb assign`) drawing the calibration subset or assigning
raters at once, on SQLite and PostgreSQL with real threads: the second is judged against what
the first committed (one line, nothing written), never an IntegrityError traceback and never
more raters on an item than its design. Both are held at their first insert by a table lock
(tests/db/interleave.py), after reading the study to plan."""

from collections import Counter

import pytest
from sqlmodel import Session, select

from db.engine import engine_for
from db.models import Assignment, CalibrationItem
from db.raters.assignments import assign, draw_calibration
from db.rubrics import ensure_rubric
from errors import UserError
from tests.db.interleave import released_together
from tests.factories import make_study


def _study(url: str, experts: int = 3) -> str:
    with Session(engine_for(url)) as s:
        make_study(s, n_tasks=6, experts=experts)
        rubric = ensure_rubric(s, "neurology-v1").content_hash
        s.commit()
    return rubric


def test_two_draws_of_the_calibration_subset_at_once(database_url: str) -> None:
    _study(database_url)
    outcome = released_together(database_url, "LOCK TABLE calibrationitem IN EXCLUSIVE MODE",
                                lambda s: draw_calibration(s, n=6, seed=1),
                                lambda s: draw_calibration(s, n=6, seed=2))
    refused = [o for o in outcome if isinstance(o, Exception)]
    assert len(refused) == 1 and isinstance(refused[0], UserError), outcome
    assert "already drawn" in str(refused[0])
    with Session(engine_for(database_url)) as s:
        assert len(s.exec(select(CalibrationItem)).all()) == 6
        assert len({c.seed for c in s.exec(select(CalibrationItem))}) == 1  # one draw's


@pytest.mark.slow
def test_two_assignments_of_the_same_items_at_once(database_url: str) -> None:
    """Admin A assigns every item to expert1-3, admin B at the same moment to expert4-5: each
    item ends with the raters of one design (before: with five on PostgreSQL, or a traceback
    when the raters overlapped)."""
    rubric = _study(database_url, experts=5)
    outcome = released_together(database_url, "LOCK TABLE assignment IN EXCLUSIVE MODE",
                                lambda s: assign(s, rubric_hash=rubric, overlap=3,
                                                 raters=["expert1", "expert2", "expert3"]),
                                lambda s: assign(s, rubric_hash=rubric, overlap=2,
                                                 raters=["expert4", "expert5"]))
    refused = [o for o in outcome if isinstance(o, Exception)]
    assert len(refused) == 1 and isinstance(refused[0], UserError), outcome
    assert "already assigned" in str(refused[0])
    with Session(engine_for(database_url)) as s:
        per_item = Counter(s.exec(select(Assignment.response_id)).all())
        designs = set(s.exec(select(Assignment.design_id)).all())
    assert len(designs) == 1 and len(set(per_item.values())) == 1, per_item
