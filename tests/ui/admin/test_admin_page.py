"""/admin as an admin uses it: the open section survives a button and a reload, uploads are
named by their own file name, the case browser lists and searches, and the demo banner follows
what the study holds."""

import io
import zipfile
from pathlib import Path

import pytest
from sqlmodel import select

from db.bundle.importer import import_bundle
from db.engine import session
from db.models import AuditLog, Case, User
from db.users import add_user
from tests.apptest import app, make_user, page, page_payload
from tests.factories import make_study
from ui.auth import LoggedIn
from ui.synthetic_banner import ALL_DEMO

SAMPLE = Path(__file__).resolve().parents[3] / "examples" / "sample-bundle"


def _zip(folder: Path) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for f in sorted(folder.rglob("*")):
            zf.write(f, f.relative_to(folder.parent))
    return buf.getvalue()


def _warnings(at) -> list[str]:
    return [w.value for w in at.warning]


@pytest.mark.slow
def test_the_export_section_stays_open_after_prepare_export(sqlite_url: str) -> None:
    with session() as s:
        make_study(s, n_tasks=2)
    at = page("pages/admin.py", make_user("root", "admin"))
    at.query_params["section"] = "Export"  # a reload of /admin?section=Export
    at.run()
    assert not at.exception, at.exception
    assert not at.get("file_uploader"), "the import section ran while Export is open"
    next(b for b in at.button if b.label == "Prepare export").click().run()
    assert not at.exception, at.exception
    assert at.session_state["section"] == "Export" and at.query_params["section"] == "Export"
    [download] = at.get("download_button")
    assert download.label == "Download 4 rows"  # two tasks, two models
    assert not at.get("file_uploader")


@pytest.mark.slow
def test_the_retire_section_retires_lists_and_restores_with_its_audit_row(sqlite_url: str
                                                                         ) -> None:
    with session() as s:
        make_study(s, n_tasks=2)
    at = page("pages/admin.py", make_user("root", "admin"))
    at.query_params["section"] = "Retire"
    at.run()

    def submit(button: str, kind: str, item: str, reason: str) -> None:
        at.selectbox[0].set_value(kind)
        next(t for t in at.text_input if t.label.startswith("Id")).input(item)
        next(t for t in at.text_input if t.label.startswith("Reason")).input(reason)
        next(b for b in at.button if b.label == button).click().run()
        assert not at.exception, at.exception

    submit("Retire", "case", "nope", "x")
    assert [e.value for e in at.error] == ["no case 'nope' in this study"]
    submit("Retire", "case", "case0", "wrong scan")
    table = at.dataframe[-1]  # below the study's counts
    assert len(at.dataframe) == 2 and table.value[["kind", "item", "reason", "by"]].values.tolist() == [
        ["case", "case0", "wrong scan", "root"]]
    submit("Restore", "case", "case0", "checked")
    assert len(at.dataframe) == 1 and not at.error
    assert any(c.value == "Nothing is retired." for c in at.caption)
    with session() as s:
        assert [(a.action, a.actor, a.detail["item"]) for a in s.exec(
            select(AuditLog).where(AuditLog.action.in_(["retire", "unretire"]))
            .order_by(AuditLog.id))] == [("retire", "root", "case0"),
                                         ("unretire", "root", "case0")]


@pytest.mark.slow
def test_an_upload_is_named_by_its_own_file_name(sqlite_url: str) -> None:
    at = page("pages/admin.py", make_user("root", "admin")).run()
    at.get("file_uploader")[0].set_value(("Ward 7 study (v2).zip", b"not a zip",
                                          "application/zip")).run().run()
    next(b for b in at.button if b.label == "Import").click().run()
    assert not at.exception, at.exception
    assert [e.value for e in at.error] == [r"bundle Ward\_7\_study\_\_v2\.zip has 1 problem"]
    [problems] = [df.value for df in at.dataframe if "problem" in df.value.columns]
    assert list(problems["file"]) == ["Ward_7_study__v2.zip"]
    assert list(problems["line"]) == [""]  # a file-level problem has no line
    assert "bundle.zip" not in page_payload(at)

    at.get("file_uploader")[0].set_value(("sample.zip", _zip(SAMPLE), "application/zip")).run()
    next(b for b in at.button if b.label == "Import").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert [m.value for m in at.success] == [
        r"sample\.zip\: Neural\-MedBench Studio example \(synthetic\)\: imported 2 cases, "
        r"3 series, 3 tasks, 6 responses; unchanged 0 cases, 0 tasks, 0 responses"]
    assert at.session_state["section"] == "Import a bundle"
    with session() as s:
        assert len(s.exec(select(Case)).all()) == 2
    counts = at.dataframe[0].value  # the page was drawn again: before, the counts of before
    assert (counts["cases"][0], counts["tasks"][0], counts["responses"][0]) == (2, 3, 6)


@pytest.mark.slow
def test_a_write_draws_the_page_again_with_what_it_changed(sqlite_url: str) -> None:
    """Before: the counts and the accounts above the form were those from before the write
    until the next click."""
    at = page("pages/admin.py", make_user("root", "admin"))
    at.query_params["section"] = "Users"
    at.run()
    assert at.dataframe[0].value["users"][0] == 1
    next(t for t in at.text_input if t.label == "Name").input("ward7")
    next(t for t in at.text_input if t.label.startswith("Initial password")).input(
        "a long passphrase")
    next(b for b in at.get("form_submit_button") if b.label == "Add").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.dataframe[0].value["users"][0] == 2
    assert list(at.dataframe[1].value["name"]) == ["root", "ward7"]
    assert [m.value for m in at.success] == [r"Added student ward7\."]
    at.run()  # the message stays while the section is open, and is not shown twice
    assert [m.value for m in at.success] == [r"Added student ward7\."]


@pytest.mark.slow
def test_case_browser_lists_searches_and_shows_ground_truth_as_fields(sqlite_url: str) -> None:
    with session() as s:
        import_bundle(s, SAMPLE)
    at = page("pages/admin.py", make_user("root", "admin"))
    at.query_params["section"] = "Cases"
    at.run()
    assert not at.exception, at.exception
    cases, tasks, responses = (df.value for df in at.dataframe[1:4])  # after the counts
    assert (len(cases), len(tasks), len(responses)) == (2, 3, 6)
    assert set(responses["author"]) == {"example-model-a", "example-model-b"}
    labels = [m.value for m in at.markdown]
    for field in ("**Final diagnosis**", "**Differential**", "**Lesion**", "**Reasoning**"):
        assert field in labels
    texts = [t.value for t in at.text]
    assert "Relapsing-remitting multiple sclerosis" in texts  # example-01, plain text
    assert not at.json, "ground truth is not a JSON tree"

    next(t for t in at.text_input if t.label.startswith("Search")).input("example-02").run()
    cases, tasks, responses = (df.value for df in at.dataframe[1:4])
    assert (len(cases), len(tasks), len(responses)) == (1, 1, 2)
    assert at.selectbox(key="browse_case").options == ["example-02 · 71-year-old man with "
                                                      "sudden right weakness and aphasia "
                                                      "(synthetic example)"]
    assert "Acute left middle cerebral artery infarct" in [t.value for t in at.text]
    assert at.selectbox(key="browse_response").options == [
        "example-02-where · example-model-a · sample 0",
        "example-02-where · example-model-b · sample 0"]
    texts = [t.value for t in at.text]
    assert "Where is the lesion, and on which sequence do you see it?" in texts
    assert "Left MCA territory (insula, operculum), bright on DWI." in texts  # as written

    at.text_input(key="browse_query").input("why model-b").run()  # a multi-turn response
    assert at.selectbox(key="browse_case").value == "example-01"
    assert [m.value for m in at.markdown if m.value.startswith("**Stage")] == [
        "**Stage 1 of 3**", "**Stage 2 of 3**", "**Stage 3 of 3**"]
    texts = [t.value for t in at.text]
    for answer in ("Probably migraine.", "Still migraine.", "Maybe MS after all."):
        assert answer in texts


def _admin(name: str) -> LoggedIn:
    with session() as s:
        u = s.exec(select(User).where(User.name == name)).one()
    return LoggedIn.of(u)


def test_every_section_renders_on_the_demo_study(demo_study: Path) -> None:
    admin = _admin("demo-admin")
    for section in ("Import a bundle", "Model names", "Cases", "Progress", "Users",
                    "Assignments", "Exams", "Retire", "Export"):
        at = page("pages/admin.py", admin)
        at.query_params["section"] = section
        at.run()
        assert not at.exception, (section, at.exception)
        assert not at.error, (section, [e.value for e in at.error])
        assert at.session_state["section"] == section
        browsed = any(t.key == "browse_query" for t in at.text_input)
        assert browsed == (section == "Cases")  # only the open section runs


def test_demo_banner_while_demo_cases_are_in_the_study(demo_study: Path) -> None:
    at = app(_admin("demo-admin")).run()
    assert not at.exception, at.exception
    assert ALL_DEMO in _warnings(at)
    # a bundle of the admin's own beside the demo: refused until the with-demo box is ticked
    form = page("pages/admin.py", _admin("demo-admin"))
    form.query_params["section"] = "Import a bundle"
    form.run()
    next(t for t in form.text_input if t.label == "…or a path on the server").set_value(
        str(SAMPLE)).run()
    next(b for b in form.button if b.label == "Import").click().run()
    assert [e.value.replace("\\", "") for e in form.error] == [  # as shown: escaped markdown
        "the study holds the synthetic demo (10 cases): remove it first (nmb demo remove) or "
        "import beside it with --with-demo; nothing was imported"]
    with session() as s:
        assert len(s.exec(select(Case)).all()) == 10
    form.checkbox(key="bundle_with_demo").check().run()
    next(b for b in form.button if b.label == "Import").click().run()
    assert not form.error and not form.exception
    at.run()
    assert ALL_DEMO not in _warnings(at)
    assert any(w.startswith("Some cases are synthetic demo data: 10 of 12 cases")
               for w in _warnings(at)), _warnings(at)


def test_no_banner_in_a_study_without_demo_data(sqlite_url: str) -> None:
    with session() as s:
        import_bundle(s, SAMPLE)
    at = app(make_user("root", "admin")).run()
    assert not at.exception, at.exception
    assert not [w for w in _warnings(at) if "demo" in w.lower()]


@pytest.mark.slow
def test_assigning_shows_what_it_adds_before_adding_it(sqlite_url: str) -> None:
    from db.models import Assignment

    with session() as s:
        make_study(s, n_tasks=3, experts=2)  # 6 responses
    at = page("pages/admin.py", make_user("root", "admin"))
    at.query_params["section"] = "Assignments"
    at.run()
    next(sb for sb in at.selectbox if sb.label == "Items").set_value("all")
    next(n for n in at.number_input if n.label == "Raters per item").set_value(1)
    next(b for b in at.button if b.label == "Preview").click().run()
    assert not at.exception, at.exception
    [preview] = [i.value.replace("\\", "") for i in at.info if "adds" in i.value]
    assert preview == ("This adds 6 items (1 rater each): expert1 0 -> 3 (+3), "
                       "expert2 0 -> 3 (+3).")
    with session() as s:
        assert s.exec(select(Assignment)).first() is None  # a preview writes nothing
    next(b for b in at.button if b.label == "Assign these 6 items").click().run()
    assert not at.exception, at.exception
    assert any("Assignment design 1 created: adds 6 items" in m.value.replace("\\", "")
               for m in at.success)
    with session() as s:
        assert len(s.exec(select(Assignment)).all()) == 6
    next(b for b in at.button if b.label == "Preview").click().run()  # nothing left to add
    assert any("already assigned" in e.value for e in at.error)


@pytest.mark.slow
def test_release_files_import_from_the_admin_page(sqlite_url: str, tmp_path: Path) -> None:
    """The release tab: uploaded task files keep their names (they decide family and level),
    the answer key is read, placeholders are counted, problems are table rows."""
    from tests.db.release.release_files import write_release

    files = write_release(tmp_path / "release")
    at = page("pages/admin.py", make_user("root", "admin")).run()
    at.radio[0].set_value("Neural-MedBench release files").run()
    at.get("file_uploader")[0].set_value([(f.name, f.read_bytes(), "application/json")
                                          for f in files]).run()
    key = (tmp_path / "release" / "answers.json").read_bytes()
    at.get("file_uploader")[1].set_value(("answers (final).json", key, "application/json")).run()
    next(b for b in at.button if b.label == "Import").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    [done] = [m.value for m in at.success]
    assert "imported 5 cases, 6 series, 6 tasks" in done
    assert r"skipped 3 placeholder cases" in done
    with session() as s:
        assert s.get(Case, "direct-case_1").ground_truth["final_diagnosis"] == "胶质母细胞瘤"

    bad = tmp_path / "direct-diagnosis.json"
    bad.write_text('{"case_id": "case_1"}')
    at.get("file_uploader")[0].set_value([]).run()
    at.get("file_uploader")[1].set_value(None).run()
    at.text_area[0].set_value(str(bad)).run()
    next(b for b in at.button if b.label == "Import").click().run()
    [problems] = [df.value for df in at.dataframe if "problem" in df.value.columns]
    assert list(problems["file"]) == ["direct-diagnosis.json"]
    assert list(problems["problem"]) == ["is not a JSON list of cases (found an object)"]


@pytest.mark.slow
def test_model_responses_import_from_the_admin_page(sqlite_url: str, tmp_path: Path) -> None:
    """The responses tab: a VLMEvalKit .xlsx upload keeps its suffix, the model name is typed,
    an unknown task is one problem row and nothing is written; an lm-eval log's filter is
    typed."""
    import openpyxl

    from db.models import Response
    from tests.db.bundle.bundles import write_bundle, write_jsonl

    with session() as s:
        import_bundle(s, write_bundle(tmp_path / "b", with_responses=[]))
    book = openpyxl.Workbook()
    for row in (["index", "question", "prediction"], ["t1", "q", "Stroke."], ["t2", "q", "x"]):
        book.active.append(row)
    buf = io.BytesIO()
    book.save(buf)
    at = page("pages/admin.py", make_user("root", "admin")).run()
    at.radio[0].set_value("Model responses").run()
    at.selectbox[0].set_value("vlmevalkit").run()
    at.get("file_uploader")[0].set_value(("MyVLM_Bench.xlsx", buf.getvalue(),
                                          "application/octet-stream")).run()
    at.text_input[1].set_value("MyVLM").run()
    next(b for b in at.button if b.label == "Import").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    [done] = [m.value for m in at.success]
    assert "2 responses" in done
    with session() as s:
        assert {r.model for r in s.exec(select(Response))} == {"MyVLM"}

    bad = tmp_path / "p.tsv"
    bad.write_text("index\tprediction\nt9\tx\n")
    at.get("file_uploader")[0].set_value(None).run()
    at.text_input[0].set_value(str(bad)).run()
    next(b for b in at.button if b.label == "Import").click().run()
    [problems] = [df.value for df in at.dataframe if "problem" in df.value.columns]
    assert list(problems["problem"]) == ['1 task_id is not a task of this study: "t9" (row 2)']

    # an lm-eval log with two filters: the filter typed is the one read, one sample a document
    log = tmp_path / "samples_neuro.jsonl"
    write_jsonl(log, [{"doc_id": 0, "doc": {"task_id": "t1"}, "resps": [["Stroke."]],
                       "filtered_resps": ["Stroke."], "filter": f} for f in ("strict", "loose")])
    at.selectbox[0].set_value("lm-eval").run()
    at.text_input[0].set_value(str(log)).run()
    at.text_input[1].set_value("lm-model").run()
    at.text_input(key="responses_filter").set_value("loose").run()
    next(b for b in at.button if b.label == "Import").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    [done] = [m.value for m in at.success]
    assert "1 response;" in done and "filter loose read, not strict" in done, done


def test_an_accounts_single_sign_on_email_is_set_on_the_admin_page(sqlite_url: str) -> None:
    with session() as s:
        add_user(s, name="dr-a", role="expert", password="pw", email="taken@hospital.example")
        add_user(s, name="dr-b", role="expert", password="pw")
        s.commit()
    at = page("pages/admin.py", make_user("root", "admin"))
    at.query_params["section"] = "Users"
    at.run()

    def submit(email: str) -> None:
        at.selectbox(key="email_of").set_value("dr-b")
        next(t for t in at.text_input if t.label == "E-mail the identity provider sends"
             ).input(email)
        next(b for b in at.button if b.label == "Set e-mail").click().run()
        assert not at.exception, at.exception

    submit("TAKEN@hospital.example")
    assert [e.value for e in at.error] == [
        "the e\\-mail 'taken@hospital\\.example' is already the account 'dr\\-a''s"]
    submit(" Dr.B@Hospital.example ")
    assert [m.value for m in at.success] == ["dr\\-b signs on as dr\\.b@hospital\\.example\\."]
    with session() as s:
        assert s.exec(select(User.email).where(User.name == "dr-b")).one() == "dr.b@hospital.example"


@pytest.mark.slow
def test_earlier_expert_scores_import_from_the_admin_page(sqlite_url: str, tmp_path: Path) -> None:
    """The scores tab: an uploaded CSV is imported, marked imported (not collected blind)."""
    from db.models import ExpertScore
    from tests.db.sources.test_score_import import HEADER, _rows
    from tests.factories import make_study

    with session() as s:
        rids = make_study(s, n_tasks=1)
        rows = _rows(s, "expert1", rids[:1])
    text = "\n".join(",".join(r) for r in [HEADER, *rows]) + "\n"
    at = page("pages/admin.py", make_user("root", "admin")).run()
    at.radio[0].set_value("Earlier expert scores").run()
    at.get("file_uploader")[0].set_value(("form.csv", text.encode(), "text/csv")).run()
    next(b for b in at.button if b.label == "Import").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    [done] = [m.value for m in at.success]
    assert "imported 1 expert score" in done, done
    with session() as s:
        assert [e.imported for e in s.exec(select(ExpertScore))] == [True]
