"""Revisions and versions (db.study.revisions, db.study.versions; `nmb import --revise`,
`nmb grade --items stale`, `nmb version tag`, `nmb results --version`): a corrected record is
refused without --revise and stored as a revision with it, what was judged against the old
content is stale and counted apart, and a version keeps the tables it was tagged with."""

import json
from pathlib import Path

import pytest
from sqlmodel import Session, select

import cli
from db.engine import engine_for
from db.export import KINDS
from db.models import AuditLog, Case, GraderScore, Revision, Task
from grading.config import GraderSettings, store_config
from grading.grader import grade
from results import results
from tests.db.bundle.bundles import snapshot, write_bundle
from tests.factories import grade_all
from tests.openai_server import OpenAIServer


def _revised(root: Path) -> Path:
    """The bundle with case c1's record and reference answer and task t3's stages corrected."""
    case = json.loads((root / "cases/c1/case.json").read_text())
    case["ehr"] = "Corrected record."
    case["ground_truth"]["final_diagnosis"] = "Cardioembolic stroke"
    (root / "cases/c1/case.json").write_text(json.dumps(case))
    tasks = [json.loads(line) for line in (root / "tasks.jsonl").read_text().splitlines()]
    tasks[2]["stages"] = ["The CSF is normal.", "A follow-up MRI shows new lesions."]
    (root / "tasks.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tasks))
    return root


def _counted(s: Session) -> set[str]:
    return {j.response_id for j in results.build(s, ks=(1,)).judgments}


def test_a_revision_is_refused_without_revise_shown_on_a_dry_run_and_leaves_old_work_stale(
        database_url: str, capsys, tmp_path: Path) -> None:
    assert cli.main(["import", str(write_bundle(tmp_path / "a"))]) == 0
    with Session(engine_for(database_url), expire_on_commit=False) as s:
        config = grade_all(s)
        s.commit()
        before = _counted(s)
    assert len(before) == 12
    fixed = _revised(write_bundle(tmp_path / "b"))
    capsys.readouterr()
    unchanged = snapshot(database_url)

    with pytest.raises(SystemExit, match="2"):  # two problems: listed, then exit 2
        cli.main(["import", str(fixed)])
    err = capsys.readouterr().err
    assert "case c1 already exists with different content (ehr)" in err
    assert "task t3 already exists with different content (stages)" in err
    assert "--revise" in err
    assert cli.main(["import", str(fixed), "--revise", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "would revise 1 case, 1 task" in out
    assert "  case c1 ehr: '# Left MCA stroke\\n\\nA **synthetic** case.' -> 'Corrected record.'" \
        in out
    assert "case c1 ground_truth:" in out and "task t3 stages:" in out
    assert snapshot(database_url) == unchanged

    assert cli.main(["import", str(fixed), "--revise"]) == 0
    with Session(engine_for(database_url)) as s:
        assert s.get(Case, "c1").ehr == "Corrected record."
        assert s.get(Task, "t3").stages[0] == "The CSF is normal."
        revs = s.exec(select(Revision).order_by(Revision.kind)).all()
        assert [(r.kind, r.item_id, r.number, r.fields, r.shown) for r in revs] == [
            ("case", "c1", 2, ["ehr", "ground_truth"], True),
            ("task", "t3", 2, ["stages"], True)]
        assert revs[0].old["ehr"].startswith("# Left MCA stroke")
        assert len(s.exec(select(AuditLog).where(AuditLog.action == "revise")).all()) == 2
        # c1's record was shown to the models: its tasks' answers (t1, t2) are stale, as are
        # t3's (its stages changed); case c2 has only t3. Nothing is counted now.
        res = results.build(s, ks=(1,))
        assert {j.response_id for j in res.judgments} == set()
        assert any("12 responses, 0 grades and 0 expert scores were made against an earlier "
                   "revision" in f for f in res.flags)
        assert len(s.exec(select(GraderScore).where(GraderScore.config_id == config)).all()) == 12
        # kept, and marked in the exports
        assert [r["stale"] for r in KINDS["grader-scores"](s, False)] == [True] * 12


def test_a_corrected_answer_makes_grades_stale_regraded_by_one_command_and_a_version_keeps_them(
        database_url: str, capsys, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert cli.main(["import", str(write_bundle(tmp_path / "a"))]) == 0
    with OpenAIServer() as server, Session(engine_for(database_url),
                                           expire_on_commit=False) as s:
        config = store_config(s, GraderSettings(base_url=server.base_url)).id
        s.commit()
        assert grade(s, config_id=config, api_key="sk-test",
                     trust_base_url=server.base_url).graded == 12
        assert cli.main(["version", "tag", "1.0", "--note", "as published"]) == 0
        assert s.exec(select(AuditLog.detail).where(AuditLog.action == "version.tag")).one() \
            == {"version": "1.0", "tasks": 3}
        s.rollback()
        case = json.loads((tmp_path / "a/cases/c2/case.json").read_text())
        case["ground_truth"]["final_diagnosis"] = "Neuromyelitis optica"
        (tmp_path / "a/cases/c2/case.json").write_text(json.dumps(case))
        assert cli.main(["import", str(tmp_path / "a"), "--revise"]) == 0
        s.expire_all()
        # only the reference answer changed: the responses stand, t3's four grades are stale
        # (not graded now: counted wrong in the default view, as a failed grade is)
        def not_graded(version: str | None = None) -> int:
            res = results.build(s, config_id=config, ks=(1,), version=version)
            return sum(c.not_graded for c in res.coverage)

        assert not_graded() == 4
        assert any("0 responses, 4 grades" in f for f in
                   results.build(s, config_id=config, ks=(1,)).flags)
        assert not_graded("1.0") == 0
        assert results.build(s, config_id=config, ks=(1,), version="1.0").version == "1.0"

        sent = len(server.requests)
        s.rollback()  # end this session's read before the command writes
        capsys.readouterr()
        assert cli.main(["grade", "--base-url", server.base_url, "--items", "stale"]) == 0
        # the new answer makes new requests, not cache hits: one per distinct answer text
        # (the two models' answers to t3 are the same two texts)
        assert len(server.requests) - sent == 2
        assert "4 graded (2 from cache), 0 failed of 4" in capsys.readouterr().out
        s.expire_all()
        assert not_graded() == 0
        # the replaced grades leave the table (their values stay in the audit log), so the
        # version now lacks them: publish a version's tables before grading its stale grades
        assert not_graded("1.0") == 4
        replaced = s.exec(select(AuditLog).where(AuditLog.action == "grade.replace")).all()
        assert len(replaced) == 4
        s.rollback()
        assert cli.main(["version", "tag", "1.0"]) == 2
        assert "version 1.0 exists already" in capsys.readouterr().err
        # the site: the study now and each version, each page linking to the others
        site = tmp_path / "site"
        assert cli.main(["results", "--config", str(config), "--site", str(site),
                         "--format", "csv"]) == 0
        now, tagged = (site / "index.html").read_text(), \
            (site / "versions/1.0/index.html").read_text()
        assert '<a href="versions/1.0/index.html">1.0</a>' in now
        assert "Neural-MedBench leaderboard, version 1.0" in tagged
        assert '<a href="../../index.html">now</a>' in tagged


def test_a_score_made_on_a_form_shown_before_a_revision_is_refused(sqlite_url: str,
                                                                  tmp_path: Path) -> None:
    """The form showed the old record; a revision lands; its submit is refused (it would be
    stored as made after the revision, and counted, against content the rater never saw)."""
    from db.raters.assignments import assign
    from db.raters.scoring import ChangedItem, load_item, queue, submit
    from db.rubrics import ensure_rubric

    assert cli.main(["import", str(write_bundle(tmp_path / "a"))]) == 0
    with Session(engine_for(sqlite_url), expire_on_commit=False) as s:
        from db.users import add_user

        rater = add_user(s, name="neuro", role="expert", password="pw")
        assign(s, rubric_hash=ensure_rubric(s, "neurology-v1").content_hash, raters=["neuro"],
               overlap=1, selection="all", seed=0)
        s.commit()
        entry = next(e for e in queue(s, rater_id=rater.id) if e.family == "lesion")  # task t2
        item = load_item(s, rater_id=rater.id, assignment_id=entry.assignment_id)
        s.rollback()
        tasks = [json.loads(x) for x in (tmp_path / "a/tasks.jsonl").read_text().splitlines()]
        tasks[1]["prompt"] = "Where is the lesion, and how large is it?"
        (tmp_path / "a/tasks.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tasks))
        assert cli.main(["import", str(tmp_path / "a"), "--revise"]) == 0
        values = {"criteria": {"lesion": 3, "integration": 3, "coherence": 3},
                  "correct_diagnosis": True, "error_tags": [], "comment": "", "confidence": 3}
        with pytest.raises(ChangedItem):
            submit(s, rater_id=rater.id, assignment_id=entry.assignment_id, values=values,
                   shown=item.shown)
