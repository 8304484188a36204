"""The Results page on the demo study: admins only, every table, a paired difference,
pseudonyms unless revealed."""

from pathlib import Path

from sqlmodel import select

# the `results` package, imported before AppTest puts pages/ first on sys.path, where
# pages/results.py would shadow it when this file runs alone
import results.results  # noqa: F401
from db.engine import session
from db.models import User
from tests.apptest import page, page_payload
from ui.auth import LoggedIn
from ui.plain_text import escape_markdown


def _login(name: str) -> LoggedIn:
    with session() as s:
        u = s.exec(select(User).where(User.name == name)).one()
    return LoggedIn(id=u.id, name=u.name, role=u.role, demo=u.demo)


def test_results_page_shows_every_table_to_admins_only(demo_study: Path) -> None:
    at = page("pages/study_results.py", _login("demo-admin")).run(timeout=120)
    assert not at.exception, at.exception
    assert [s.value for s in at.subheader][:13] == [
        "Overall, per model and human group", "pass@1 per family x level",
        "Per family x level", "One row per person", "Error classes among wrong responses",
        "Error classes: experts and grader on the same responses",
        "Anchoring on multi-turn tasks",
        "Final-answer check: grades contradicting their last stage",
        "Grader and experts on the same stage answers", "Sensitivity to the judge",
        "Cost and size per model, and the grader's cost", "Efficiency: one full run per model",
        "Coverage: the answers each row should stand on"]
    assert at.caption[0].value.startswith("Judge: grader (the grader on every response")
    headline = at.dataframe[0].value  # first: pass@1 per model and human group by split
    assert list(headline.columns)[:3] == ["who", "group", "pass@1 · Direct Diagnosis"]
    assert headline.iloc[:, 2].str.match(r"0\.\d\d (\[0\.\d\d, [01]\.\d\d\]|\(n < \d+\))").all()
    overall = at.dataframe[1].value
    assert set(overall["group"]) == {"model", "human"} and len(overall) == 6
    assert any("synthetic demo exam takers" in w.value for w in at.warning)
    people = at.dataframe[4].value
    assert len(people) == 9 and people["person"].str.startswith("user-").all()
    paired = at.dataframe[14].value  # after the headline and the 13 tables: physician - the first model
    assert list(paired["measure"]) == ["pass@1", "rubric score"]
    assert set(paired["A"]) == {"physician"} and paired["A - B (unadjusted 95%)"].str.contains(r"\[").all()
    assert "synthetic-student-1" not in page_payload(at)
    at.toggle[0].set_value(True).run(timeout=120)  # reveal
    assert "synthetic-student-1" in set(at.dataframe[4].value["person"])
    at.radio[0].set_value("experts").run(timeout=120)
    assert at.caption[0].value.startswith("Judge: experts (the experts' consensus")
    assert any(escape_markdown("expert-scored responses") in w.value for w in at.warning)
    at.radio[0].set_value("grader").run(timeout=120)
    assert "counted wrong" in at.caption[0].value
    assert at.toggle[2].label.startswith("View: answered tasks only")
    at.toggle[2].set_value(True).run(timeout=120)
    assert "Rows stand on answered tasks only" in at.caption[0].value
    assert any(w.value.startswith(escape_markdown("view: answered tasks only"))
               for w in at.warning)

    student = page("pages/study_results.py", _login("demo-student")).run()
    assert [e.value for e in student.error] == ["You do not have access to this page."]


def test_results_page_shows_the_published_layout_on_request(demo_study: Path) -> None:
    at = page("pages/study_results.py", _login("demo-admin")).run(timeout=120)
    assert at.toggle[1].label.startswith("The published leaderboard's layout")
    at.toggle[1].set_value(True).run(timeout=120)
    assert not at.exception, at.exception
    assert [s.value for s in at.subheader][:4] == [
        "Direct Diagnosis (level 1)", "Complex Diseases (level 2)",
        "Multi-round Dialogue (level 3)", "Overall, per model and human group"]
    direct = at.dataframe[1].value  # after the headline
    assert list(direct.columns) == ["who", "group", "tasks", "people", "pass@1", "pass@5",
                                    "BERTScore (secondary)", "rubric score", "missing",
                                    "self-graded"]
    assert len(direct) == 6 and set(direct["group"]) == {"model", "human"}


def test_results_page_adds_bertscore_from_the_servers_model_folder(
        demo_study: Path, tmp_path: Path, monkeypatch) -> None:
    """BERTScore on /results comes from NMB_BERTSCORE_MODEL (set by the operator), as a
    secondary column; a folder that is not a model is one error on the page."""
    import importlib.util

    from tests.results.tiny_bert import tiny_bert
    from tests.services import require

    require(importlib.util.find_spec("bert_score") is not None, "the bertscore extra")
    monkeypatch.setenv("NMB_BERTSCORE_MODEL", str(tiny_bert(tmp_path / "tiny")))
    at = page("pages/study_results.py", _login("demo-admin")).run(timeout=300)
    assert not at.exception, at.exception
    headline = at.dataframe[0].value  # first: pass@1 per model and human group by split
    assert list(headline.columns)[:3] == ["who", "group", "pass@1 · Direct Diagnosis"]
    assert headline.iloc[:, 2].str.match(r"0\.\d\d (\[0\.\d\d, [01]\.\d\d\]|\(n < \d+\))").all()
    overall = at.dataframe[1].value
    assert "BERTScore (secondary)" in overall.columns
    assert overall["BERTScore (secondary)"].str.match(r"^0\.\d{3}").all()
    assert any("never part of the gate" in c.value for c in at.caption)

    monkeypatch.setenv("NMB_BERTSCORE_MODEL", str(tmp_path))  # a folder, not a model
    at = page("pages/study_results.py", _login("demo-admin")).run(timeout=300)
    assert not at.exception and len(at.error) == 1 and not at.dataframe
