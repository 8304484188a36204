"""The case browser's lists (cases, tasks, responses with their authors and review holds), its
search, the demo share behind the banner, and the safe name of an uploaded bundle."""

from sqlmodel import Session

from db.bundle.upload_name import safe_upload_name
from db.engine import engine_for
from db.models import Case, ResponseFlag, Setting, utcnow
from db.study.cases import DEMO_BUNDLE, DemoShare, count_demo_cases
from db.study.catalog import (
    CaseRow,
    ResponseDetail,
    case_rows,
    excerpt,
    response_detail,
    response_rows,
    search,
    task_rows,
)
from db.study.exams import answer_stage, attempt_for, ensure_exam, finish
from db.users import add_user
from tests.factories import MODELS, make_study


def test_lists_hold_every_case_task_and_response_with_its_author(database_url: str) -> None:
    with Session(engine_for(database_url), expire_on_commit=False) as s:
        make_study(s, n_tasks=3)  # case0..2, one task each, one response per model
        student = add_user(s, name="stu", role="student", password="pw")
        exam = ensure_exam(s, name="baseline", task_ids=["task1"])
        s.commit()
        attempt = attempt_for(s, exam_id=exam.id, user_id=student.id)
        answer_stage(s, attempt=attempt, task_id="task1", text="Left  MCA\n stroke.")
        finish(s, attempt=attempt)
        s.add(ResponseFlag(response_id="r0-model-alpha-0", names=["alpha"],
                           original_text="As alpha..."))
        s.add(ResponseFlag(response_id="r2-model-beta-0", names=["beta"], original_text="x",
                           reviewed_by="root", reviewed_at=utcnow()))  # reviewed: no longer held
        s.commit()
        cases, tasks, responses = case_rows(s), task_rows(s), response_rows(s)
    assert cases == [CaseRow("case0", "Case 0 (synthetic)", "test", 0, 1, 2),
                     CaseRow("case1", "Case 1 (synthetic)", "test", 0, 1, 3),
                     CaseRow("case2", "Case 2 (synthetic)", "test", 0, 1, 2)]
    assert [(t.task_id, t.case_id, t.level, t.stages, t.responses) for t in tasks] == [
        ("task0", "case0", 1, 0, 2), ("task1", "case1", 2, 0, 3), ("task2", "case2", 3, 1, 2)]
    assert len(responses) == 7
    human = next(r for r in responses if r.source == "student")
    assert (human.author, human.case_id, human.excerpt) == ("stu", "case1", "Left MCA stroke.")
    assert {r.author for r in responses if r.source == "model"} == set(MODELS)
    assert [r.response_id for r in responses if r.held] == ["r0-model-alpha-0"]
    with Session(engine_for(database_url)) as s:
        assert response_detail(s, response_id=human.response_id) == ResponseDetail(
            "lesion", 2, "Prompt 1", [], ["Left  MCA\n stroke."])  # the text in full
        assert response_detail(s, response_id="r2-model-beta-0").stages == ["More information."]


def test_search_matches_every_word_in_any_field() -> None:
    rows = [CaseRow("syn-01", "Left MCA stroke", "demo", 4, 2, 40),
            CaseRow("syn-10", "Hydrocephalus", "demo", 3, 1, 20),
            CaseRow("ext-1", "Left temporal mass", "hospital", 2, 1, 0)]
    assert search(rows, "") == rows and search(rows, "   ") == rows
    assert search(rows, "LEFT") == [rows[0], rows[2]]
    assert search(rows, "left hospital") == [rows[2]]
    assert search(rows, "syn-1") == [rows[1]]
    assert search(rows, "nothing") == []


def test_excerpt_is_one_line_and_capped() -> None:
    assert excerpt("a\n\n b  c") == "a b c"
    long = excerpt("word " * 100, limit=20)
    assert len(long) == 20 and long.endswith("…")


def test_count_demo_cases_counts_the_demo_bundle_only_where_the_demo_was_loaded(
        sqlite_url: str) -> None:
    with Session(engine_for(sqlite_url)) as s:
        assert count_demo_cases(s) == DemoShare(0, 0)
        for i, bundle in enumerate([DEMO_BUNDLE, DEMO_BUNDLE, "hospital"]):
            s.add(Case(case_id=f"c{i}", title="t", ehr="", scores={}, ground_truth={},
                       bundle=bundle))
        s.commit()
        assert count_demo_cases(s) == DemoShare(0, 3)  # a bundle named like the demo, no `nmb demo`
        s.add(Setting(key="demo", value="1"))
        s.commit()
        assert count_demo_cases(s) == DemoShare(2, 3)


def test_an_uploaded_name_becomes_a_safe_base_name() -> None:
    assert safe_upload_name("study 2026 (v2).zip") == "study_2026__v2.zip"
    assert safe_upload_name("../../etc/passwd") == "passwd.zip"
    assert safe_upload_name("C:\\Users\\ann\\Bundle.ZIP") == "Bundle.zip"
    assert safe_upload_name("<img src=x onerror=alert(1)>.zip") == "img_src_x_onerror_alert_1.zip"
    for nothing in ("", ".zip", "..", "é.zip", "/"):
        assert safe_upload_name(nothing) == "upload.zip"
    assert len(safe_upload_name("a" * 500 + ".zip")) == 100
