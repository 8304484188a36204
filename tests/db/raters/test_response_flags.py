"""Blinding by content: a response that names its model is flagged at import, redacted, held
from assignment until an admin reviews it, and reaches the rater's page and the grader's
request without the name; the original stays for the audit."""

from pathlib import Path

import pytest
from sqlmodel import Session, select

from db.bundle.importer import import_bundle
from db.engine import engine_for
from db.models import (
    Assignment,
    AuditLog,
    Case,
    GraderConfig,
    GraderRun,
    GraderScore,
    Response,
    ResponseFlag,
    Task,
)
from db.raters.assignments import assign
from db.raters.model_names import NameFinder
from db.raters.response_flags import pending, review
from db.raters.scoring import load_item
from db.rubrics import ensure_rubric
from db.users import add_user
from errors import UserError
from llm.grader_request import user_message
from tests.db.bundle.bundles import MODELS, responses, write_bundle

NAMING = "As GPT-4o, a model developed by OpenAI, I think this is a left MCA stroke."
TURN = "Claude syndrome is unlikely; as model-a I now favour multiple sclerosis."


def _bundle(tmp_path: Path) -> Path:
    rows = responses()
    by_id = {r["response_id"]: r for r in rows}
    by_id["model-a-t1-0"]["text"] = NAMING
    by_id["model-a-t3-0"]["turns"] = ["turn 0", TURN]  # the study's own name, in a turn
    return write_bundle(tmp_path / "b", with_responses=rows)


def _assign(s: Session, raters: list[str]) -> set[str]:
    rubric = ensure_rubric(s, "neurology-v1")
    assign(s, rubric_hash=rubric.content_hash, raters=raters, overlap=1, seed=0)
    s.commit()
    return set(s.exec(select(Assignment.response_id)))


@pytest.mark.slow
def test_a_response_naming_its_model_is_held_then_reaches_rater_and_grader_redacted(
        database_url: str, tmp_path: Path) -> None:
    bundle = _bundle(tmp_path)
    with Session(engine_for(database_url), expire_on_commit=False) as s:
        dry = import_bundle(s, bundle, dry_run=True)
        assert dry.flagged_responses == 2 and not s.exec(select(ResponseFlag)).all()
        summary = import_bundle(s, bundle, actor="admin")
        assert summary.flagged_responses == 2
        assert "2 responses name a model: redacted and held for review" in str(summary)
        flags = {f.response_id: f for f in pending(s)}
        assert {k: f.names for k, f in flags.items()} == {
            "model-a-t1-0": ["GPT-4o", "OpenAI"], "model-a-t3-0": ["model-a"]}
        assert s.get(Response, "model-a-t1-0").text == (
            "As [name removed], a model developed by [name removed], I think this is a left "
            "MCA stroke.")
        assert s.get(Response, "model-a-t3-0").turns[1] == (
            "Claude syndrome is unlikely; as [name removed] I now favour multiple sclerosis.")
        assert import_bundle(s, bundle).new_responses == 0  # re-import: compared as imported

        for name in ("e1", "e2"):
            add_user(s, name=name, role="expert", password="pw")
        assigned = _assign(s, ["e1", "e2"])
        assert len(assigned) == 10 and not assigned & set(flags)  # held until reviewed

        review(s, response_id="model-a-t1-0", texts=flags["model-a-t1-0"].shown, actor="admin")
        edited = [*flags["model-a-t3-0"].shown]
        edited[2] = "Claude syndrome is unlikely; I now favour multiple sclerosis."
        review(s, response_id="model-a-t3-0", texts=edited, actor="admin")
        s.commit()
        assert not pending(s)
        with pytest.raises(UserError, match="not waiting for review"):
            review(s, response_id="model-a-t3-0", texts=edited)
        assert _assign(s, ["e1", "e2"]) == assigned | set(flags)  # released

        finder = NameFinder(MODELS)
        for rid in flags:
            a = s.exec(select(Assignment).where(Assignment.response_id == rid)).one()
            item = load_item(s, rater_id=a.rater_id, assignment_id=a.id)  # the scoring page's
            response = s.get(Response, rid)
            task = s.get(Task, response.task_id)
            request = user_message(task, s.get(Case, task.case_id), response)  # the grader's
            for seen in (item.text, *item.turns, request):
                assert finder.find(seen) == [], (rid, seen)
                assert "GPT-4o" not in seen and "OpenAI" not in seen and "model-a" not in seen
        kept = s.get(ResponseFlag, "model-a-t1-0")
        assert kept.original_text == NAMING and kept.reviewed_by == "admin"
        audit = s.exec(select(AuditLog).where(AuditLog.action == "response.review")).all()
        assert [(a.detail["response"], a.detail["changed"]) for a in audit] == [
            ("model-a-t1-0", False), ("model-a-t3-0", True)]


def test_restoring_a_false_alarm_drops_the_grades_of_the_redacted_text(
        database_url: str, tmp_path: Path) -> None:
    with Session(engine_for(database_url), expire_on_commit=False) as s:
        import_bundle(s, _bundle(tmp_path))
        rubric = ensure_rubric(s, "neurology-v1")
        config = GraderConfig(config_hash="h", name="g", model="m", prompt_version="v1",
                              rubric_hash=rubric.content_hash)
        s.add(config)
        s.flush()
        run = GraderRun(config_id=config.id, items="all")
        s.add(run)
        s.flush()
        for rid in ("model-a-t1-0", "model-b-t1-0"):
            s.add(GraderScore(config_id=config.id, response_id=rid, run_id=run.id,
                              request_hash=rid, criteria={}, correct_diagnosis=True,
                              error_tags=[], overall=0.5))
        s.commit()
        flag = next(f for f in pending(s) if f.response_id == "model-a-t1-0")
        with pytest.raises(UserError, match="has 1 texts, got 2"):
            review(s, response_id=flag.response_id, texts=[NAMING, "extra"])
        review(s, response_id=flag.response_id, texts=flag.original, actor="admin")
        s.commit()
        assert s.get(Response, "model-a-t1-0").text == NAMING
        graded = set(s.exec(select(GraderScore.response_id)))
        assert graded == {"model-b-t1-0"}  # regraded at the next run, on the text it now has
        entry = s.exec(select(AuditLog).where(AuditLog.action == "response.review")).one()
        assert entry.detail["kept_original"] and entry.detail["grader_scores_dropped"] == 1


def test_an_exam_answer_naming_a_model_is_redacted_and_held_like_a_models(
        database_url: str) -> None:
    """Only model answers carried "[name removed]" (an exam's answers were not checked), so the
    mark told a rater the source; a human answer naming a model is now redacted and held too."""
    from db.raters.assignments import plan_assignment
    from db.study.exams import answer_stage, attempt_for, ensure_exam, finish
    from tests.factories import make_study

    with Session(engine_for(database_url), expire_on_commit=False) as s:
        make_study(s, n_tasks=2)
        student = add_user(s, name="stu", role="student", password="pw")
        exam = ensure_exam(s, name="baseline")
        s.commit()
        attempt = attempt_for(s, exam_id=exam.id, user_id=student.id)
        answer_stage(s, attempt=attempt, task_id="task0", text="ChatGPT would say MS; I agree.")
        answer_stage(s, attempt=attempt, task_id="task1", text="Left MCA stroke.")
        finish(s, attempt=attempt)
        named, plain = (f"human-{attempt.id}-task{k}" for k in (0, 1))
        assert s.get(Response, named).text == "[name removed] would say MS; I agree."
        assert s.get(Response, plain).text == "Left MCA stroke."
        assert {f.response_id: f.names for f in pending(s)} == {named: ["ChatGPT"]}
        assert s.get(ResponseFlag, named).original_text == "ChatGPT would say MS; I agree."
        items = plan_assignment(s, raters=["expert1"], overlap=1).items
        assert plain in items and named not in items  # held until an admin reviews it


def test_two_admins_reviewing_one_response_at_once(database_url: str, tmp_path: Path) -> None:
    """Admin A's review (an edit) is not committed yet when admin B reviews the same response
    (keeps the redaction): B's is refused in one line once A's is in (PostgreSQL: B's
    overwrote A's edit, and both were audited as the review)."""
    from tests.db.interleave import against

    with Session(engine_for(database_url), expire_on_commit=False) as s:
        import_bundle(s, _bundle(tmp_path))
        flag = next(f for f in pending(s) if f.response_id == "model-a-t1-0")
    first = Session(engine_for(database_url))
    review(first, response_id=flag.response_id, texts=["Edited by A."], actor="a")

    def second(s: Session) -> str:
        review(s, response_id=flag.response_id, texts=flag.shown, actor="b")
        s.commit()
        return "reviewed"

    outcome = against(database_url, first, second)
    assert isinstance(outcome, UserError)
    assert str(outcome) == "response 'model-a-t1-0' is not waiting for review"
    with Session(engine_for(database_url)) as s:
        assert s.get(Response, "model-a-t1-0").text == "Edited by A."
        assert len(s.exec(select(AuditLog).where(AuditLog.action == "response.review")).all()) == 1


def test_a_released_response_joins_the_design_it_belongs_to_or_the_admin_is_told(
        database_url: str) -> None:
    """A response held for review when its model's design was made joins that design (the
    most specific one that holds it) once reviewed, audited; when the design cannot take it
    (too few active raters), nothing is written and the line says to run assign."""
    from db.models import User
    from db.raters.assignments import join_design
    from tests.factories import make_study

    with Session(engine_for(database_url), expire_on_commit=False) as s:
        make_study(s, n_tasks=2, experts=3)  # model-alpha and model-beta answer task0, task1
        for rid, model in (("held-alpha", "model-alpha"), ("held-gamma", "model-gamma")):
            s.add(Response(response_id=rid, task_id="task0", source="model", model=model,
                           sample=7, text="As [name removed], left MCA.", blind_code=f"R-{rid}"))
            s.flush()
            s.add(ResponseFlag(response_id=rid, names=["GPT"], original_text="As GPT, left MCA."))
        rubric = ensure_rubric(s, "neurology-v1").content_hash
        alpha = assign(s, rubric_hash=rubric, raters=["expert1", "expert2", "expert3"],
                       overlap=2, selection="model:model-alpha")
        rest = assign(s, rubric_hash=rubric, raters=["expert1", "expert2"], overlap=2,
                      selection="all")
        s.commit()
        assert (alpha.selection, alpha.model, rest.selection) == ("model", "model-alpha", "all")
        assert not s.exec(select(Assignment).where(Assignment.response_id.like("held-%"))).all()

        review(s, response_id="held-alpha", texts=["As [name removed], left MCA."], actor="root")
        line = join_design(s, response_id="held-alpha", actor="root")
        s.commit()
        rows = s.exec(select(Assignment).where(Assignment.response_id == "held-alpha")).all()
        assert {r.design_id for r in rows} == {alpha.id} and len(rows) == 2
        names = sorted(s.get(User, r.rater_id).name for r in rows)
        assert line == f"it joined design {alpha.id}: the queues of {', '.join(names)}"
        [entry] = s.exec(select(AuditLog).where(AuditLog.action == "assign.release")).all()
        assert (entry.actor, entry.detail) == ("root", {"design": alpha.id,
                                                        "response": "held-alpha",
                                                        "raters": names})

        s.exec(select(User).where(User.name == "expert2")).one().disabled = True
        review(s, response_id="held-gamma", texts=["As [name removed], left MCA."], actor="root")
        line = join_design(s, response_id="held-gamma", actor="root")
        s.commit()
        assert line == ("it waits for `nmb assign` (or /admin → Assignments): design "
                        f"{rest.id} has 1 active expert for its overlap of 2")
        assert not s.exec(select(Assignment).where(Assignment.response_id == "held-gamma")).all()
        assert len(s.exec(select(AuditLog).where(AuditLog.action == "assign.release")).all()) == 1
