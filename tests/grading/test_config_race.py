"""Two admins (the /calibrate page, `nmb grade`, `nmb assign`) storing the same new grader
config or rubric at once (threads, SQLite and PostgreSQL): both get the one row, never an
`IntegrityError` traceback on its content hash. Both are held at their insert by a table lock
(tests/db/interleave.py), after looking the row up."""

import pytest
from sqlmodel import Session, select

from db.engine import engine_for
from db.models import GraderConfig, Rubric
from db.rubrics import ensure_rubric
from grading.config import GraderSettings, store_config
from rubric import DEFAULT_RUBRIC
from tests.db.interleave import released_together


@pytest.mark.parametrize("table", ["rubric", "graderconfig"])
def test_one_new_config_stored_twice_at_once_is_one_row(database_url: str, table: str) -> None:
    """`rubric`: neither is stored yet, both wait to add the rubric; `graderconfig`: the rubric
    is stored, both wait to add the config (each failed before on PostgreSQL)."""
    if table == "graderconfig":
        with Session(engine_for(database_url)) as s:
            ensure_rubric(s, DEFAULT_RUBRIC)  # the config's
            s.commit()
    settings = GraderSettings(model="grader-x", base_url="http://127.0.0.1:9/v1")
    outcome = released_together(database_url, f"LOCK TABLE {table} IN EXCLUSIVE MODE",
                                lambda s: store_config(s, settings).id,
                                lambda s: store_config(s, settings).id)
    assert all(isinstance(o, int) for o in outcome) and len(set(outcome)) == 1, outcome
    with Session(engine_for(database_url)) as s:
        assert len(s.exec(select(GraderConfig)).all()) == 1
        assert len(s.exec(select(Rubric)).all()) == 1
