"""Two admins revoking one validation at once (threads, SQLite and PostgreSQL, the local
OpenAI-compatible server): revocations take turns, so the second finds the first's and is
refused in one line; the reason and the audit entry are the first's alone."""

import pytest
from sqlmodel import Session, select

from calibration import calibrate
from calibration.calibrate import latest_look
from db.engine import engine_for
from db.models import AuditLog
from errors import UserError
from tests.db.interleave import released_together
from tests.factories import validated_config
from tests.openai_server import OpenAIServer

pytestmark = pytest.mark.slow  # starts processes or takes seconds: make test only


def test_two_admins_revoking_one_validation_at_once(database_url: str) -> None:
    """Both held at their write by a table lock (before, on PostgreSQL: both revoked, the
    second's reason over the first's, two `calibration.revoke` entries)."""
    with OpenAIServer() as server, Session(engine_for(database_url)) as s:
        cid = validated_config(s, server.base_url)

    def revoking(reason: str):
        return lambda s: calibrate.revoke(s, config_id=cid, reason=reason, actor=reason[:5])

    outcome = released_together(database_url, "LOCK TABLE heldoutlook IN EXCLUSIVE MODE",
                                revoking("alice: the rubric was misread"),
                                revoking("bobby: a grader prompt leaked"))
    refused = [o for o in outcome if isinstance(o, Exception)]
    assert len(refused) == 1 and isinstance(refused[0], UserError), outcome
    assert "already revoked" in str(refused[0])
    with Session(engine_for(database_url)) as s:
        look = latest_look(s, config_id=cid)
        audited = s.exec(select(AuditLog).where(AuditLog.action == "calibration.revoke")).all()
    assert len(audited) == 1 and audited[0].actor == look.revoked_by
    assert look.revoke_reason.startswith(look.revoked_by)
