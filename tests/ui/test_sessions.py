"""Sessions in AppTest: every page run re-checks the account, so disabling it, a changed role
or a logout in another browser ends an open session, and its page can no longer write; a run
that starts after a single sign-on logout leaves the browser on its way to the provider; a run
of wrong passwords locks the login out."""

import re

import pytest
from sqlmodel import select
from streamlit.testing.v1 import AppTest, local_script_runner

from db.engine import session
from db.models import ExpertScore, User
from db.raters.assignments import assign
from db.rubrics import ensure_rubric
from db.users import NAME_FAILURES, disable_user, open_login, set_email
from tests.apptest import app, make_user, page
from tests.factories import make_study
from ui.auth import LoggedIn
from ui.server import logout_route


def _ended(at) -> bool:
    """The session is over: no user in it, and the router shows the login form at the
    address of the page it was on (nothing of that page)."""
    return "user" not in at.session_state and \
        [t.value for t in at.title] == ["Neural-MedBench Studio"] and \
        [t.label for t in at.text_input] == ["Username", "Password"]


def test_disabling_an_account_ends_its_open_session(sqlite_url: str) -> None:
    at = app(make_user("ann", "student")).run()
    assert not _ended(at) and not at.exception and at.session_state["user"].name == "ann"
    with session() as s:
        disable_user(s, name="ann", actor="admin")
        s.commit()
    at.run()
    assert _ended(at) and not at.exception


def test_a_changed_role_ends_the_open_session(sqlite_url: str) -> None:
    at = app(make_user("ann", "student")).run()
    with session() as s:
        s.exec(select(User).where(User.name == "ann")).one().role = "admin"
        s.commit()
    at.run()
    assert _ended(at)


def _with_login(user: LoggedIn) -> AppTest:
    """The app with `user` logged in by a login token of its own (one browser)."""
    at = app(user)
    with session() as s:
        at.session_state["login_token"] = open_login(s, s.get(User, user.id))
    return at


def _log_out(at: AppTest) -> None:
    """What the browser does with the page's Log out form: a POST of its check, with the
    login cookie, to the form's action (ui.server.logout_route; the HTTP side:
    tests/ui/server/test_logout_route.py)."""
    form = next(h.proto.body for h in at.get("html") if "nmb-logout" in h.proto.body)
    action = re.search(r'action="([^"]*)"', form).group(1)
    check = re.search(rf'name="{logout_route.CHECK_FIELD}" value="([0-9a-f]{{64}})"', form)
    assert action == logout_route.logout_url() == "/nmb/logout"
    assert logout_route.end_login(at.session_state["login_token"], check.group(1))


@pytest.mark.slow
def test_logout_ends_the_sessions_of_the_user_in_other_browsers(sqlite_url: str) -> None:
    ann, bob = make_user("ann", "student"), make_user("bob", "student")
    here, there, other = _with_login(ann).run(), _with_login(ann).run(), _with_login(bob).run()
    _log_out(here)
    for at in (here, there, other):
        at.run()
    assert _ended(here) and _ended(there) and not _ended(other)


def _redirects(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The `st.login`/`st.logout` redirects left for the browser once AppTest's runs of a
    click end (filled as they end). AppTest sends nothing between the runs of one click (its
    runner empties its queue at each run's start, as the server's session does, and never
    flushes): the server's worst case, as it flushes only every few milliseconds."""
    urls: list[str] = []
    parse = local_script_runner.parse_tree_from_messages

    def spy(messages):
        urls.extend(m.auth_redirect.url for m in messages if m.HasField("auth_redirect"))
        return parse(messages)

    monkeypatch.setattr(local_script_runner, "parse_tree_from_messages", spy)
    return urls


def test_a_run_after_a_single_sign_on_logout_leaves_the_browser_on_its_way_to_the_provider(
        sqlite_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Log out of a single sign-on session: the browser follows the logout route through
    Streamlit's /auth/logout to the provider. A run of that page that starts meanwhile
    (another click) ends the session without a redirect of its own, which would replace that
    navigation after Streamlit's cookie is gone; the same identity's session in another
    browser, whose login that logout ended as well, is sent to /auth/logout (its own
    Streamlit cookie, the provider's session there). Neither signs on again with the identity
    the page still holds."""
    with session() as s:
        make_user("ann", "expert")
        user = LoggedIn.of(set_email(s, name="ann", email="ann@hospital.example"))
        s.commit()
    here, there = _with_login(user), _with_login(user)
    for at in (here, there):
        at.secrets["auth"] = {"redirect_uri": "http://localhost:8501/oauth2callback"}
        at.user = {"is_logged_in": True, "email": "ann@hospital.example", "exp": 4102444800}
        at.run()
    redirects = _redirects(monkeypatch)
    _log_out(here)
    here.run()
    assert _ended(here) and not here.exception and redirects == []
    there.run()
    assert _ended(there) and redirects == ["/auth/logout"]


def test_a_disabled_raters_open_page_saves_nothing(sqlite_url: str) -> None:
    with session() as s:
        make_study(s, experts=1)
        rubric = ensure_rubric(s, "neurology-v1")
        assign(s, rubric_hash=rubric.content_hash, raters=["expert1"], overlap=1)
        s.commit()
        expert = s.exec(select(User).where(User.name == "expert1")).one()
    at = page("pages/score.py", LoggedIn.of(expert)).run()
    assert at.text_area, "the rubric form is shown"
    assert at.radio and not [r for r in at.radio if r.proto.captions]  # v1: no short anchors
    with session() as s:
        disable_user(s, name="expert1")
        s.commit()
    at.text_area[0].input("written after disabling").run()  # the draft-saving callback
    assert any("do not have access" in e.value for e in at.error)
    with session() as s:
        assert s.exec(select(ExpertScore)).all() == []


def test_wrong_passwords_lock_the_login_out(sqlite_url: str) -> None:
    make_user("ann", "expert", password="right")
    at = app().run()
    for password in ["wrong"] * NAME_FAILURES + ["right"]:
        at.text_input[0].input("ann")
        at.text_input[1].input(password)
        at.get("form_submit_button")[0].click().run()
    assert any("Too many failed logins" in e.value for e in at.error)
    assert "user" not in at.session_state


def test_a_refused_identity_logs_out_of_single_sign_on_by_a_navigation(
        sqlite_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """An identity without an account: its one line, and "Log out of single sign-on" as a
    form that the browser sends to Streamlit's /auth/logout itself (on to the provider), not a
    button whose `st.logout()` redirect a second click's run would drop."""
    at = app()
    at.secrets["auth"] = {"redirect_uri": "http://localhost:8501/oauth2callback"}
    at.user = {"is_logged_in": True, "email": "nobody@hospital.example", "exp": 4102444800}
    redirects = _redirects(monkeypatch)
    at.run()
    assert [e.value for e in at.error] == [
        "No account has the e\\-mail nobody@hospital\\.example; ask an admin to add it\\."]
    form = next(h.proto.body for h in at.get("html") if "nmb-logout" in h.proto.body)
    assert re.search(r'<form class="nmb-logout" method="get" action="/auth/logout">'
                     r'<button type="submit">Log out of single sign-on</button></form>', form)
    assert not [b for b in at.button if "Log out" in b.label] and redirects == []
