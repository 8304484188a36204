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


def _login(name: str) -> LoggedIn:
    with session() as s:
        u = s.exec(select(User).where(User.name == name)).one()
    return LoggedIn(id=u.id, name=u.name, role=u.role, demo=u.demo)


def test_results_page_shows_every_table_to_admins_only(demo_study: Path) -> None:
    at = page("pages/study_results.py", _login("demo-admin")).run(timeout=120)
    assert not at.exception, at.exception
    assert [s.value for s in at.subheader][:11] == [
        "Overall, per model and human group", "pass@1 per family x level",
        "Per family x level", "One row per person", "Error classes among wrong responses",
        "Error classes: experts and grader on the same responses",
        "Anchoring on multi-turn tasks",
        "Final-answer check: grades contradicting their last stage",
        "Grader and experts on the same stage answers", "Sensitivity to the judge",
        "Cost and size per model, and the grader's cost"]
    assert at.caption[0].value.startswith("Judge: grader (the grader on every response")
    overall = at.dataframe[0].value
    assert set(overall["group"]) == {"model", "human"} and len(overall) == 6
    assert any("synthetic demo exam takers" in w.value for w in at.warning)
    people = at.dataframe[3].value
    assert len(people) == 9 and people["person"].str.startswith("user-").all()
    paired = at.dataframe[11].value  # after the 11 tables: physician - the first model
    assert list(paired["measure"]) == ["pass@1", "rubric score"]
    assert set(paired["A"]) == {"physician"} and paired["A - B"].str.contains(r"\[").all()
    assert "synthetic-student-1" not in page_payload(at)
    at.toggle[0].set_value(True).run(timeout=120)  # reveal
    assert "synthetic-student-1" in set(at.dataframe[3].value["person"])
    at.radio[0].set_value("experts").run(timeout=120)
    assert at.caption[0].value.startswith("Judge: experts (the experts' consensus")
    assert any("expert-scored responses" in w.value for w in at.warning)

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
    direct = at.dataframe[0].value
    assert list(direct.columns) == ["who", "group", "tasks", "people", "pass@1", "pass@5",
                                    "BERTScore (secondary)", "rubric score"]
    assert len(direct) == 6 and set(direct["group"]) == {"model", "human"}
