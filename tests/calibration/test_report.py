"""Calibration report and gate on a real database: a faithful grader passes, a noisy one fails."""

import json
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import func
from sqlmodel import Session, select

from calibration import calibrate, protocol, report
from db.engine import engine_for
from db.models import (
    Assignment,
    CalibrationItem,
    CalibrationReport,
    GraderConfig,
    GraderRun,
    GraderScore,
    Response,
    Task,
)
from db.raters.assignments import assign, draw_calibration
from db.raters.scoring import submit
from db.rubrics import ensure_rubric
from errors import UserError
from grading.config import GraderSettings, store_config
from rubric.scoring import validate_score
from tests.factories import make_study

pytestmark = pytest.mark.slow  # starts processes or takes seconds: make test only


def _study(url: str, grader_noise: float, seed: int = 0) -> tuple[Session, int]:
    s = Session(engine_for(url), expire_on_commit=False)
    make_study(s, n_tasks=30, samples=1)  # 60 responses
    rubric = ensure_rubric(s, "neurology-v1")
    draw_calibration(s, n=60, seed=seed)
    assign(s, rubric_hash=rubric.content_hash, raters=["expert1", "expert2", "expert3"],
           overlap=3, selection="calibration", seed=seed)
    s.commit()
    rng = np.random.default_rng(seed)
    family = dict(s.exec(select(Response.response_id, Task.family).join(Task)).all())
    quality = {rid: int(rng.integers(0, 5)) for rid in family}  # the response's true level
    for a in s.exec(select(Assignment)).all():
        level = int(np.clip(quality[a.response_id] + rng.integers(-1, 2) * (rng.random() < 0.2),
                            0, 4))
        crit = {c.key: level for c in rubric.applicable_criteria(family[a.response_id])}
        submit(s, rater_id=a.rater_id, assignment_id=a.id,
               values={"criteria": crit, "correct_diagnosis": level >= 3, "error_tags": [],
                       "comment": "", "confidence": 3})
    config = store_config(s, GraderSettings(model="test-grader-2024-01-01",
                                            rubric=rubric.id))  # the experts' rubric
    run = GraderRun(config_id=config.id, items="calibration")
    s.add(run)
    s.flush()
    for rid, q in quality.items():
        level = int(np.clip(round(q + rng.normal(0, grader_noise)), 0, 4))
        crit = {c.key: level for c in rubric.applicable_criteria(family[rid])}
        clean = validate_score(rubric, {"criteria": crit, "correct_diagnosis": level >= 3},
                                      family=family[rid])
        s.add(GraderScore(config_id=config.id, response_id=rid, run_id=run.id, request_hash="x",
                          criteria=clean["criteria"], correct_diagnosis=clean["correct_diagnosis"],
                          error_tags=[], overall=clean["overall"]))
    s.commit()
    return s, config.id


def _look(s: Session, cid: int, **options) -> calibrate.Outcome:
    return calibrate.run(s, config_id=cid, part="heldout", **options)


def test_faithful_grader_passes_its_one_held_out_look(database_url: str, tmp_path: Path) -> None:
    s, cid = _study(database_url, grader_noise=0.0)
    with pytest.raises(UserError, match="no calibration protocol is registered"):
        _look(s, cid)
    protocol.register(s, accept_weaker=True, statistics=protocol.Statistics(bootstrap=300), actor="admin")
    s.commit()
    with pytest.raises(UserError, match=r"judged only under protocol 1 \(sha256"):
        _look(s, cid, gate=protocol.Gate(pearson_min=0.0))
    first = _look(s, cid)
    data = report.collect(s, config_id=cid, part="heldout")
    held = s.exec(select(CalibrationItem).where(CalibrationItem.part == "heldout")).all()
    assert sorted(data.items) == sorted(c.response_id for c in held)
    rep = first.report
    assert first.fresh and rep.validates and rep.passed, rep.why_failed()
    assert rep.check("pearson").value > 0.9 and rep.protocol_hash == protocol.current(s).content_hash
    assert rep.data_hash == report.data_hash(data)
    assert [(x.config_id, x.passed) for x in rep.heldout_looks] == [(cid, True)]
    assert s.get(GraderConfig, cid).validated_report_id == first.row.id
    again = _look(s, cid)  # asking again shows the stored decision; nothing is recomputed
    assert not again.fresh and again.row.id == first.row.id and again.report == rep
    assert s.exec(select(func.count()).select_from(CalibrationReport)).one() == 1
    with pytest.raises(UserError, match="can no longer change"):
        protocol.register(s, gate=protocol.Gate(pearson_min=0.5))
    assert calibrate.check(s, report_id=first.row.id).matches

    from calibration.html import export

    paths = export(tmp_path / "out", rep, first.row.html, first.figures)
    page = paths[0].read_text()
    assert "PASSED" in page and page.count("data:image/png;base64,") == 4
    assert "Held-out looks (1 configs)" in page and rep.data_hash in page
    assert json.loads(paths[1].read_text())["passed"] is True

    # An expert revises a held-out score after the look: the stored report no longer holds.
    a = s.exec(select(Assignment).join(CalibrationItem, CalibrationItem.response_id ==
                                       Assignment.response_id)
               .where(CalibrationItem.part == "heldout")).first()
    family = s.exec(select(Task.family).join(Response).where(
        Response.response_id == a.response_id)).one()
    rubric = ensure_rubric(s, "neurology-v1")
    crit = {c.key: 0 for c in rubric.applicable_criteria(family)}
    submit(s, rater_id=a.rater_id, assignment_id=a.id,
           values={"criteria": crit, "correct_diagnosis": False, "error_tags": [], "comment": "",
                   "confidence": 3})
    checked = calibrate.check(s, report_id=first.row.id)
    assert not checked.matches and "the scores differ" in checked.differences[0]
    s.close()


def test_noisy_grader_fails_and_why(sqlite_url: str) -> None:
    s, cid = _study(sqlite_url, grader_noise=2.5, seed=1)
    protocol.register(s, accept_weaker=True, statistics=protocol.Statistics(bootstrap=200))
    out = _look(s, cid)
    assert not out.report.passed and not out.report.check("pearson").passed
    assert any(r.startswith("Pearson r: ") and "is below 0.9" in r for r in out.report.why_failed())
    assert s.get(GraderConfig, cid).validated_report_id is None
    assert calibrate.validation_status(s, config_id=cid).startswith("failed its held-out look")
    with pytest.raises(UserError, match="no passing held-out look"):
        calibrate.revoke(s, config_id=cid, reason="x", actor="admin")
    s.close()


def test_dev_part_explores_freely_and_never_validates(sqlite_url: str) -> None:
    s, cid = _study(sqlite_url, grader_noise=2.5, seed=1)
    out = calibrate.run(s, config_id=cid, part="dev",
                        gate=protocol.Gate(pearson_min=0.0, icc2_min=0.0, required=("pearson",)),
                        statistics=protocol.Statistics(bootstrap=200))
    assert out.report.passed and not out.report.validates and out.report.protocol_hash is None
    assert s.get(GraderConfig, cid).validated_report_id is None
    assert calibrate.validation_status(s, config_id=cid) == (
        "passed on dev only: never held-out tested")
    with pytest.raises(UserError, match="bootstrap must be"):
        calibrate.run(s, config_id=cid, part="dev", statistics=protocol.Statistics(bootstrap=-1))
    s.close()


@pytest.mark.parametrize("gate, message", [
    (dict(pearson_min=-1.0), r"pearson_min must be in \[0, 1\]"),
    (dict(alt_test_epsilon=1.0), r"alt_test_epsilon must be in \(0, 1\)"),
    (dict(alt_test_epsilon=float("nan")), "alt_test_epsilon"),
    (dict(icc2_min=1.5), "icc2_min"),
    (dict(required=()), "required checks"),
    (dict(required=("kappa",)), "required checks"),
])
def test_protocol_values_outside_their_range_are_refused(sqlite_url: str, gate: dict,
                                                         message: str) -> None:
    s, _ = _study(sqlite_url, grader_noise=0.0)
    with pytest.raises(UserError, match=message):
        protocol.register(s, gate=protocol.Gate(**gate))
    assert protocol.current(s) is None
    s.close()


def test_an_incomplete_held_out_part_is_refused_with_counts(sqlite_url: str) -> None:
    s, cid = _study(sqlite_url, grader_noise=0.0)
    protocol.register(s, accept_weaker=True, statistics=protocol.Statistics(bootstrap=200))
    held = s.exec(select(CalibrationItem.response_id)
                  .where(CalibrationItem.part == "heldout")).all()
    s.exec(GraderScore.__table__.delete().where(GraderScore.response_id == held[0]))
    s.commit()
    with pytest.raises(UserError, match=rf"1 of {len(held)} items have no valid grade"):
        _look(s, cid)
    assert s.exec(select(func.count()).select_from(CalibrationReport)).one() == 0
    s.close()


def test_cli_gate_on_the_demo(demo_study: Path, tmp_path: Path, capsys) -> None:
    """The demo's done-when: flags refused on the held-out part, one look, a frozen protocol,
    revocation stops freezing."""
    from cli import main

    def nmb(*args: str) -> tuple[int, str, str]:
        code = main(list(args))
        out, err = capsys.readouterr()
        return code, out, err

    code, _, err = nmb("calibrate", "--config", "1", "--part", "heldout", "--pearson-min", "-1")
    assert code == 2 and err.count("\n") == 1 and "registered protocol 1" not in err
    assert "protocol 1 (sha256" in err
    code, out, _ = nmb("calibrate", "--config", "1", "--part", "heldout")
    first = json.loads(out)
    assert code == 0 and first["validates"] and not first["decided_earlier"]
    code, out, _ = nmb("calibrate", "--config", "1", "--part", "heldout")
    again = json.loads(out)
    assert again["decided_earlier"] and again["report_id"] == first["report_id"]
    assert again["passed"] == first["passed"]
    code, _, err = nmb("protocol", "register", "--pearson-min", "0.5")
    assert code == 2 and "can no longer change" in err
    code, out, _ = nmb("calibrate", "--check", str(first["report_id"]))
    assert code == 0 and json.loads(out)["matches"]
    assert again["status"] == f"passed its held-out look (report {first['report_id']})"
    code, _, err = nmb("revoke", "--config", "1", "--reason", "synthetic\ndemo   grades ")
    assert code == 0  # (kept on one line: it is quoted in refusals, which are one line)
    code, out, _ = nmb("calibrate", "--config", "1", "--part", "heldout")  # the stored look,
    revoked = json.loads(out)  # and where the config stands now (before: no word of it)
    assert revoked["decided_earlier"] and revoked["passed"]
    assert revoked["status"] == "validation revoked (synthetic demo grades)"
    code, _, err = nmb("package", "freeze", "--config", "1", "--out", str(tmp_path / "p.zip"))
    assert code == 2 and "revoked (synthetic demo grades)" in err and err.count("\n") == 1
    assert not (tmp_path / "p.zip").exists()
    code, _, err = nmb("calibrate", "--config", "1", "--part", "dev", "--bootstrap", "-1")
    assert code == 2 and "bootstrap must be" in err
    code, _, err = nmb("calibrate", "--config", "1", "--part", "dev", "--out", "/proc/version/x")
    assert code == 2 and "cannot write the report" in err



def test_stale_judgments_are_left_out_and_another_rubric_is_flagged(sqlite_url: str) -> None:
    """A case revised after it was graded and scored: its grades and expert scores were made
    against the old record, so the calibration data leave them out and say how many. Experts
    on neurology-v1 and the grader's config on neurology-v1.1: the criteria share keys, so the
    statistics stand, but the report says the rubrics differ."""
    from calibration.report import collect
    from db.study.revisions import Change, write

    s, cid = _study(sqlite_url, grader_noise=0.5)
    before = collect(s, config_id=cid, part="all")
    assert not any("scored with" in f or "revision" in f for f in before.flags)
    case_id = before.cases[0]
    write(s, [Change("case", case_id, old={"ehr": "x"}, new={"ehr": "Corrected record."})],
          bundle="fixed", actor="admin")
    s.get(GraderConfig, cid).rubric_hash = ensure_rubric(s, "neurology-v1.1").content_hash
    s.commit()
    after = collect(s, config_id=cid, part="all")
    gone = [rid for rid, case in zip(before.items, before.cases, strict=True) if case == case_id]
    assert gone and sorted(after.items) == sorted(set(before.items) - set(gone))
    n = len(gone) * 4  # each item's grade and its three experts' scores
    assert f"{n} grades or expert scores made against an earlier revision" in " ".join(after.flags)
    [flag] = [f for f in after.flags if "scored with" in f]
    assert flag.startswith("the experts scored with rubric neurology-v1 (")
    assert "the grader with rubric neurology-v1.1 (" in flag
    s.close()
