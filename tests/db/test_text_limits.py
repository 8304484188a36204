"""Text limits and the model-name rule (db.text_limits): documented as enforced, and checked
where people type (exam answers, expert comments, an admin's edit of a flagged response) and
where model names enter (grader configs: file, `--model`, /calibrate; `nmb package grade`
responses). Bundles: tests/db/bundle/malformed and test_bundle.py;
`nmb collect --model`: tests/collection/test_collect.py."""

import json
import re
from pathlib import Path

import pytest
from sqlmodel import Session, func, select

import cli
from db.engine import engine_for
from db.models import Exam, ExamAttempt, ExpertScore, GraderConfig, StageAnswer, User
from db.raters.assignments import assign
from db.raters.scoring import queue, submit
from db.raters.scoring import save_draft as save_score_draft
from db.rubrics import ensure_rubric
from db.study.exams import answer_stage, attempt_for, ensure_exam, save_draft
from db.text_limits import ANSWER, BUNDLE_FIELDS, COMMENT, NAME, model_name_problem
from db.users import add_user
from errors import UserError
from grading.config import GraderSettings, load_settings
from package.grade import read_responses
from tests.factories import make_study

DOCS = Path(__file__).resolve().parents[2] / "docs" / "bundle-format.md"


def _number(cell: str) -> int | None:
    digits = re.match(r"\s*([\d,]+)", cell)
    return int(digits.group(1).replace(",", "")) if digits else None


def test_the_documented_limits_are_the_enforced_ones() -> None:
    section = DOCS.read_text().split("## Text limits", 1)[1].split("\n## ", 1)[0]
    documented = {}
    for line in section.splitlines():
        if line.startswith("| `"):
            field, chars, items = (c.strip() for c in line.strip("|").split("|"))
            documented[field.split("`")[1]] = (_number(chars), _number(items))
    assert documented == BUNDLE_FIELDS


REFUSED = {
    "gpt-4o\n| x | y |": "U+000A, a control character",
    "gpt-4o\r": "U+000D",
    "gpt\t4o": "U+0009",
    "gpt-\u202eo4": "U+202E RIGHT-TO-LEFT OVERRIDE, a format character",
    "gpt-\u2066o4": "U+2066 LEFT-TO-RIGHT ISOLATE",
    "gpt\u200b-4o": "U+200B ZERO WIDTH SPACE",
    "gpt-4o\u2028x": "U+2028 LINE SEPARATOR",
    "gpt-4o\u2029x": "U+2029 PARAGRAPH SEPARATOR",
    "gpt-4o\x85x": "U+0085, a control character",
    "gpt\x7f": "U+007F",
    "gpt\u00a04o": "U+00A0 NO-BREAK SPACE, a space character",
    "gpt\U000e0041": "U+E0041 TAG LATIN CAPITAL LETTER A",
    "  =1+1": "blanks around it",
    "gpt-4o ": "blanks around it",
    "": "is empty",
    "   ": "is empty",
    "m" * 129: "longer than 128",
}


@pytest.mark.parametrize("name", list(REFUSED))
def test_model_names_with_control_format_or_separator_characters_are_refused(name: str) -> None:
    assert REFUSED[name] in (model_name_problem(name) or "")


@pytest.mark.parametrize("name", ["gpt-4o-2024-08-06", "openai/gpt-4o", "Qwen2.5-VL-72B",
                                  "meridian med 2", "模型-7B", "m" * 128, "llama3:8b@q4"])
def test_ordinary_model_names_are_accepted(name: str) -> None:
    assert model_name_problem(name) is None
    assert model_name_problem(7) == "is not a string"


def test_grader_model_names_follow_the_rule(tmp_path: Path, sqlite_url: str, capsys) -> None:
    """From a config file (naming the file), from `--model`, and built by a page."""
    config = tmp_path / "shared.toml"
    config.write_text('model = "gpt-4o-2024-08-06\\u202e"\n')
    with pytest.raises(UserError) as info:
        load_settings(config)
    assert str(info.value) == (f"{config}: model 'gpt-4o-2024-08-06\\u202e' contains U+202E "
                               "RIGHT-TO-LEFT OVERRIDE, a format character")
    config.write_text("model = 4\n")
    with pytest.raises(UserError, match="model 4 is not a string"):
        load_settings(config)
    with pytest.raises(UserError, match=r"grader model 'gpt\\n4o' contains U\+000A"):
        load_settings(None, model="gpt\n4o")
    with pytest.raises(UserError, match="grader model ' gpt-4o' has blanks around it"):
        GraderSettings(model=" gpt-4o")
    assert cli.main(["grade", "--model", "gpt-4o\u2028", "--base-url",
                     "http://127.0.0.1:9/v1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'gpt-4o\\u2028'" in err and "LINE SEPARATOR" in err
    with Session(engine_for(sqlite_url)) as s:
        assert s.exec(select(func.count()).select_from(GraderConfig)).one() == 0


def test_package_grade_refuses_a_bad_model_name_in_its_responses(tmp_path: Path) -> None:
    path = tmp_path / "responses.jsonl"
    rows = [{"response_id": "r1", "task_id": "t1", "text": "x", "model": "model-a"},
            {"response_id": "r2", "task_id": "t1", "text": "x", "model": "model-\u202eb"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(UserError) as info:
        read_responses(path)
    assert str(info.value) == (f"{path} line 2: model 'model-\\u202eb' contains U+202E "
                               "RIGHT-TO-LEFT OVERRIDE, a format character")


def test_exam_answers_over_the_limit_are_refused(database_url: str) -> None:
    with Session(engine_for(database_url), expire_on_commit=False) as s:
        make_study(s, n_tasks=1)
        student = add_user(s, name="stu", role="student", password="pw")
        with pytest.raises(UserError, match=f"the exam name is 257 characters, more than the "
                                            f"limit of {NAME}"):
            ensure_exam(s, name="E" * (NAME + 1))
        exam = ensure_exam(s, name="baseline", task_ids=["task0"])
        s.commit()
        attempt = attempt_for(s, exam_id=exam.id, user_id=student.id)
        for write in (lambda t: answer_stage(s, attempt=attempt, task_id="task0", text=t),
                      lambda t: save_draft(s, attempt=attempt, task_id="task0", text=t)):
            with pytest.raises(UserError, match="the answer is 200,001 characters, more than "
                                                "the limit of 200,000"):
                write("a" * (ANSWER + 1))
        s.rollback()
        assert s.exec(select(StageAnswer)).all() == []
        assert not s.get(ExamAttempt, attempt.id).drafts
        assert s.exec(select(func.count()).select_from(Exam)).one() == 1
        save_draft(s, attempt=attempt, task_id="task0", text="d" * ANSWER)
        answer_stage(s, attempt=attempt, task_id="task0", text="a" * ANSWER)  # at the limit
        assert [len(a.text) for a in s.exec(select(StageAnswer))] == [ANSWER]


def test_expert_comments_over_the_limit_are_refused(database_url: str) -> None:
    with Session(engine_for(database_url), expire_on_commit=False) as s:
        make_study(s, n_tasks=1)
        rubric = ensure_rubric(s, "neurology-v1")
        assign(s, rubric_hash=rubric.content_hash, raters=["expert1"], overlap=1, seed=0)
        s.commit()
        rater = s.exec(select(User).where(User.name == "expert1")).one()
        first = queue(s, rater_id=rater.id)[0].assignment_id
        values = {"criteria": {c.key: rubric.scale.max
                               for c in rubric.applicable_criteria("differential")},
                  "correct_diagnosis": True, "error_tags": [], "confidence": 4}
        for write in (save_score_draft, submit):
            with pytest.raises(UserError, match="the comment is 10,001 characters, more than "
                                                "the limit of 10,000"):
                write(s, rater_id=rater.id, assignment_id=first,
                      values={**values, "comment": "c" * (COMMENT + 1)})
        s.rollback()
        assert s.exec(select(ExpertScore)).all() == []
        score = submit(s, rater_id=rater.id, assignment_id=first,
                       values={**values, "comment": "c" * COMMENT})
        assert len(score.comment) == COMMENT


def test_an_admins_edit_of_a_flagged_response_over_the_limit_is_refused(sqlite_url: str,
                                                                         tmp_path: Path) -> None:
    from db.bundle.importer import import_bundle
    from db.models import Response, ResponseFlag
    from db.raters.response_flags import review
    from tests.db.bundle.bundles import responses, write_bundle

    rows = responses()
    rows[0]["text"] = "As GPT-4o, I think this is a stroke."
    with Session(engine_for(sqlite_url)) as s:
        import_bundle(s, write_bundle(tmp_path / "b", with_responses=rows))
        rid = rows[0]["response_id"]
        with pytest.raises(UserError, match="the answer is 200,001 characters, more than the "
                                            "limit of 200,000"):
            review(s, response_id=rid, texts=["a" * (ANSWER + 1)], actor="admin")
        s.rollback()
        assert s.get(ResponseFlag, rid).reviewed_at is None
        assert s.get(Response, rid).text.startswith("As [name removed]")


def test_the_calibrate_page_refuses_a_grader_model_name_with_one_error(sqlite_url: str) -> None:
    from tests.apptest import make_user, page
    from ui.plain_text import escape_markdown

    at = page("pages/calibrate.py", make_user("admin1", "admin"), timeout=60).run()
    next(t for t in at.text_input if t.label.startswith("Model")).input("gpt-4o\u202e")
    next(b for b in at.button if b.label == "Save config").click().run()
    assert not at.exception, at.exception
    assert [e.value for e in at.error] == [escape_markdown(  # quoted as literal text
        "grader model 'gpt-4o\\u202e' contains U+202E RIGHT-TO-LEFT OVERRIDE, a format "
        "character (a model name is 1-128 printable characters, no surrounding blanks)")]
    with Session(engine_for(sqlite_url)) as s:
        assert s.exec(select(func.count()).select_from(GraderConfig)).one() == 0


def test_text_no_database_can_store_is_stored_as_the_replacement_character(
        database_url: str) -> None:
    """A NUL (PostgreSQL text refuses it) or an unpaired surrogate (not UTF-8), from a model's
    answer or a typed text, becomes U+FFFD on the way to either database, by the ORM or a Core
    statement, one row or many, instead of stopping the write (on PostgreSQL only)."""
    from sqlalchemy import insert

    from db.engine import upgrade
    from db.models import Setting

    upgrade()
    with Session(engine_for(database_url)) as s:
        s.add(Setting(key="orm", value="a\x00b\ud800c"))
        s.commit()
        s.exec(insert(Setting), params=[{"key": "many1", "value": "\x00"},
                                        {"key": "many2", "value": "ok"}])
        s.exec(insert(Setting).values(key="core\x00", value="\udfff"))
        s.commit()
        stored = dict(s.exec(select(Setting.key, Setting.value)).all())
    assert {k: v for k, v in stored.items() if k != "demo"} == {
        "orm": "a\ufffdb\ufffdc", "many1": "\ufffd", "many2": "ok", "core\ufffd": "\ufffd"}
