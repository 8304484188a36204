"""`nmb backup` while raters submit (threads on SQLite and PostgreSQL): the backup is one
consistent view, so its manifest's counts are those of the database it holds, and it restores
(the restore refuses a database whose counts are not the manifest's)."""

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url
from sqlmodel import Session, select

from db.backup.study import backup_study
from db.engine import engine_for
from db.models import Assignment
from db.raters.assignments import assign
from db.raters.scoring import load_item, submit
from db.rubrics import ensure_rubric
from tests.factories import make_study

pytestmark = pytest.mark.slow  # starts processes or takes seconds: make test only

ROOT = Path(__file__).resolve().parents[2]


def test_a_backup_taken_while_scores_are_submitted_restores(database_url: str, tmp_path: Path,
                                                             request: pytest.FixtureRequest
                                                             ) -> None:
    with Session(engine_for(database_url)) as s:
        make_study(s, n_tasks=30)
        rubric = ensure_rubric(s, "neurology-v1")
        assign(s, rubric_hash=rubric.content_hash, raters=["expert1", "expert2"], overlap=2)
        s.commit()
        work = [(a.rater_id, a.id, {
            "criteria": {c.key: rubric.scale.max for c in rubric.applicable_criteria(
                load_item(s, rater_id=a.rater_id, assignment_id=a.id).family)},
            "correct_diagnosis": True, "error_tags": [], "comment": "", "confidence": 3})
            for a in s.exec(select(Assignment).order_by(Assignment.id))]
    started, stop, submitted = threading.Event(), threading.Event(), []

    def rating() -> None:
        with Session(engine_for(database_url)) as s:
            for rater_id, aid, values in work:
                if stop.is_set():
                    break
                submit(s, rater_id=rater_id, assignment_id=aid, values=values)
                submitted.append(aid)
                if len(submitted) == 5:
                    started.set()

    rater = threading.Thread(target=rating)
    rater.start()
    started.wait(30)
    try:
        manifest = backup_study(tmp_path / "study.tar")
    finally:
        stop.set()
        rater.join()
    assert 0 < manifest.counts["expert_scores"] < len(submitted), (manifest.counts, len(submitted))
    target = {"NMB_HOME": str(tmp_path / "target")}
    if make_url(database_url).get_backend_name() == "postgresql":
        target["NMB_DATABASE_URL"] = request.getfixturevalue("postgres_server").create_database()
    env = {k: v for k, v in os.environ.items() if k != "NMB_DATABASE_URL"} | target
    done = subprocess.run([sys.executable, "-m", "cli", "restore", str(tmp_path / "study.tar")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert f" {manifest.counts['expert_scores']} expert score" in done.stdout, done.stdout
