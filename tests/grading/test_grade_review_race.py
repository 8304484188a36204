"""A grader run in flight while what it grades changes (real threads, the real `openai` client
against the local OpenAI-compatible server, SQLite and PostgreSQL): an admin changes a flagged
response's text on review, or an import gives its case another reference answer. A grade of
the words or the answer replaced is never kept."""

import json
from pathlib import Path

import pytest
from sqlmodel import Session, select

from db.bundle.importer import import_bundle
from db.engine import engine_for
from db.models import GraderFailure, GraderScore, Response
from db.raters.response_flags import pending, review
from db.rubrics import rubric_by_hash
from grading.config import GraderSettings, get_config, store_config
from grading.grader import grade, prepare
from tests.db.bundle.bundles import responses, write_bundle
from tests.db.interleave import run_threads, until_waiting
from tests.openai_server import OpenAIServer

pytestmark = pytest.mark.slow  # starts processes or takes seconds: make test only

FLAGGED = "model-a-t1-0"
NAMING = "As GPT-4o, a model developed by OpenAI, I think this is a left MCA stroke."


def test_a_grade_of_the_text_a_review_replaced_is_not_kept(database_url: str,
                                                           tmp_path: Path) -> None:
    """The review has changed the text (not committed yet) when the run reads it; the run's
    grade of the old words comes back after the review's commit dropped the grades: before,
    it was stored and kept the response from being graded again."""
    rows = responses()
    next(r for r in rows if r["response_id"] == FLAGGED)["text"] = NAMING
    with OpenAIServer() as server:
        with Session(engine_for(database_url), expire_on_commit=False) as s:
            import_bundle(s, write_bundle(tmp_path / "b", with_responses=rows))
            config = store_config(s, GraderSettings(base_url=server.base_url))
            s.commit()
        admin = Session(engine_for(database_url), expire_on_commit=False)
        flag = next(f for f in pending(admin) if f.response_id == FLAGGED)
        review(admin, response_id=FLAGGED, texts=flag.original, actor="admin")  # not committed
        outcome: list[object] = []

        def run() -> None:
            with Session(engine_for(database_url), expire_on_commit=False) as s:
                outcome.append(grade(s, config_id=config.id, items="all", api_key="sk-test",
                                     trust_base_url=server.base_url))

        (worker,) = run_threads(run)
        until_waiting(database_url, 1, lambda: len(outcome))  # PostgreSQL: the run finished
        admin.commit()  # or waits for the review's lock
        admin.close()
        worker.join()
        with Session(engine_for(database_url)) as s:
            response = s.get(Response, FLAGGED)
            config = get_config(s, config.id)
            now = prepare(s, config, rubric_by_hash(s, config.rubric_hash), response).request_hash
            kept = s.exec(select(GraderScore.request_hash)
                          .where(GraderScore.response_id == FLAGGED)).all()
            assert response.text == NAMING and kept in ([], [now]), kept
            if not kept:  # told, and graded at the next run
                failure = s.exec(select(GraderFailure)
                                 .where(GraderFailure.response_id == FLAGGED)).one()
                assert "changed" in failure.reason
                assert grade(s, config_id=config.id, api_key="sk-test",
                             trust_base_url=config.base_url).graded == 1
                assert s.exec(select(GraderScore.request_hash)
                              .where(GraderScore.response_id == FLAGGED)).all() == [now]


def test_a_grade_made_with_a_reference_answer_an_import_changes_is_not_kept(
        database_url: str, tmp_path: Path) -> None:
    """An import gives case c1 another reference answer (allowed: no score used it yet) and,
    before it commits, a grader run reads the old one: its grades made with the old answer
    are not stored once the new answer is in (before: stored, so the answer had changed under
    grades that used it)."""
    first = write_bundle(tmp_path / "a")
    second = write_bundle(tmp_path / "b")
    case_file = second / "cases" / "c1" / "case.json"
    case = json.loads(case_file.read_text())
    case["ground_truth"]["final_diagnosis"] = "Another diagnosis"
    case_file.write_text(json.dumps(case))
    with OpenAIServer() as server:
        with Session(engine_for(database_url), expire_on_commit=False) as s:
            import_bundle(s, first)
            config = store_config(s, GraderSettings(base_url=server.base_url))
            s.commit()
        outcome: list[object] = []

        def run() -> None:
            with Session(engine_for(database_url), expire_on_commit=False) as s:
                outcome.append(grade(s, config_id=config.id, items="all", api_key="sk-test",
                                     trust_base_url=server.base_url))

        def while_importing(_s: Session) -> None:  # the answer is changed, not committed
            workers.extend(run_threads(run))
            until_waiting(database_url, 1, lambda: len(outcome))

        workers: list = []
        with Session(engine_for(database_url)) as s:
            assert import_bundle(s, second, also=while_importing).changed_answers == 1
        for w in workers:
            w.join()
        with Session(engine_for(database_url)) as s:
            config = get_config(s, config.id)
            rubric = rubric_by_hash(s, config.rubric_hash)
            now = {r.response_id: prepare(s, config, rubric, r).request_hash
                   for r in s.exec(select(Response))}
            kept = dict(s.exec(select(GraderScore.response_id, GraderScore.request_hash)).all())
            assert all(now[rid] == h for rid, h in kept.items()), "a grade of the old answer"
            grade(s, config_id=config.id, api_key="sk-test", trust_base_url=config.base_url)
            kept = dict(s.exec(select(GraderScore.response_id, GraderScore.request_hash)).all())
            assert kept == now  # every response graded, with the answer it has
