"""/models on the demo study: preflight sends one request and stores nothing, a run collects
the selected tasks and shows in the history."""

from pathlib import Path

from sqlmodel import select

from db.engine import session
from db.models import CollectionRun, Response, Task, User
from tests.apptest import page
from tests.llm.run_ends import add_abandoned
from tests.openai_server import OpenAIServer
from ui.auth import LoggedIn
from ui.plain_text import escape_markdown


def test_preflight_then_collect(demo_study: Path) -> None:
    with session() as s:
        u = s.exec(select(User).where(User.name == "demo-admin")).one()
        level1 = len(s.exec(select(Task).where(Task.level == 1)).all())
    admin = LoggedIn(id=u.id, name=u.name, role=u.role, demo=u.demo)
    with OpenAIServer() as srv:
        at = page("pages/models.py", admin, timeout=120).run()
        assert not at.exception and any("No model" in i.value for i in at.info)
        at.text_input(key="collect_model").input("local-vlm")
        at.text_input(key="collect_base_url").input(srv.base_url)
        at.multiselect[1].select(1).run()
        assert any(f"**{level1}** answers to collect" in m.value for m in at.markdown)
        next(b for b in at.button if b.label.startswith("Preflight")).click().run()
        assert not at.exception and not at.error, [e.value for e in at.error]
        assert any(m.value.startswith("Preflight passed") for m in at.success)
        assert len(srv.chat_requests()) == 1
        with session() as s:
            assert s.exec(select(CollectionRun)).first() is None
        next(b for b in at.button if b.label == "Collect").click().run()
        assert not at.exception and not at.error, [e.value for e in at.error]
        assert any(m.value.startswith(escape_markdown(f"Run 1: {level1} collected"))
                   for m in at.success)
        assert at.dataframe[0].value["run"].tolist() == [1]
        # the plan above is the one after the run (before: still the answers just collected)
        assert any("**0** answers to collect" in m.value for m in at.markdown)
        assert next(b for b in at.button if b.label == "Collect").disabled
    with session() as s:
        got = s.exec(select(Response).where(Response.model == "local-vlm")).all()
    assert len(got) == level1


def test_preflight_to_a_wrong_base_url_says_so(demo_study: Path) -> None:
    """The server answers 404 where the API is not (no /v1): the page says what to check."""
    with session() as s:
        admin = LoggedIn.of(s.exec(select(User).where(User.name == "demo-admin")).one())
    with OpenAIServer() as srv:
        at = page("pages/models.py", admin, timeout=120).run()
        at.text_input(key="collect_model").input("local-vlm")
        at.text_input(key="collect_base_url").input(srv.base_url.removesuffix("/v1")).run()
        next(b for b in at.button if b.label.startswith("Preflight")).click().run()
    assert not at.exception and not at.success
    assert [e.value for e in at.error] and "or the base URL is wrong" in at.error[0].value
    assert any(c.value.startswith("Details: HTTP 404") for c in at.caption)


def test_a_run_whose_process_is_gone_shows_as_interrupted(demo_study: Path) -> None:
    """A collection run left "running" by a killed process is marked when the page shows it."""
    with session() as s:
        admin = LoggedIn.of(s.exec(select(User).where(User.name == "demo-admin")).one())
        run_id = add_abandoned(s, CollectionRun(model="local-vlm", settings={},
                                                template_version="t", template_hash="h",
                                                n_items=3))
    at = page("pages/models.py", admin, timeout=120).run()
    assert not at.exception
    assert at.dataframe[0].value[["run", "status"]].values.tolist() == [[run_id, "interrupted"]]
def test_preflight_to_a_server_answering_html_says_so(demo_study: Path) -> None:
    """A 200 with a web page (a proxy's login page): the page says it is not a chat completion,
    the details name the content type, and nothing is stored."""
    with session() as s:
        admin = LoggedIn.of(s.exec(select(User).where(User.name == "demo-admin")).one())
    with OpenAIServer() as srv:
        srv.inject_when("", "html")
        at = page("pages/models.py", admin, timeout=120).run()
        at.text_input(key="collect_model").input("local-vlm")
        at.text_input(key="collect_base_url").input(srv.base_url).run()
        next(b for b in at.button if b.label.startswith("Preflight")).click().run()
        assert len(srv.chat_requests()) == 1  # refused, not retried
    assert not at.exception and not at.success
    assert [e.value for e in at.error] and "not a chat completion" in at.error[0].value
    assert any("text/html body" in c.value.replace("\\", "") for c in at.caption)
    with session() as s:
        assert s.exec(select(CollectionRun)).first() is None


def test_a_key_for_plain_http_to_another_machine_is_warned_of(demo_study: Path,
                                                              monkeypatch) -> None:
    with session() as s:
        u = s.exec(select(User).where(User.name == "demo-admin")).one()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-sent")
    at = page("pages/models.py", LoggedIn(id=u.id, name=u.name, role=u.role, demo=u.demo)).run()
    at.text_input(key="collect_base_url").input("http://127.0.0.1:8000/v1").run()
    assert not any("plain http" in w.value for w in at.warning)
    at.text_input(key="collect_base_url").input("http://[::1").run()  # before: a ValueError
    assert not at.exception, at.exception
    at.text_input(key="collect_base_url").input("http://10.0.0.5:8000/v1").run()
    assert any(w.value.startswith(escape_markdown("http://10.0.0.5:8000/v1 is plain http to "
                                                  "another machine")) for w in at.warning)
