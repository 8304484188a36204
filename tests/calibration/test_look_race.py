"""A held-out look taken while an expert revises a held-out score (threads, SQLite and
PostgreSQL, the local OpenAI-compatible server): the look either sees the revision or is
suspended by it, never stands passed on scores that changed before it was stored."""

import pytest
from sqlmodel import Session, select

from calibration import calibrate
from calibration.calibrate import latest_look
from db.engine import engine_for
from db.models import Assignment, CalibrationItem, ExpertScore
from db.raters.scoring import submit
from tests.db.interleave import one_after_another
from tests.factories import validated_config
from tests.openai_server import OpenAIServer

pytestmark = pytest.mark.slow  # starts processes or takes seconds: make test only

# Held while the look runs: it stops at storing its report, after reading the scores; the
# revision never writes a report.
BLOCK = "LOCK TABLE calibrationreport IN EXCLUSIVE MODE"


def test_a_look_and_a_held_out_revision_are_serialised(database_url: str) -> None:
    with OpenAIServer() as server, Session(engine_for(database_url),
                                           expire_on_commit=False) as s:
        cid = validated_config(s, server.base_url, look=False)
        a, score = s.exec(select(Assignment, ExpertScore)
                          .join(ExpertScore, ExpertScore.assignment_id == Assignment.id)
                          .join(CalibrationItem,
                                CalibrationItem.response_id == Assignment.response_id)
                          .where(CalibrationItem.part == "heldout")).first()
        key = next(iter(score.criteria))
        level = score.criteria[key]
        values = {"criteria": {**score.criteria, key: level - 1 if level else level + 1},
                  "correct_diagnosis": score.correct_diagnosis, "error_tags": score.error_tags,
                  "comment": "One level off.", "confidence": score.confidence}
    done: list[str] = []

    def looking() -> None:
        with Session(engine_for(database_url), expire_on_commit=False) as s:
            outcome = calibrate.run(s, config_id=cid, part="heldout")
        done.append(f"look passed={outcome.report.passed}")

    def revising() -> None:
        with Session(engine_for(database_url)) as s:
            submit(s, rater_id=a.rater_id, assignment_id=a.id, values=values)
        done.append("revised")

    one_after_another(database_url, BLOCK, looking, revising)
    assert len(done) == 2, done
    with Session(engine_for(database_url)) as s:
        look = latest_look(s, config_id=cid)
        if look.passed and look.suspended_at is None:  # it stands: on the scores as they are
            calibrate.frozen_look(s, config_id=cid)  # raises when the scores' sha256 moved
