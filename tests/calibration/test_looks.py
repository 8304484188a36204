"""Held-out looks counted per protocol and per grader, `--part all` kept off the held-out part,
and validation that follows the data (a revised held-out expert score suspends it)."""

import re
from pathlib import Path

import pytest
from sqlalchemy import func
from sqlmodel import Session, select

from calibration import calibrate, protocol
from db.models import (
    Assignment,
    CalibrationItem,
    CalibrationReport,
    GraderConfig,
    GraderScore,
    HeldoutLook,
    Response,
    Task,
)
from db.raters.scoring import submit
from db.rubrics import ensure_rubric
from errors import UserError
from grading.config import GraderSettings, grader_identity, store_config
from tests.calibration.test_report import _study

pytestmark = pytest.mark.slow  # starts processes or takes seconds: make test only


def _variant(s: Session, of: int, **settings) -> int:
    """A config with `settings` that copies config `of`'s grades (as a rerun would give)."""
    config = store_config(s, GraderSettings(model="test-grader-2024-01-01", **settings))
    for g in s.exec(select(GraderScore).where(GraderScore.config_id == of)).all():
        s.add(GraderScore(**{**g.model_dump(exclude={"id"}), "config_id": config.id}))
    s.commit()
    return config.id


def _register(s: Session, **gate) -> protocol.Protocol:
    proto = protocol.register(s, accept_weaker=True, gate=protocol.Gate(**gate),
                              statistics=protocol.Statistics(bootstrap=200))
    s.commit()
    return proto


def _revise_a_heldout_score(s: Session) -> str:
    a = s.exec(select(Assignment).join(CalibrationItem, CalibrationItem.response_id ==
                                       Assignment.response_id)
               .where(CalibrationItem.part == "heldout").order_by(Assignment.id)).first()
    family = s.exec(select(Task.family).join(Response).where(
        Response.response_id == a.response_id)).one()
    crit = {c.key: 0 for c in ensure_rubric(s, "neurology-v1").applicable_criteria(family)}
    submit(s, rater_id=a.rater_id, assignment_id=a.id,
           values={"criteria": crit, "correct_diagnosis": False, "error_tags": [],
                   "comment": "", "confidence": 3})
    return a.response_id


def test_a_seed_only_variant_is_refused_a_second_look(sqlite_url: str) -> None:
    s, first = _study(sqlite_url, grader_noise=0.0)
    proto = _register(s, looks=2)
    assert proto.level == pytest.approx(0.975)  # two looks: each interval at 97.5 %
    assert calibrate.run(s, config_id=first, part="heldout").report.check("pearson").level == (
        pytest.approx(0.975))
    seed_only = _variant(s, first, seed=7, name="same grader, another seed")
    endpoint = _variant(s, first, base_url="http://elsewhere.test/v1")
    assert len({grader_identity(s.get(GraderConfig, c))
                for c in (first, seed_only, endpoint)}) == 1
    for variant in (seed_only, endpoint):
        with pytest.raises(UserError, match=rf"config {variant} is the same grader as config "
                                            rf"{first} .*a grader looks once"):
            calibrate.run(s, config_id=variant, part="heldout")
    other = _variant(s, first, temperature=0.5)  # another grader: the second look
    assert calibrate.run(s, config_id=other, part="heldout").report.validates
    third = _variant(s, first, max_tokens=900)
    with pytest.raises(UserError, match=r"allows 2 held-out looks in all and 2 were taken"):
        calibrate.run(s, config_id=third, part="heldout")
    numbers = s.exec(select(HeldoutLook.config_id, HeldoutLook.number)
                     .order_by(HeldoutLook.number)).all()
    assert numbers == [(first, 1), (other, 2)]
    s.close()


def test_the_refusal_of_a_look_too_many_counts_in_the_singular(sqlite_url: str) -> None:
    """Before: "allows 1 held-out look(s) in all and 1 were taken"."""
    s, first = _study(sqlite_url, grader_noise=0.0)
    _register(s)  # one look
    calibrate.run(s, config_id=first, part="heldout")
    with pytest.raises(UserError, match=r"allows 1 held-out look in all and 1 was taken: no "
                                        "look is left"):
        calibrate.run(s, config_id=_variant(s, first, temperature=0.5), part="heldout")
    s.close()


def test_part_all_reports_no_held_out_statistics_before_the_looks_are_spent(
        sqlite_url: str, capsys) -> None:
    from cli import main

    s, cid = _study(sqlite_url, grader_noise=0.0)
    with pytest.raises(UserError, match="before a protocol is registered"):
        calibrate.run(s, config_id=cid, part="all")
    _register(s)
    assert main(["calibrate", "--config", str(cid), "--part", "all"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert "refused until protocol 1" in err and "(0 of 1 taken)" in err
    assert s.exec(select(func.count()).select_from(CalibrationReport)).one() == 0
    calibrate.run(s, config_id=cid, part="heldout")  # the one look: spent now
    everything = calibrate.run(s, config_id=cid, part="all").report
    assert everything.n_items == s.exec(select(func.count()).select_from(CalibrationItem)).one()
    s.close()


def test_a_protocol_cannot_be_registered_after_a_statistic_touched_the_held_out_part(
        sqlite_url: str) -> None:
    s, cid = _study(sqlite_url, grader_noise=0.0)
    s.add(CalibrationReport(config_id=cid, part="all", thresholds={}, results={}))  # legacy
    s.commit()
    with pytest.raises(UserError, match=r"part all\) was computed on the held-out items: the "
                                        "protocol can no longer change"):
        _register(s)
    s.close()


def test_revising_a_held_out_score_suspends_the_validation_and_freeze_refuses(
        sqlite_url: str, tmp_path: Path) -> None:
    from package.freeze import freeze

    s, cid = _study(sqlite_url, grader_noise=0.0)
    _register(s, looks=2)
    look = calibrate.run(s, config_id=cid, part="heldout")
    assert look.report.passed, look.report.why_failed()
    report_id = look.row.id
    assert s.get(GraderConfig, cid).validated_report_id == report_id
    item = _revise_a_heldout_score(s)
    suspended = f"suspended: data changed after the look (report {report_id})"
    assert s.get(GraderConfig, cid).validated_report_id is None
    assert calibrate.validation_status(s, config_id=cid) == suspended
    assert suspended in calibrate.unvalidated_warning(s, config_id=cid)
    from grading.grader import config_labels

    assert config_labels(s)[cid].endswith("· suspended: data changed after the look")
    assert cid not in config_labels(s, validated_only=True)  # packages offer it no more
    with pytest.raises(UserError, match=re.escape(f"validation is {suspended}: an expert "
                                                   "score revised")):
        freeze(s, config_id=cid, out=tmp_path / "p.zip")
    assert not (tmp_path / "p.zip").exists()
    checked = calibrate.check(s, report_id=report_id)
    assert not checked.matches
    assert any(f"revised the expert score of held-out item {item}" in d
               for d in checked.differences), checked.differences
    from results.results import build

    assert any(suspended in f for f in build(s, config_id=cid, ks=(1,)).flags)
    again = calibrate.run(s, config_id=cid, part="heldout")  # a new look, counted
    assert again.fresh and again.report.validates
    assert [(x.number, x.suspended) for x in again.report.heldout_looks] == [(1, True),
                                                                             (2, False)]
    assert s.get(GraderConfig, cid).validated_report_id == (again.row.id if again.report.passed
                                                            else None)
    s.close()


def test_a_dev_change_does_not_suspend(sqlite_url: str) -> None:
    s, cid = _study(sqlite_url, grader_noise=0.0)
    _register(s)
    calibrate.run(s, config_id=cid, part="heldout")
    a = s.exec(select(Assignment).join(CalibrationItem, CalibrationItem.response_id ==
                                       Assignment.response_id)
               .where(CalibrationItem.part == "dev")).first()
    family = s.exec(select(Task.family).join(Response).where(
        Response.response_id == a.response_id)).one()
    crit = {c.key: 1 for c in ensure_rubric(s, "neurology-v1").applicable_criteria(family)}
    submit(s, rater_id=a.rater_id, assignment_id=a.id,
           values={"criteria": crit, "correct_diagnosis": False, "error_tags": [], "comment": "",
                   "confidence": 3})
    assert calibrate.validation_status(s, config_id=cid).startswith("passed its held-out look")
    s.close()


def test_migration_0011_keeps_the_looks_both_ways(database_url: str) -> None:
    """Down to 0010 (one look per config, its newest) and up again (numbered per protocol)."""
    from alembic import command

    from db.engine import alembic_config

    s, cid = _study(database_url, grader_noise=0.0)
    _register(s)
    report_id = calibrate.run(s, config_id=cid, part="heldout").row.id
    s.close()
    cfg = alembic_config(database_url)
    command.downgrade(cfg, "0010")
    command.upgrade(cfg, "head")
    s = Session(s.bind)
    looks = s.exec(select(HeldoutLook)).all()
    assert [(x.config_id, x.report_id, x.number, x.suspended_at) for x in looks] == [
        (cid, report_id, 1, None)]
    s.close()
