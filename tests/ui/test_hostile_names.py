"""Names a bundle's author chose that must stay on the server: an image file named after the
diagnosis, a response id naming its model. The pages show series labels and blind codes."""

import json
import shutil
from pathlib import Path

import pytest
from sqlmodel import select

import cli
from db.engine import session
from db.models import User
from db.raters.scoring import queue
from tests.apptest import ROOT, page, page_payload
from ui.auth import LoggedIn

pytestmark = pytest.mark.slow  # starts processes or takes seconds: make test only

FILE = "relapsing-remitting-ms-flair.nii.gz"
RESPONSE_ID = "gpt-4o-2024-08-06-sample-0"


def _hostile_bundle(tmp_path: Path) -> Path:
    bundle = tmp_path / "bundle"
    shutil.copytree(ROOT / "examples" / "sample-bundle", bundle)
    case = bundle / "cases" / "example-01"
    (case / "flair.nii.gz").rename(case / FILE)
    info = json.loads((case / "case.json").read_text())
    info["series"] = [{**s, "file": FILE} if s["file"] == "flair.nii.gz" else s
                      for s in info["series"]]
    (case / "case.json").write_text(json.dumps(info))
    lines = (bundle / "responses.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    lines[0] = json.dumps({**first, "response_id": RESPONSE_ID})
    (bundle / "responses.jsonl").write_text("\n".join(lines) + "\n")
    return bundle


def _login(name: str) -> LoggedIn:
    with session() as s:
        u = s.exec(select(User).where(User.name == name)).one()
    return LoggedIn(id=u.id, name=u.name, role=u.role, demo=u.demo)


def test_file_names_and_response_ids_never_reach_the_exam_or_scoring_page(tmp_path: Path) -> None:
    password = tmp_path / "pw"
    password.write_text("a-long-enough-password\n")
    assert cli.main(["import", str(_hostile_bundle(tmp_path))]) == 0
    for name, role in (("e1", "expert"), ("e2", "expert"), ("taker", "student")):
        assert cli.main(["users", "add", name, "--role", role,
                         "--password-file", str(password)]) == 0
    assert cli.main(["exam", "add", "Baseline"]) == 0
    assert cli.main(["assign", "--raters", "e1", "e2", "--overlap", "2", "--items", "all"]) == 0
    hidden = [FILE, "relapsing-remitting-ms", RESPONSE_ID, "gpt-4o", "example-model"]
    expert = _login("e1")
    with session() as s:
        entries = queue(s, rater_id=expert.id)
    assert len(entries) == 6
    for e in entries:
        at = page("pages/score.py", expert)
        at.session_state["score_current"] = e.assignment_id
        at.run()
        assert not at.exception
        payload = page_payload(at)
        assert e.blind_code in payload
        assert not [x for x in hidden if x in payload], e.blind_code
    taker = _login("taker")
    for i in range(3):
        at = page("pages/exam.py", taker)
        at.session_state["exam_task"] = i
        at.run()
        assert not at.exception
        payload = page_payload(at)
        assert "FLAIR" in payload or i == 2  # the series is shown by its label
        assert not [x for x in hidden if x in payload], i
