"""/calibrate → Grader runs: the one-request preflight against a real local server (success, a
refused key, an unreachable host, an answer that breaks the schema), a failed run shown as a
failure live and in the history, and the history's counts; SQLite and PostgreSQL."""

import socket

import pytest
from sqlalchemy import func
from sqlmodel import select

from db.engine import session
from db.models import GraderCache, GraderConfig, GraderRun, GraderScore, User
from db.raters.assignments import draw_calibration
from grading.config import GraderSettings, store_config
from grading.grader import grade
from tests.apptest import make_user, page, page_payload
from tests.factories import make_study
from tests.llm.run_ends import add_abandoned
from tests.openai_server import OpenAIServer
from ui.auth import LoggedIn

SECRET = "sk-wrong-DO-NOT-LEAK-0123456789"


def _study(base_url: str) -> int:
    """Six responses, all in the calibration subset, and a grader config at `base_url`."""
    with session() as s:
        make_study(s, n_tasks=3)
        draw_calibration(s, n=6, seed=0)
        config = store_config(s, GraderSettings(base_url=base_url))
        s.commit()
        return config.id


def _grader_page(confirm: bool = True):
    """/calibrate as an admin, the stored config's endpoint confirmed (`confirm`)."""
    admin = make_user("admin1", "admin")
    at = page("pages/calibrate.py", admin, timeout=60).run()
    boxes = [c for c in at.checkbox if str(c.key).startswith("trust_endpoint_")]
    if confirm and boxes:
        boxes[0].check().run()
    return at


def _click(at, label: str):
    next(b for b in at.button if b.label == label).click().run()
    assert not at.exception, at.exception
    return at


def _details(at) -> str:
    """The technical reason shown under a failed preflight."""
    return next(c.value for c in at.caption if c.value.startswith("Details: "))


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # closed when the socket is: nothing listens there


def _stored() -> tuple[int, ...]:
    with session() as s:
        return tuple(s.exec(select(func.count()).select_from(t)).one()
                     for t in (GraderRun, GraderScore, GraderCache))


@pytest.mark.slow
def test_preflight_sends_one_request_and_stores_nothing(sqlite_url: str) -> None:
    with OpenAIServer() as srv:
        _study(srv.base_url)
        at = _click(_grader_page(), "Preflight (one request)")
        assert not at.error, [e.value for e in at.error]
        assert any(m.value.startswith("Preflight passed") for m in at.success)
        assert any('"criteria"' in c.value for c in at.code)  # the grade it returned, as text
        assert len(srv.chat_requests()) == 1
    assert _stored() == (0, 0, 0)


@pytest.mark.slow
def test_preflight_with_a_refused_key_says_so(sqlite_url: str,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    with OpenAIServer(api_key="sk-the-right-one") as srv:
        _study(srv.base_url)
        at = _click(_grader_page(), "Preflight (one request)")
        assert len(srv.chat_requests()) == 1  # a 401 is not retried
    assert [e.value for e in at.error] and "refused the API key" in at.error[0].value
    assert "HTTP 401" in _details(at)
    assert not at.success
    assert SECRET not in page_payload(at)
    assert _stored() == (0, 0, 0)


@pytest.mark.slow
def test_preflight_to_an_unreachable_host_says_so(sqlite_url: str) -> None:
    _study(f"http://127.0.0.1:{_closed_port()}/v1")
    at = _click(_grader_page(), "Preflight (one request)")
    assert [e.value for e in at.error] and "Could not reach" in at.error[0].value
    assert "connection error" in _details(at)
    assert _stored() == (0, 0, 0)


@pytest.mark.slow
def test_preflight_answer_that_breaks_the_schema_says_so(sqlite_url: str) -> None:
    with OpenAIServer() as srv:
        _study(srv.base_url)
        srv.inject_when("Prompt", "badschema")
        at = _click(_grader_page(), "Preflight (one request)")
    assert [e.value for e in at.error]
    assert "not with the JSON the grader" in at.error[0].value


def test_preflight_of_a_malformed_base_url_sends_nothing(sqlite_url: str) -> None:
    _study("synthetic://demo")  # as the demo's synthetic grader
    at = _click(_grader_page(), "Preflight (one request)")
    assert [e.value for e in at.error] and "Preflight not sent" in at.error[0].value
    assert "expected http" in at.error[0].value


def test_failed_run_is_a_failure_live_and_in_the_history(database_url: str) -> None:
    with OpenAIServer() as srv:
        _study(srv.base_url)
        srv.inject_when("Prompt", "400")  # every request refused: nothing graded
        at = _click(_grader_page(), "Run grader")
    assert not at.success
    assert any(e.value.startswith("Run 1: 0 graded") for e in at.error), \
        [e.value for e in at.error]
    table = at.dataframe[0].value
    assert table[["run", "status", "graded", "failed"]].values.tolist() == [[1, "failed", 0, 6]]
    assert at.selectbox(key="failures_of_run").value == 1
    failures = at.dataframe[1].value
    assert len(failures) == 6 and failures["error"].str.startswith("HTTP 400").all()


@pytest.mark.slow
def test_history_lists_runs_with_their_counts(database_url: str) -> None:
    with OpenAIServer() as srv:
        config_id = _study(srv.base_url)
        with session() as s:  # run 1: the first three responses, all graded
            assert grade(s, config_id=config_id, items="calibration", limit=3,
                         trust_base_url=srv.base_url).graded == 3
        srv.inject_when("Prompt 2", "400")  # run 2: of the other three, task 2's two fail
        at = _click(_grader_page(), "Run grader")
    assert any(w.value.startswith("Run 2: 1 graded (0 from cache), 2 failed;") for w in at.warning)
    table = at.dataframe[0].value
    assert table[["run", "status", "to grade", "graded", "failed", "from cache"]].values.tolist() \
        == [[2, "partial", 3, 1, 2, 0], [1, "finished", 3, 3, 0, 0]]
    assert table["config"].str.startswith(f"#{config_id} ").all()
    assert table["finished (UTC)"].str.len().gt(0).all()
    assert table["tokens"].gt(0).all()
    assert at.selectbox(key="failures_of_run").value == 2
    assert sorted(at.dataframe[1].value["response"]) == ["r2-model-alpha-0", "r2-model-beta-0"]


@pytest.mark.slow
def test_a_run_whose_process_is_gone_shows_as_interrupted(sqlite_url: str) -> None:
    """A grader run left "running" by a killed process is marked when the history shows it."""
    config_id = _study("http://127.0.0.1:9/v1")
    with session() as s:
        run_id = add_abandoned(s, GraderRun(config_id=config_id, items="all", n_items=6))
    table = _grader_page().dataframe[0].value
    assert table[["run", "status"]].values.tolist() == [[run_id, "interrupted"]]
def test_a_stored_configs_endpoint_gets_nothing_until_confirmed(sqlite_url: str) -> None:
    """The page shows the stored config's address; until the admin ticks it, neither the
    preflight nor a run sends anything there (each says why); ticked, the preflight goes."""
    with OpenAIServer() as srv:
        _study(srv.base_url)
        at = _grader_page(confirm=False)
        box = next(c for c in at.checkbox if str(c.key).startswith("trust_endpoint_"))
        assert srv.base_url in box.label.replace("\\", "") and box.value is False  # escaped
        _click(at, "Preflight (one request)")
        shown = [e.value.replace("\\", "") for e in at.error]  # markdown-escaped
        assert shown and "Preflight not sent" in shown[0]
        assert "nothing (no API key, no study data) is sent" in shown[0]
        _click(at, "Run grader")
        assert any("nothing (no API key" in e.value.replace("\\", "") for e in at.error)
        assert srv.requests == [] and _stored() == (0, 0, 0)
        box.check().run()  # (AppTest keeps the last button pressed: it may preflight now)
        _click(at, "Preflight (one request)")
        assert any(m.value.startswith("Preflight passed") for m in at.success)
        assert srv.chat_requests() and all(r.status == 200 for r in srv.chat_requests())


@pytest.mark.slow
def test_an_endpoint_typed_on_the_page_is_confirmed_for_the_session(sqlite_url: str) -> None:
    """(and the config saved on the page grades with the rubric the experts score with)"""
    from db.raters.assignments import assign
    from db.rubrics import ensure_rubric

    with OpenAIServer() as srv:
        with session() as s:
            make_study(s, n_tasks=1)
            v11 = ensure_rubric(s, "neurology-v1.1").content_hash
            assign(s, rubric_hash=v11, raters=["expert1"], overlap=1, selection="all", seed=0)
            s.commit()
        at = _grader_page(confirm=False)
        at.text_input[1].set_value(srv.base_url)  # the form's "Base URL"
        next(b for b in at.button if b.label == "Save config").click().run()
        with session() as s:
            assert s.exec(select(GraderConfig.rubric_hash)).one() == v11
        box = next(c for c in at.checkbox if str(c.key).startswith("trust_endpoint_"))
        assert box.value is True
        _click(at, "Preflight (one request)")
        assert any(m.value.startswith("Preflight passed") for m in at.success)
        assert len(srv.chat_requests()) == 1


def test_leaderboard_has_a_chart_and_one_rule_for_decimals(demo_study) -> None:
    with session() as s:
        admin = LoggedIn.of(s.exec(select(User).where(User.name == "demo-admin")).one())
    at = page("pages/calibrate.py", admin, timeout=60).run()
    assert not at.exception, at.exception
    table = next(df.value for df in at.dataframe if "pass@1" in df.value.columns)
    score, interval = r"[01]\.\d\d", r"\[[01]\.\d\d, [01]\.\d\d\]"
    for column in ("overall_mean", "pass@1", "top@1"):
        assert table[column].str.fullmatch(score).all(), table[column]
    for column in ("overall_mean", "pass@1"):  # 10 cases
        assert table[f"{column} 95% CI"].str.fullmatch(interval).all()
    assert (table["top@1 95% CI"] == "too few cases").all()  # 4 differential tasks, < 5 cases
    assert (table["pass@5"] == "–").sum() == 2  # human groups get pass@1 only
    share = r"[a-z ]+ \d+\.\d%"
    assert table["errors among wrong"].str.fullmatch(f"{share}(, {share})*").all()
    assert str(table["tasks"].dtype) == "Int64" and str(table["people"].dtype) == "Int64"
    assert len(at.get("image")) == 1, "the leaderboard's chart (no report is drawn yet)"
    history = next(df.value for df in at.dataframe if "status" in df.value.columns)
    assert history[["status", "synthetic"]].values.tolist()[-1] == ["finished", "yes"]
