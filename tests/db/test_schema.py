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
