"""Frozen grader packages against the local OpenAI-compatible server: freeze, grade, canary."""

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from sqlalchemy import func
from sqlmodel import Session, select

from calibration.grader import grade
from calibration.grader_config import GraderSettings, store_config
from calibration.package import canary, freeze, grade_responses, load, read_responses
from db.engine import session, upgrade
from db.models import (
    CalibrationItem,
    CalibrationReport,
    FrozenPackage,
    GraderScore,
    Response,
)
from errors import UserError
from tests.factories import make_study
from tests.openai_server import OpenAIServer, _schema_of, sample_document

ROOT = Path(__file__).resolve().parents[2]
KEY = "sk-test-package-0000"


@pytest.fixture
def server():
    with OpenAIServer() as srv:
        yield srv


def _graded_study(s: Session, srv: OpenAIServer, *, validated: bool = True) -> int:
    """12 responses graded by the server, 8 of them held-out calibration items; the config is
    marked validated by a passing report row (the gate itself: tests/calibration/test_report)."""
    rids = make_study(s, n_tasks=6, samples=1, experts=0)
    for i, rid in enumerate(rids):
        s.add(CalibrationItem(response_id=rid, part="heldout" if i < 8 else "dev", seed=0))
    config = store_config(s, GraderSettings(base_url=srv.base_url))
    s.commit()
    assert grade(s, config_id=config.id, api_key=KEY).graded == 12
    if validated:
        report = CalibrationReport(config_id=config.id, part="heldout", thresholds={},
                                   results={"gate": {"pearson": {"passed": True}}}, passed=True)
        s.add(report)
        s.flush()
        config.validated_report_id = report.id
        s.add(config)
        s.commit()
    return config.id


def test_freeze_grade_and_canary(sqlite_url: str, server: OpenAIServer, tmp_path: Path) -> None:
    from db.engine import engine_for

    with Session(engine_for(sqlite_url), expire_on_commit=False) as s:
        cid = _graded_study(s, server)
        row = freeze(s, config_id=cid, out=tmp_path / "grader.zip", canary_size=5)
        assert s.exec(select(FrozenPackage)).one().id == row.id
        study_bodies = {g.response_id: g.request_hash for g in s.exec(select(GraderScore))}
        responses = list(s.exec(select(Response).order_by(Response.response_id)))
    pkg = load(tmp_path / "grader.zip")
    assert len(pkg.canary) == 5 and len(pkg.tasks) == 6
    assert all(c["request_hash"] == study_bodies[c["response_id"]] for c in pkg.canary)

    sent = len(server.chat_requests())
    same = canary(pkg, api_key=KEY)
    assert len(server.chat_requests()) == sent + 5  # no cache: every canary item is sent
    assert not same["drift"] and same["criteria_agreement"] == 1.0 and same["overall_mad"] == 0
    assert same["new_models_returned"] == [] and same["new_system_fingerprints"] == []

    server.model_alias = {pkg.config.model: "gpt-4o-2099-01-01"}  # a new snapshot, same scores
    renamed = canary(pkg, api_key=KEY)
    assert not renamed["drift"] and renamed["new_models_returned"] == ["gpt-4o-2099-01-01"]

    server.answer = lambda body: json.dumps(sample_document(_schema_of(body), 12345))
    drifted = canary(pkg, api_key=KEY)
    assert drifted["drift"] and drifted["criteria_agreement"] < 0.9

    server.answer = None  # the frozen grader scores new responses as the study's run did
    rows = grade_responses(pkg, responses[:3], api_key=KEY)
    with Session(engine_for(sqlite_url)) as s:
        study = {g.response_id: g for g in s.exec(select(GraderScore))}
    for row in rows:
        assert row["ok"] and row["overall"] == study[row["response_id"]].overall


def test_freeze_refuses_and_writes_nothing(sqlite_url: str, server: OpenAIServer,
                                          tmp_path: Path) -> None:
    from db.engine import engine_for

    with Session(engine_for(sqlite_url), expire_on_commit=False) as s:
        cid = _graded_study(s, server, validated=False)
        with pytest.raises(UserError, match="not validated"):
            freeze(s, config_id=cid, out=tmp_path / "out" / "p.zip")
        with pytest.raises(UserError, match="no grader config"):
            freeze(s, config_id=cid + 1, out=tmp_path / "out" / "p.zip")
        assert s.exec(select(func.count()).select_from(FrozenPackage)).one() == 0
    assert not (tmp_path / "out").exists()


def test_tampered_package_and_bad_responses_are_refused(sqlite_url: str, server: OpenAIServer,
                                                        tmp_path: Path) -> None:
    from db.engine import engine_for

    with Session(engine_for(sqlite_url), expire_on_commit=False) as s:
        freeze(s, config_id=_graded_study(s, server), out=tmp_path / "p.zip", canary_size=3)
    with zipfile.ZipFile(tmp_path / "p.zip") as src, \
            zipfile.ZipFile(tmp_path / "bad.zip", "w") as dst:
        for name in src.namelist():
            data = src.read(name)
            dst.writestr(name, data.replace(b"Prompt 1", b"Prompt X") if name == "tasks.jsonl"
                         else data)
    with pytest.raises(UserError, match="tasks.jsonl does not match its sha256"):
        load(tmp_path / "bad.zip")
    lines = tmp_path / "r.jsonl"
    lines.write_text('{"response_id": "n1", "task_id": "task0", "text": "MS."}\n{"task_id": 3}\n')
    with pytest.raises(UserError, match=r"r.jsonl line 2: 'response_id' must be non-empty text"):
        read_responses(lines)
    lines.write_text('{"response_id": "n1", "task_id": "task99", "text": "MS."}\n')
    with pytest.raises(UserError, match="task 'task99' is not in the package"):
        grade_responses(load(tmp_path / "p.zip"), read_responses(lines), api_key=KEY)


def test_cli_package_commands(nmb_home: Path, server: OpenAIServer, tmp_path: Path) -> None:
    upgrade()
    with session() as s:
        cid = _graded_study(s, server)
    env = {**os.environ, "OPENAI_API_KEY": KEY}

    def nmb(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "cli", "package", *args], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=120)

    out = nmb("freeze", "--config", str(cid), "--out", str(tmp_path / "g.zip"), "--canary", "4")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["canary_items"] == 4
    again = nmb("freeze", "--config", str(cid), "--out", str(tmp_path / "g.zip"))
    assert again.returncode == 2 and again.stderr.count("\n") == 1 and "exists" in again.stderr
    ok = nmb("canary", str(tmp_path / "g.zip"))
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["drift"] is False
    responses = tmp_path / "new.jsonl"
    responses.write_text('{"response_id": "m1", "task_id": "task2", "text": "Glioma.", '
                         '"model": "new-model"}\n')
    sent = len(server.chat_requests())
    nowhere = nmb("grade", str(tmp_path / "g.zip"), str(responses), "--out",
                  str(tmp_path / "missing" / "s.jsonl"))
    assert nowhere.returncode == 2 and "cannot write" in nowhere.stderr
    assert len(server.chat_requests()) == sent  # refused before any request was paid for
    scored = nmb("grade", str(tmp_path / "g.zip"), str(responses), "--out", str(tmp_path / "s.jsonl"))
    assert scored.returncode == 0, scored.stderr
    (row,) = [json.loads(x) for x in (tmp_path / "s.jsonl").read_text().splitlines()]
    assert row["ok"] and row["model"] == "new-model" and 0 <= row["overall"] <= 1
    assert KEY not in (tmp_path / "s.jsonl").read_text() + scored.stdout + scored.stderr


def test_calibrate_page_freezes_a_validated_config(nmb_home: Path, server: OpenAIServer) -> None:
    from tests.apptest import make_user, page

    upgrade()
    with session() as s:
        _graded_study(s, server)
    at = page("pages/calibrate.py", make_user("admin1", "admin")).run()
    next(b for b in at.button if b.label == "Freeze package").click().run(timeout=60)
    assert not at.exception, at.exception
    assert any("frozen" in m.value for m in at.success), [e.value for e in at.error]
    with session() as s:
        (row,) = s.exec(select(FrozenPackage)).all()
    assert Path(row.path).parent == nmb_home / "packages"
    assert load(Path(row.path)).manifest["canary"]["items"] == 8  # every held-out item
