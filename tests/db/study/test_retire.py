"""Retire and restore (db.study.retire, `nmb retire`/`unretire`): a retired item leaves what
is still to happen and the results' tables, is listed with its reason, and nothing recorded on
it is deleted."""

from pathlib import Path

import pandas as pd
from sqlalchemy import func
from sqlmodel import Session, select

import cli
from db.engine import engine_for
from db.export import export
from db.models import AuditLog, GraderScore, Response, Retirement
from db.raters.assignments import assign
from db.raters.scoring import queue
from db.rubrics import ensure_rubric
from db.study.exams import answer_stage, attempt_for, ensure_exam, exam_tasks
from db.users import add_user
from results import results
from tests.factories import grade_all, make_study


def _tasks(s: Session, attempt) -> list[str]:
    return [t.task_id for t in exam_tasks(s, attempt=attempt)]


def _judged_tasks(s: Session) -> set[str]:
    return {j.task_id for j in results.build(s, ks=(1,)).judgments}


def test_a_retired_case_leaves_new_exams_queues_and_results_and_comes_back(
        database_url: str, capsys, tmp_path: Path) -> None:
    with Session(engine_for(database_url), expire_on_commit=False) as s:
        make_study(s, n_tasks=3, experts=2)
        grade_all(s)
        begun, fresh = (add_user(s, name=n, role="student", password="pw") for n in ("a", "b"))
        old = ensure_exam(s, name="before")
        s.commit()
        answer_stage(s, attempt=attempt_for(s, exam_id=old.id, user_id=begun.id),
                     task_id="task1", text="An answer")
        waiting = attempt_for(s, exam_id=old.id, user_id=fresh.id)  # opened, nothing answered
        assert _judged_tasks(s) == {"task0", "task1", "task2"}
        audit = s.exec(select(func.count()).select_from(AuditLog)).one()

    assert cli.main(["retire", "case", "case0", "--reason", "wrong scan attached"]) == 0
    assert "retired case case0" in capsys.readouterr().out

    with Session(engine_for(database_url), expire_on_commit=False) as s:
        row = s.exec(select(AuditLog).where(AuditLog.id > audit)).one()
        assert (row.action, row.actor, row.detail["kind"], row.detail["item"],
                row.detail["reason"]) == ("retire", "cli", "case", "case0", "wrong scan attached")
        assert ensure_exam(s, name="after").task_ids == ["task1", "task2"]
        begun_attempt = s.exec(select(type(waiting)).where(type(waiting).user_id == begun.id)).one()
        assert _tasks(s, begun_attempt) == ["task0", "task1", "task2"]  # begun: unchanged
        assert _tasks(s, waiting) == ["task1", "task2"]  # not begun: the retired task leaves
        res = results.build(s, ks=(1,))
        assert {j.task_id for j in res.judgments} == {"task1", "task2"}
        assert [(r.kind, r.item_id, r.reason) for r in res.retired] == [
            ("case", "case0", "wrong scan attached")]
        assert any("1 item retired" in f for f in res.flags)
        rubric = ensure_rubric(s, "neurology-v1")
        assign(s, rubric_hash=rubric.content_hash, raters=["expert1", "expert2"], overlap=1)
        s.commit()
        queued = {e.blind_code for rater in (1, 2) for e in queue(s, rater_id=rater)}
        codes = dict(s.exec(select(Response.blind_code, Response.task_id)).all())
        assert queued and {codes[c] for c in queued} == {"task1", "task2"}
        export(s, "responses", fmt="csv", out=tmp_path / "responses.csv")
        exported = pd.read_csv(tmp_path / "responses.csv")
        assert sorted(exported[exported.retired].response_id) == [  # kept, marked
            "r0-model-alpha-0", "r0-model-beta-0"]
        assert s.exec(select(func.count()).select_from(GraderScore)).one() == 6  # nothing deleted

    assert cli.main(["unretire", "case", "case0", "--reason", "scan checked"]) == 0
    with Session(engine_for(database_url), expire_on_commit=False) as s:
        assert [(a.action, a.detail["reason"]) for a in s.exec(
            select(AuditLog).where(AuditLog.action.in_(["retire", "unretire"]))
            .order_by(AuditLog.id))] == [("retire", "wrong scan attached"),
                                         ("unretire", "scan checked")]
        assert s.exec(select(Retirement)).one().undo_reason == "scan checked"  # kept, undone
        assert ensure_exam(s, name="restored").task_ids == ["task0", "task1", "task2"]
        res = results.build(s, ks=(1,))
        assert {j.task_id for j in res.judgments} == {"task0", "task1", "task2"}
        assert res.retired == []


def test_a_retired_model_or_grader_run_leaves_the_results(database_url: str, capsys) -> None:
    with Session(engine_for(database_url), expire_on_commit=False) as s:
        make_study(s, n_tasks=3, experts=0)
        grade_all(s)
        s.commit()
        run_id = s.exec(select(GraderScore.run_id)).first()
    assert cli.main(["retire", "model", "model-alpha", "--reason", "wrong checkpoint"]) == 0
    with Session(engine_for(database_url)) as s:
        res = results.build(s, ks=(1,))
        assert {c.who for c in res.overall} == {"model-beta"}
        assert "model-alpha" not in {m.model for m in res.model_costs}
    assert cli.main(["retire", "grader-run", str(run_id), "--reason", "dead host"]) == 0
    with Session(engine_for(database_url)) as s:
        res = results.build(s, ks=(1,))
        assert res.judgments and {j.source for j in res.judgments} == {"missing"}
        assert [r.kind for r in res.retired] == ["model", "grader-run"]
    assert cli.main(["retired"]) == 0
    listed = capsys.readouterr().out
    assert "model model-alpha: wrong checkpoint" in listed and "grader-run" in listed


def test_retiring_what_is_unknown_or_not_retired_is_one_line_and_writes_nothing(
        database_url: str, capsys) -> None:
    with Session(engine_for(database_url)) as s:
        make_study(s, n_tasks=1, experts=0)
        audit = s.exec(select(func.count()).select_from(AuditLog)).one()
    for argv, says in (
            (["retire", "case", "nope", "--reason", "x"], "no case 'nope' in this study"),
            (["retire", "grader-run", "12", "--reason", "x"], "no grader-run '12'"),
            (["retire", "patient", "case0", "--reason", "x"], "kind 'patient' is not one of"),
            (["retire", "case", "case0", "--reason", "  "], "--reason is empty"),
            (["unretire", "case", "case0", "--reason", "x"], "case 'case0' is not retired")):
        assert cli.main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and says in err, err
    assert cli.main(["retire", "task", "task0", "--reason", "typo"]) == 0
    assert cli.main(["retire", "task", "task0", "--reason", "again"]) == 2
    assert "retired already" in capsys.readouterr().err
    with Session(engine_for(database_url)) as s:
        assert len(s.exec(select(Retirement)).all()) == 1
        assert s.exec(select(func.count()).select_from(AuditLog)).one() == audit + 1
