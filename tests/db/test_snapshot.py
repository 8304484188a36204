"""Commands and pages that only read see one state of the study, on PostgreSQL too, where each
statement of a READ COMMITTED transaction sees what committed before it."""

import json

import pytest
from sqlalchemy import event
from sqlalchemy.exc import SQLAlchemyError
from sqlmodel import Session, select

from cli import main
from db.engine import engine_for, snapshot
from db.models import Case, Response
from tests.factories import grade_all, make_study

POSTGRES_ONLY = pytest.mark.parametrize(
    "database_url", [pytest.param("postgres", marks=pytest.mark.postgres)], indirect=True)


def _graded(url: str) -> int:
    with Session(engine_for(url)) as s:
        make_study(s, n_tasks=6, samples=1, experts=0)
        config_id = grade_all(s)
        s.commit()
        return config_id


def _late_model(url: str) -> None:
    """A grader run's commit: a new model's response to every task, graded."""
    with Session(engine_for(url)) as s:
        for t in range(6):
            s.add(Response(response_id=f"late-{t}", task_id=f"task{t}", source="model",
                           model="late-model", sample=0, text="Late.", blind_code=f"R-LATE{t}"))
        s.flush()
        grade_all(s, lambda r: False, overall=lambda correct: 0.1)
        s.commit()


@POSTGRES_ONLY
def test_a_snapshot_reads_one_state_and_writes_nothing(database_url: str) -> None:
    _graded(database_url)
    with snapshot() as s:
        before = len(s.exec(select(Case)).all())
        with Session(engine_for(database_url)) as other:
            other.add(Case(case_id="late", title="Late (synthetic)", ehr="x", scores={},
                           ground_truth=None, bundle="test"))
            other.commit()
        assert len(s.exec(select(Case)).all()) == before
    with snapshot() as s:
        assert len(s.exec(select(Case)).all()) == before + 1  # a new snapshot sees it
        s.add(Case(case_id="never", title="x", ehr="x", scores={}, ground_truth=None,
                   bundle="test"))
        with pytest.raises(SQLAlchemyError, match="read-only transaction"):
            s.flush()


@POSTGRES_ONLY
def test_results_read_while_a_grader_run_commits_are_of_one_state(database_url: str,
                                                                  capsys) -> None:
    """A grader run commits right after `nmb results` read the responses and their grades:
    every table is of the state before it (before: later reads saw the new model's responses,
    mixed into some tables and not others)."""
    config_id = _graded(database_url)
    assert main(["results", "--config", str(config_id), "--format", "json"]) == 0
    alone = json.loads(capsys.readouterr().out)
    engine, fired = engine_for(database_url), []

    def commit_once(conn, cursor, statement, *args) -> None:
        if not fired and "FROM response" in statement:
            fired.append(statement)
            _late_model(database_url)

    event.listen(engine, "after_cursor_execute", commit_once)
    try:
        assert main(["results", "--config", str(config_id), "--format", "json"]) == 0
    finally:
        event.remove(engine, "after_cursor_execute", commit_once)
    assert fired
    assert json.loads(capsys.readouterr().out) == alone
