"""Login and role-gated navigation: each role reaches only its pages, by menu or typed URL."""

import pytest

from tests.apptest import app, make_user, page
from ui.router import PAGES

ALL_PAGES = sorted({f for pages in PAGES.values() for f, *_ in pages})


def test_login_form_then_role_menu(sqlite_url: str) -> None:
    make_user("ana", "expert", password="s3cret")
    at = app().run()
    assert [t.label for t in at.text_input] == ["Username", "Password"]
    at.text_input[0].input("ana")
    at.text_input[1].input("wrong")
    at.get("form_submit_button")[0].click().run()
    assert any("wrong password" in e.value for e in at.error)
    assert "user" not in at.session_state
    at.text_input[1].input("s3cret")
    at.get("form_submit_button")[0].click().run()
    assert at.session_state["user"].role == "expert"
    assert not at.exception


@pytest.mark.slow
@pytest.mark.parametrize("role", list(PAGES))
def test_each_role_sees_only_its_pages(sqlite_url: str, role: str) -> None:
    user = make_user(f"user-{role}", role)
    mine = {f for f, *_ in PAGES[role]}
    for path in ALL_PAGES:
        at = page(path, user).run()
        assert not at.exception, (role, path, at.exception)
        refused = any("do not have access" in e.value for e in at.error)
        assert refused == (path not in mine), (role, path)
        if refused:
            assert not at.title, "a refused page must render nothing else"


@pytest.mark.slow
def test_logged_out_visitor_is_refused_everywhere(sqlite_url: str) -> None:
    for path in ALL_PAGES:
        at = page(path, None).run()
        assert any("do not have access" in e.value for e in at.error)
        assert not at.title


@pytest.mark.slow
@pytest.mark.parametrize("role", list(PAGES))
def test_router_registers_only_the_roles_pages(sqlite_url: str, role: str) -> None:
    user = make_user(f"nav-{role}", role)
    at = app(user).run()
    assert not at.exception
    titles = {f: t for pages in PAGES.values() for f, t, *_ in pages}
    mine = {f for f, *_ in PAGES[role]}
    for path in ALL_PAGES:
        try:
            at.switch_page(path)
        except ValueError:  # AppTest knows the router did not register it
            assert path not in mine
            continue
        at.run()
        assert not at.exception
        shown = [t.value for t in at.title] + [  # or the compact one-line header
            m.value.removeprefix("##### ") for m in at.markdown if m.value.startswith("##### ")]
        assert (titles[path] in shown) == (path in mine), (role, path, shown)
