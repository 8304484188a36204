"""A package frozen while an expert revises a held-out score (SQLite and PostgreSQL, real
threads, the local OpenAI-compatible server): the freeze and the revision are serialised, so a
package is either frozen before the revision (which then suspends the validation) or refused;
never frozen on a validation the revision already suspended. On PostgreSQL the freeze is held
past its checks by a table lock while the revision runs; on SQLite each takes the write lock
whole (either order is right)."""

import json
import zipfile
from pathlib import Path

import pytest
from sqlmodel import Session, select

from db.engine import engine_for
from db.models import Assignment, AuditLog, CalibrationItem, ExpertScore, FrozenPackage
from db.raters.scoring import submit
from errors import UserError
from package.freeze import freeze
from tests.db.interleave import one_after_another
from tests.factories import validated_config
from tests.openai_server import OpenAIServer

pytestmark = pytest.mark.slow  # starts processes or takes seconds: make test only

# Held by a third session while the freeze runs: the freeze reads the protocol right after
# checking its look (and the held-out scores' hash), the revision never does.
BLOCK = "LOCK TABLE calibrationprotocol IN ACCESS EXCLUSIVE MODE"


def _heldout_score(s: Session) -> tuple[Assignment, dict]:
    a, score = s.exec(select(Assignment, ExpertScore)
                      .join(ExpertScore, ExpertScore.assignment_id == Assignment.id)
                      .join(CalibrationItem, CalibrationItem.response_id == Assignment.response_id)
                      .where(CalibrationItem.part == "heldout")).first()
    values = {"criteria": dict(score.criteria), "correct_diagnosis": not score.correct_diagnosis,
              "error_tags": list(score.error_tags), "comment": "Changed my mind.",
              "confidence": score.confidence}
    return a, values


def test_a_freeze_and_a_held_out_revision_are_serialised(database_url: str,
                                                         tmp_path: Path) -> None:
    with OpenAIServer() as server, Session(engine_for(database_url),
                                           expire_on_commit=False) as s:
        cid = validated_config(s, server.base_url)
        s.commit()
        a, values = _heldout_score(s)
    out = tmp_path / "grader.zip"
    done: list[str] = []

    def freezing() -> None:
        with Session(engine_for(database_url), expire_on_commit=False) as s:
            try:
                freeze(s, config_id=cid, out=out, canary_size=3)
                done.append("frozen")
            except UserError as e:
                done.append(f"refused: {e}")

    def revising() -> None:
        with Session(engine_for(database_url)) as s:
            submit(s, rater_id=a.rater_id, assignment_id=a.id, values=values)
        done.append("revised")

    one_after_another(database_url, BLOCK, freezing, revising)
    assert "revised" in done and len(done) == 2, done
    with Session(engine_for(database_url)) as s:
        actions = [r.action for r in s.exec(select(AuditLog).order_by(AuditLog.id))]
        frozen = s.exec(select(FrozenPackage)).all()
    assert "calibration.suspend" in actions  # the revision suspended the validation
    if "frozen" in done:  # then before the suspension, and its manifest says it stood
        assert len(frozen) == 1
        assert actions.index("package.freeze") < actions.index("calibration.suspend"), actions
        with zipfile.ZipFile(out) as zf:
            manifest = json.loads(zf.read("manifest.json"))
        assert not any(x.get("suspended") for x in manifest["heldout_looks"]), manifest
    else:  # refused: the revision came first
        assert not frozen and not out.exists() and "suspended" in done[-1] + done[0], done
