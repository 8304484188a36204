"""/admin's review of a response that names its model: the original beside the redacted text,
then released for assignment."""

from pathlib import Path

import pytest
from sqlmodel import select

from db.bundle.importer import import_bundle
from db.engine import session
from db.models import AuditLog, Response, ResponseFlag
from tests.apptest import make_user, page
from tests.db.bundle.bundles import responses, write_bundle
from ui.admin.flag_review import names_found
from ui.plain_text import escape_markdown

NAMING = "As GPT-4o, a model developed by OpenAI, I think this is a left MCA stroke."


def test_admin_reviews_a_flagged_response(sqlite_url: str, tmp_path: Path) -> None:
    rows = responses()
    rows[0]["text"] = NAMING
    with session() as s:
        import_bundle(s, write_bundle(tmp_path / "b", with_responses=rows))
    at = page("pages/admin.py", make_user("root", "admin"))
    at.query_params["section"] = "Model names"
    at.run()
    assert not at.exception, at.exception
    assert NAMING in [t.value for t in at.text]  # the original, as imported
    box = next(t for t in at.text_area if t.label.startswith("Answer, as raters"))
    box.input(box.value.replace("a model developed by [name removed]", "a colleague"))
    next(b for b in at.get("form_submit_button") if b.label == "Save and release").click().run()
    assert not at.exception and any("no assignment design holds it yet" in m.value for m in at.success)
    with session() as s:
        rid = rows[0]["response_id"]
        assert s.get(Response, rid).text == ("As [name removed], a colleague, I think this is a "
                                             "left MCA stroke.")
        assert s.get(ResponseFlag, rid).reviewed_by == "root"
        entry = s.exec(select(AuditLog).where(AuditLog.action == "response.review")).one()
        assert entry.actor == "root" and entry.detail["changed"]


@pytest.mark.slow
def test_a_redaction_longer_than_an_answer_is_not_cut_on_its_way_back(sqlite_url: str) -> None:
    """An exam answer of 200,000 characters naming a model 40,000 times ("xAI " each) becomes
    a 600,015-character redaction ("[name removed]" is longer than "xAI"): the review box held
    its first 200,000 characters and "Save and release" stored them, the answer silently cut
    to a third; the expander's title listed all 40,000 names. Now the box holds it whole, the
    save is refused in one line (longer than an answer may be), the original can be restored,
    and the title names each name once."""
    from db.study.exams import answer_stage, attempt_for, ensure_exam, finish
    from tests.factories import make_study

    typed = "xAI " * 40_000 + "left MCA stroke"
    student = make_user("verbose", "student")
    with session() as s:
        make_study(s, n_tasks=1, experts=1)
        exam = ensure_exam(s, name="Baseline", task_ids=["task0"])
        s.commit()
        attempt = attempt_for(s, exam_id=exam.id, user_id=student.id)
        answer_stage(s, attempt=attempt, task_id="task0", text=typed)
        finish(s, attempt=attempt)
        rid = s.exec(select(Response.response_id).where(Response.source == "student")).one()
        redacted = s.get(Response, rid).text
    assert len(redacted) > 200_000
    at = page("pages/admin.py", make_user("root", "admin"))
    at.query_params["section"] = "Model names"
    at.run()
    assert not at.exception, at.exception
    [expander] = at.expander
    assert expander.label.endswith(escape_markdown("names: xAI (40,000 times)")), expander.label
    box = next(t for t in at.text_area if t.label.startswith("Answer, as raters"))
    assert box.value == redacted  # whole, not its first 200,000 characters
    next(b for b in at.get("form_submit_button") if b.label == "Save and release").click().run()
    assert not at.exception
    assert [e.value for e in at.error] == [escape_markdown(
        "the answer is 600,015 characters, more than the limit of 200,000")]
    with session() as s:
        assert s.get(Response, rid).text == redacted  # nothing stored
        assert s.get(ResponseFlag, rid).reviewed_at is None
    restore = "Restore the original (false alarm) and release"
    next(b for b in at.get("form_submit_button") if b.label == restore).click().run()
    assert any("no assignment design holds it yet" in m.value for m in at.success)
    with session() as s:
        assert s.get(Response, rid).text == typed


def test_names_found_are_each_named_once() -> None:
    assert names_found(["GPT-4o", "OpenAI", "gpt-4o", "GPT-4o"]) == "GPT-4o (3 times), OpenAI"
    assert names_found([f"m{i}" for i in range(12)], most=2) == "m0, m1 and 10 more"
