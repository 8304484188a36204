"""Registering the protocol while another admin registers it or takes a held-out look (threads,
SQLite and PostgreSQL): the registrations take turns with each other and with looks, so the
second is judged against what the first committed; never an `IntegrityError` traceback, and
never a protocol registered once a held-out look exists (its looks would be counted afresh)."""

import pytest
from sqlmodel import Session, select

from calibration import calibrate, protocol
from calibration.calibrate import latest_look
from db.engine import engine_for
from db.models import CalibrationProtocol
from db.raters.assignments import draw_calibration
from errors import UserError
from tests.db.interleave import one_after_another, released_together
from tests.factories import make_study, validated_config
from tests.openai_server import OpenAIServer


def test_two_admins_registering_one_protocol_at_once(database_url: str) -> None:
    """Both held at their insert (PostgreSQL: before, the second was an IntegrityError
    traceback on the protocol's sha256); the second finds the first's and returns it."""
    with Session(engine_for(database_url)) as s:
        make_study(s, n_tasks=6)
        draw_calibration(s, n=12, seed=0)
        s.commit()
    outcome = released_together(database_url, "LOCK TABLE calibrationprotocol IN EXCLUSIVE MODE",
                                lambda s: protocol.register(s, accept_weaker=True).content_hash,
                                lambda s: protocol.register(s, accept_weaker=True).content_hash)
    assert all(isinstance(o, str) for o in outcome) and len(set(outcome)) == 1, outcome
    with Session(engine_for(database_url)) as s:
        assert len(s.exec(select(CalibrationProtocol)).all()) == 1


# Held while the look runs: it stops at storing its report, after reading the protocol and the
# scores; a registration never writes a report.
BLOCK = "LOCK TABLE calibrationreport IN EXCLUSIVE MODE"


@pytest.mark.slow
def test_a_protocol_registered_while_a_look_is_taken_is_refused_or_judges_it(
        database_url: str) -> None:
    """A held-out look under protocol 1 and a registration of a laxer protocol 2 at once: the
    registration waits for the look and is refused (a held-out report exists), or comes first
    and the look is judged by it. Before (PostgreSQL): protocol 2 was registered after the look
    under protocol 1, with none of its looks taken, so the spent look budget started again."""
    with OpenAIServer() as server, Session(engine_for(database_url),
                                           expire_on_commit=False) as s:
        cid = validated_config(s, server.base_url, look=False)
    done: list[str] = []

    def looking() -> None:
        with Session(engine_for(database_url)) as s:
            calibrate.run(s, config_id=cid, part="heldout")
        done.append("looked")

    def registering() -> None:
        with Session(engine_for(database_url)) as s:
            try:
                protocol.register(s, gate=protocol.Gate(required=("pearson",), pearson_min=0.5),
                                  statistics=protocol.Statistics(bootstrap=200),
                                  accept_weaker=True)
                s.commit()
                done.append("registered")
            except UserError as e:
                done.append(f"refused: {e}")

    one_after_another(database_url, BLOCK, looking, registering)
    assert "looked" in done and len(done) == 2, done
    with Session(engine_for(database_url)) as s:
        look = latest_look(s, config_id=cid)
        in_force = protocol.current(s)
        assert look.protocol_id == in_force.id, (done, look.protocol_id, in_force.id)
        assert calibrate.looks_taken(s, protocol_id=in_force.id) == 1
    if "registered" not in done:  # refused once the look committed (the threads may append
        assert any("a held-out report exists" in d for d in done), done  # in either order)
