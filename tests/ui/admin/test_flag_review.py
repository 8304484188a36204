"""/admin's review of a response that names its model: the original beside the redacted text,
then released for assignment."""

from pathlib import Path

from sqlmodel import select

from db.bundle.importer import import_bundle
from db.engine import session
from db.models import AuditLog, Response, ResponseFlag
from tests.apptest import make_user, page
from tests.db.bundle.bundles import responses, write_bundle

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
    assert not at.exception and any("can be assigned now" in m.value for m in at.success)
    with session() as s:
        rid = rows[0]["response_id"]
        assert s.get(Response, rid).text == ("As [name removed], a colleague, I think this is a "
                                             "left MCA stroke.")
        assert s.get(ResponseFlag, rid).reviewed_by == "root"
        entry = s.exec(select(AuditLog).where(AuditLog.action == "response.review")).one()
        assert entry.actor == "root" and entry.detail["changed"]
