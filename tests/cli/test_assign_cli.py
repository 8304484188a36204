"""`nmb assign --items`: by source (one model's responses, the human answers, the rest), with
`--dry-run` showing what would be added, and `--rubric` (default: the newest design's);
in-process, on SQLite and PostgreSQL."""

from sqlmodel import Session, select

import cli
from db.engine import engine_for
from db.models import Assignment, AssignmentDesign, AuditLog, Response
from rubric import DEFAULT_RUBRIC, load_rubric
from tests.factories import make_study


def test_assign_by_source(database_url: str, capsys) -> None:
    with Session(engine_for(database_url)) as s:
        make_study(s, n_tasks=3, experts=2)  # model-alpha and model-beta answer task0..task2
        for t in range(2):
            s.add(Response(response_id=f"human-{t}", task_id=f"task{t}", source="student",
                           text="An answer.", blind_code=f"R-H{t}"))
        s.commit()
    assign = ["assign", "--raters", "expert1", "expert2", "--overlap", "1", "--items"]
    capsys.readouterr()
    assert cli.main([*assign, "model:model-alpha", "--dry-run"]) == 0
    assert capsys.readouterr().out == (
        "would assign: adds 3 items of model 'model-alpha' (1 rater each): expert1 0 -> 2 "
        "(+2), expert2 0 -> 1 (+1)\n  from: model-alpha 3\n")
    with Session(engine_for(database_url)) as s:
        assert s.exec(select(Assignment)).first() is None  # a dry run writes nothing
    assert cli.main([*assign, "model:model-alpha"]) == 0
    assert cli.main([*assign, "model:model-alpha"]) == 2  # all of it assigned already
    assert cli.main([*assign, "model:model-gamma"]) == 2
    assert cli.main([*assign, "people"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[1:] == ["nmb: no response of model 'model-gamma' (models: model-alpha, "
                       "model-beta)",
                       "nmb: items 'people' are not one of all, unassigned, calibration, "
                       "human, model:NAME"]
    assert cli.main([*assign, "human", "--dry-run"]) == 0
    assert capsys.readouterr().out.endswith("  from: student 2\n")
    assert cli.main([*assign, "human", "--rubric", "neurology-v1"]) == 0  # a study's choice
    assert cli.main([*assign, "unassigned"]) == 0
    assert "adds 3 items (1 rater each)" in capsys.readouterr().out  # model-beta's, the rest
    with Session(engine_for(database_url)) as s:
        designs = s.exec(select(AssignmentDesign).order_by(AssignmentDesign.id)).all()
        assert [(d.selection, d.model) for d in designs] == [
            ("model", "model-alpha"), ("human", None), ("unassigned", None)]
        default, v1 = (load_rubric(n).content_hash for n in (DEFAULT_RUBRIC, "neurology-v1"))
        assert [d.rubric_hash for d in designs] == [default, v1, v1]  # then the rubric in force
        by_design = {d.id: {a.response_id for a in s.exec(
            select(Assignment).where(Assignment.design_id == d.id))} for d in designs}
        assert list(by_design.values()) == [
            {"r0-model-alpha-0", "r1-model-alpha-0", "r2-model-alpha-0"},
            {"human-0", "human-1"},
            {"r0-model-beta-0", "r1-model-beta-0", "r2-model-beta-0"}]
        audit = s.exec(select(AuditLog).where(AuditLog.action == "assign")
                       .order_by(AuditLog.id)).all()
        assert [(a.actor, a.detail["selection"], a.detail["items"]) for a in audit] == [
            ("cli", "model:model-alpha", 3), ("cli", "human", 2), ("cli", "unassigned", 3)]
