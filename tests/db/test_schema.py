"""Tables, migrations and the audit log on SQLite and PostgreSQL."""

import pytest
from alembic import command
from alembic.script import ScriptDirectory
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, select

from db.engine import HEAD_REVISION, alembic_config, engine_for
from db.models import AuditLog, Case, Task
from db.status import counts


def test_models_match_migrations(database_url: str) -> None:
    command.check(alembic_config(database_url))  # raises when the models drift
    head = ScriptDirectory.from_config(alembic_config(database_url)).get_current_head()
    assert head == HEAD_REVISION


def test_empty_study_counts(database_url: str) -> None:
    with Session(engine_for(database_url)) as s:
        got = counts(s)
    assert set(got) >= {"cases", "series", "tasks", "responses", "users", "expert_scores",
                        "grader_scores", "exam_attempts"}
    assert set(got.values()) == {0}


def test_audit_log_is_append_only(database_url: str) -> None:
    eng = engine_for(database_url)
    with Session(eng) as s:
        s.add(AuditLog(actor="a", action="test", detail={}))
        s.commit()
    for stmt in ("UPDATE auditlog SET action = 'x'", "DELETE FROM auditlog"):
        with pytest.raises(Exception, match="append-only"), eng.begin() as conn:
            conn.execute(text(stmt))
    with Session(eng) as s:
        assert [a.action for a in s.exec(select(AuditLog))] == ["test"]


def test_constraints_refuse_bad_rows(database_url: str) -> None:
    eng = engine_for(database_url)
    with Session(eng) as s:
        s.add(Case(case_id="c1", title="t", ehr="", scores={}, ground_truth={}, bundle="b"))
        s.commit()
        s.add(Task(task_id="t1", case_id="c1", family="surgery", level=1, prompt="p", stages=[]))
        with pytest.raises(IntegrityError):
            s.commit()
        s.rollback()
        s.add(Task(task_id="t2", case_id="missing", family="lesion", level=1, prompt="p", stages=[]))
        with pytest.raises(IntegrityError):
            s.commit()


#: (table, column, a word outside its vocabulary): each refused by a check constraint.
WRONG_WORDS = [("assignmentdesign", "selection", "some"), ("expertscore", "status", "done"),
               ("graderrun", "items", "some"), ("graderrun", "status", "failed"),
               ("collectionrun", "status", "done"), ("calibrationitem", "part", "test"),
               ("calibrationreport", "part", "test")]


def _rows_of_every_vocabulary(s: Session) -> dict[str, int]:
    """One row of each table of WRONG_WORDS, with a child row of each run; {table: rows}."""
    from db.models import (
        Assignment,
        CalibrationItem,
        CalibrationReport,
        CollectionFailure,
        CollectionRun,
        ExpertScore,
        GraderFailure,
        GraderRun,
        User,
    )
    from db.rubrics import ensure_rubric
    from grading.config import GraderSettings, store_config
    from tests.factories import make_study

    rid = make_study(s, n_tasks=1, experts=1)[0]
    rubric = ensure_rubric(s, "neurology-v1").content_hash
    s.execute(text("INSERT INTO assignmentdesign (rubric_hash, selection, overlap, seed, "
                   "created_at) VALUES (:rubric, 'all', 1, 0, CURRENT_TIMESTAMP)"),
              {"rubric": rubric})
    design_id = s.execute(text("SELECT id FROM assignmentdesign")).scalar_one()
    config = store_config(s, GraderSettings(base_url="http://127.0.0.1:9/v1"))
    s.add_all([run := GraderRun(config_id=config.id, items="all"),
               collection := CollectionRun(model="m", settings={}, template_version="v",
                                           template_hash="h")])
    s.flush()
    expert = s.exec(select(User)).first()
    s.add(assignment := Assignment(design_id=design_id, rater_id=expert.id, response_id=rid,
                                   position=0))
    s.flush()
    s.add_all([ExpertScore(assignment_id=assignment.id, rubric_hash=rubric, criteria={},
                           error_tags=[]),
               GraderFailure(config_id=config.id, response_id=rid, run_id=run.id, reason="x"),
               CollectionFailure(run_id=collection.id, model="m", task_id="task0", sample=0,
                                 reason="x"),
               CalibrationItem(response_id=rid, part="dev", seed=0),
               CalibrationReport(config_id=config.id, run_id=run.id, part="dev", thresholds={},
                                 results={})])
    s.commit()
    tables = {t for t, _, _ in WRONG_WORDS} | {"graderfailure", "collectionfailure"}
    return {t: s.exec(text(f"SELECT count(*) FROM {t}")).one()[0] for t in sorted(tables)}


@pytest.mark.slow
def test_closed_vocabularies_are_checked_and_the_migration_keeps_every_row(
        database_url: str) -> None:
    """Rows written before migration 0013 (runs with children) are all kept by it, foreign
    keys are on again afterwards (SQLite), and a word outside a column's vocabulary is
    refused."""
    from db.engine import alembic_config, upgrade

    eng = engine_for(database_url)
    with Session(eng) as s:  # written at the head revision, then taken down to 0012 with them
        before = _rows_of_every_vocabulary(s)
    command.downgrade(alembic_config(database_url), "0012")  # the revision before 0013
    upgrade(database_url)
    with Session(eng) as s:
        after = {t: s.exec(text(f"SELECT count(*) FROM {t}")).one()[0] for t in before}
    assert after == before and set(after.values()) == {1}
    if eng.dialect.name == "sqlite":
        with eng.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
    for table, column, word in WRONG_WORDS:
        with pytest.raises(IntegrityError, match="(?i)check"), eng.begin() as conn:
            conn.execute(text(f"UPDATE {table} SET {column} = :word"), {"word": word})


def test_a_response_source_and_a_picture_plane_are_checked_and_migration_0014_keeps_rows(
        database_url: str) -> None:
    """Responses (a model's, a student's) and series (a volume without a plane, a picture with
    one) written before migration 0014 are kept by it; a source or plane outside its
    vocabulary is refused afterwards."""
    from db.engine import alembic_config, upgrade
    from db.models import Response, Series, User
    from tests.factories import add_series, make_study

    eng = engine_for(database_url)
    with Session(eng) as s:  # written at the head revision, then taken down to 0013 with them
        rid = make_study(s, n_tasks=1, experts=0)[0]
        student = User(name="stu", role="student", password_hash="x")
        s.add(student)
        s.flush()
        s.add(Response(response_id="human-1", task_id="task0", source="student",
                       user_id=student.id, text="An answer.", blind_code="R-HUMAN"))
        add_series(s, ["case0"])
        s.add(Series(case_id="case0", position=1, sequence="KEY", path="images/x.png",
                     sha256="0" * 64, shape=[8, 8], voxel_sizes=[], picture=True, plane="axial"))
        s.commit()
        before = {t: s.exec(text(f"SELECT count(*) FROM {t}")).one()[0]
                  for t in ("response", "series")}
    eng.dispose()
    command.downgrade(alembic_config(database_url), "0013")  # the revision before 0014
    upgrade(database_url)
    with Session(eng) as s:
        assert s.get(Response, rid).source == "model"
        assert s.get(Response, "human-1").source == "student"
        assert sorted(x.plane or "" for x in s.exec(select(Series))) == ["", "axial"]
        assert {t: s.exec(text(f"SELECT count(*) FROM {t}")).one()[0] for t in before} == before
    for table, column, word in (("response", "source", "human"), ("series", "plane", "oblique")):
        with pytest.raises(IntegrityError, match="(?i)check"), eng.begin() as conn:
            conn.execute(text(f"UPDATE {table} SET {column} = :word"), {"word": word})
