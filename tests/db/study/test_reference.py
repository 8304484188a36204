"""Cases without a reference answer: imported, collected and examined; never graded or scored
until their answers are imported (added, audited; never changed once a score used them)."""

import json
from pathlib import Path

import pytest
from sqlmodel import Session, select

from collection.collect import collect
from db.bundle.importer import BundleInvalid, import_bundle
from db.engine import engine_for
from db.models import Assignment, AssignmentDesign, AuditLog, Case, ExpertScore, Response
from db.raters.assignments import assign, draw_calibration
from db.raters.scoring import ChangedItem, load_item, record_submission, save_draft, submit
from db.rubrics import ensure_rubric
from db.study.cases import reference_fields
from db.study.catalog import case_rows
from db.study.exams import ensure_exam
from db.users import add_user
from errors import UserError
from grading.config import GraderSettings, store_config
from grading.grader import grade
from llm.model_request import CollectSettings
from tests.db.bundle.bundles import snapshot, write_bundle
from tests.db.interleave import against, run_threads, until_waiting
from tests.openai_server import OpenAIServer

ANSWER = {"final_diagnosis": "Left MCA stroke", "differential": ["a", "b"]}
OTHER = {**ANSWER, "final_diagnosis": "Glioma"}


def _edit_case(bundle: Path, cid: str, ground_truth: dict | None) -> None:
    path = bundle / "cases" / cid / "case.json"
    case = json.loads(path.read_text())
    case.pop("ground_truth", None)
    if ground_truth is not None:
        case["ground_truth"] = ground_truth
    path.write_text(json.dumps(case))


def _unanswered_bundle(tmp_path: Path, name: str = "b") -> Path:
    """The tiny bundle with no reference answers at all."""
    bundle = write_bundle(tmp_path / name)
    for cid in ("c1", "c2"):
        _edit_case(bundle, cid, None)
    return bundle


def _import(url: str, path: Path, **kw):
    with Session(engine_for(url), expire_on_commit=False) as s:
        return import_bundle(s, path, actor="admin", **kw)


def test_lesion_and_reasoning_are_optional_and_so_is_the_answer(database_url: str,
                                                                 tmp_path: Path) -> None:
    bundle = write_bundle(tmp_path / "b")
    _edit_case(bundle, "c1", ANSWER)
    _edit_case(bundle, "c2", None)
    summary = _import(database_url, bundle)
    assert (summary.new_cases, summary.new_tasks) == (2, 3)
    with Session(engine_for(database_url)) as s:
        truths = {c.case_id: c.ground_truth for c in s.exec(select(Case))}
        rows = {r.case_id: r.answer for r in case_rows(s)}
    assert truths == {"c1": ANSWER, "c2": None}
    assert rows == {"c1": True, "c2": False}
    assert reference_fields(truths["c1"]) == [("Final diagnosis", "Left MCA stroke"),
                                              ("Differential", "a; b")]
    assert reference_fields(None) == []


def test_without_answers_grading_and_scoring_are_refused_exams_are_not(
        database_url: str, tmp_path: Path) -> None:
    _import(database_url, _unanswered_bundle(tmp_path))
    expected = ("3 tasks have no reference answer: t1, t2, t3 (import the answers with nmb "
                "import FILE... --from neural-medbench --answers ANSWERS.json)")
    with Session(engine_for(database_url), expire_on_commit=False) as s:
        for e in range(1, 4):
            add_user(s, name=f"expert{e}", role="expert", password="pw")
        rubric = ensure_rubric(s, "neurology-v1")
        config = store_config(s, GraderSettings(base_url="http://127.0.0.1:9/v1"))
        s.commit()
        before = snapshot(database_url)
        with pytest.raises(UserError) as e:
            grade(s, config_id=config.id, api_key="sk-test")
        assert str(e.value) == expected
        s.rollback()
        with pytest.raises(UserError) as e:
            assign(s, rubric_hash=rubric.content_hash, raters=["expert1", "expert2"], overlap=2)
        assert str(e.value) == expected
        s.rollback()
        with pytest.raises(UserError, match="3 tasks have no reference answer"):
            draw_calibration(s, n=4)
        s.rollback()
        assert snapshot(database_url) == before
        exam = ensure_exam(s, name="baseline")  # humans can take the tasks
        assert exam.task_ids == ["t1", "t2", "t3"]
        # An assignment made behind the importer's back still cannot be scored.
        design = AssignmentDesign(rubric_hash=rubric.content_hash, selection="all", overlap=1,
                                  seed=0)
        s.add(design)
        s.flush()
        rater = s.exec(select(Response)).first()
        a = Assignment(design_id=design.id, rater_id=1, response_id=rater.response_id,
                       position=0)
        s.add(a)
        s.commit()
        with pytest.raises(UserError, match=f"1 task has no reference answer: {rater.task_id} "):
            load_item(s, rater_id=1, assignment_id=a.id)
        with pytest.raises(UserError, match="1 task has no reference answer"):
            submit(s, rater_id=1, assignment_id=a.id, values={})


@pytest.mark.slow
def test_tasks_without_answers_are_collected(sqlite_url: str, tmp_path: Path) -> None:
    _import(sqlite_url, _unanswered_bundle(tmp_path))
    with OpenAIServer() as server, Session(engine_for(sqlite_url)) as s:
        out = collect(s, CollectSettings(model="local-vlm-2026-01-01",
                                         base_url=server.base_url), api_key="sk-test")
    assert (out.items, out.collected, out.failed) == (3, 3, 0)


def test_answers_imported_later_are_added_and_audited(database_url: str, tmp_path: Path) -> None:
    _import(database_url, _unanswered_bundle(tmp_path, "first"))
    again = _unanswered_bundle(tmp_path, "again")
    before = snapshot(database_url)
    summary = _import(database_url, again)
    assert not summary.changed and snapshot(database_url) == before  # no answer: nothing new
    _edit_case(again, "c1", ANSWER)
    summary = _import(database_url, again)
    assert (summary.new_answers, summary.changed_answers, summary.new_cases) == (1, 0, 0)
    assert "1 reference answer added" in str(summary)
    with Session(engine_for(database_url)) as s:
        assert s.get(Case, "c1").ground_truth == ANSWER
        assert s.get(Case, "c2").ground_truth is None
        audit = [(a.action, a.actor, a.detail) for a in s.exec(select(AuditLog))
                 if a.action == "case.answer"]
    assert audit == [("case.answer", "admin", {"case": "c1", "old": None, "new": ANSWER,
                                               "bundle": "tiny"})]
    # A bundle without the answer keeps it; the same answer again changes nothing.
    before = snapshot(database_url)
    assert not _import(database_url, _unanswered_bundle(tmp_path, "third")).changed
    assert not _import(database_url, again).changed
    assert snapshot(database_url) == before


def _rater_on_c1(url: str, tmp_path: Path) -> tuple[Path, Assignment, dict]:
    """A study of the tiny bundle with c1 and c2 answered, an expert assigned every response,
    and the expert's assignment of a response to c1's task t1 with valid rubric values for it;
    the bundle is left giving c1 another answer, for the next import."""
    bundle = write_bundle(tmp_path / "b")
    _edit_case(bundle, "c1", ANSWER)
    _edit_case(bundle, "c2", ANSWER)
    _import(url, bundle)
    with Session(engine_for(url), expire_on_commit=False) as s:
        add_user(s, name="expert1", role="expert", password="pw")
        rubric = ensure_rubric(s, "neurology-v1")
        s.commit()
        assign(s, rubric_hash=rubric.content_hash, raters=["expert1"], overlap=1)
        s.commit()
        a = next(a for a in s.exec(select(Assignment)) if "-t1-" in a.response_id)
    values = {"criteria": {c.key: rubric.scale.max for c in rubric.applicable_criteria(
        "differential")}, "correct_diagnosis": True, "error_tags": [], "confidence": 4}
    _edit_case(bundle, "c1", OTHER)
    return bundle, a, values


def test_a_score_is_never_stored_against_an_answer_the_rater_did_not_see(database_url: str,
                                                                          tmp_path: Path) -> None:
    """The rater's page shows c1's answer; an import then changes it (allowed: no score used it
    yet). A draft or submit from that page is refused, nothing is stored, and the page drawn
    again (`load_item`) saves (before: the score was stored against the new answer, which the
    rater never saw)."""
    bundle, a, values = _rater_on_c1(database_url, tmp_path)
    with Session(engine_for(database_url), expire_on_commit=False) as s:
        seen = load_item(s, rater_id=a.rater_id, assignment_id=a.id)
    assert _import(database_url, bundle).changed_answers == 1
    before = snapshot(database_url)
    with Session(engine_for(database_url), expire_on_commit=False) as s:
        for write in (save_draft, submit):
            with pytest.raises(ChangedItem, match=f"item {seen.blind_code} changed since"):
                write(s, rater_id=a.rater_id, assignment_id=a.id, values=values,
                      shown=seen.shown)
            s.rollback()
        assert snapshot(database_url) == before
        now = load_item(s, rater_id=a.rater_id, assignment_id=a.id)
        assert now.shown != seen.shown and now.reference["final_diagnosis"] == "Glioma"
        assert submit(s, rater_id=a.rater_id, assignment_id=a.id, values=values,
                      shown=now.shown).revision == 1


def test_a_score_being_stored_with_an_answer_makes_its_change_wait_and_refuse(
        database_url: str, tmp_path: Path) -> None:
    """A submit with c1's answer in view, not yet committed, and an import changing that
    answer: the import waits, counts the score and refuses (before, on PostgreSQL, it counted
    no score and changed the answer under it)."""
    bundle, a, values = _rater_on_c1(database_url, tmp_path)
    with Session(engine_for(database_url), expire_on_commit=False) as s:
        seen = load_item(s, rater_id=a.rater_id, assignment_id=a.id)
        record_submission(s, assignment=s.get(Assignment, a.id), values=values, shown=seen.shown)
        refused = against(database_url, s, lambda other: import_bundle(other, bundle))
    assert isinstance(refused, BundleInvalid) and "cannot change" in str(refused.problems[0])
    with Session(engine_for(database_url)) as s:
        assert s.get(Case, "c1").ground_truth == ANSWER


def test_a_draft_saved_while_an_import_changes_its_answer_is_refused(database_url: str,
                                                                     tmp_path: Path) -> None:
    """The import has changed c1's answer and not committed; a draft from a page that showed
    the old answer waits for it, then is refused as changed (before, on PostgreSQL: saved, read
    under the old answer, and the import committed the new one under it)."""
    bundle, a, values = _rater_on_c1(database_url, tmp_path)
    with Session(engine_for(database_url), expire_on_commit=False) as s:
        seen = load_item(s, rater_id=a.rater_id, assignment_id=a.id)
    outcome: list[object] = []

    def draft() -> None:
        with Session(engine_for(database_url)) as s:
            try:
                outcome.append(save_draft(s, rater_id=a.rater_id, assignment_id=a.id,
                                          values=values, shown=seen.shown))
            except ChangedItem as e:
                outcome.append(e)

    def while_importing(_s: Session) -> None:  # the new answer written, not committed
        workers.extend(run_threads(draft))
        until_waiting(database_url, 1, lambda: len(outcome))

    workers: list = []
    assert _import(database_url, bundle, also=while_importing).changed_answers == 1
    for w in workers:
        w.join()
    assert isinstance(outcome[0], ChangedItem)
    with Session(engine_for(database_url)) as s:
        assert s.exec(select(ExpertScore)).all() == []


def test_an_answer_a_score_used_cannot_change(database_url: str, tmp_path: Path) -> None:
    bundle, a, _ = _rater_on_c1(database_url, tmp_path)
    with Session(engine_for(database_url)) as s:  # a draft: the rater has seen c1's answer
        save_draft(s, rater_id=a.rater_id, assignment_id=a.id, values={})
    before = snapshot(database_url)
    with pytest.raises(BundleInvalid) as e:
        _import(database_url, bundle)
    assert [str(p) for p in e.value.problems] == [
        "cases/c1/case.json: case c1: its reference answer was used by 1 scores (expert or "
        "grader) and cannot change"]
    assert snapshot(database_url) == before
    _edit_case(bundle, "c1", ANSWER)
    _edit_case(bundle, "c2", OTHER)  # no score used c2's answer: it may change, audited
    summary = _import(database_url, bundle)
    assert (summary.new_answers, summary.changed_answers) == (0, 1)
    with Session(engine_for(database_url)) as s:
        assert s.get(Case, "c2").ground_truth == OTHER
        [entry] = [a for a in s.exec(select(AuditLog)) if a.action == "case.answer"]
    assert entry.detail["old"] == ANSWER and entry.detail["new"] == OTHER
