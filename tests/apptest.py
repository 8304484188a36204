"""Helpers for AppTest page tests: a logged-in session on any page."""

import json
from pathlib import Path

from streamlit.testing.v1 import AppTest

from db.engine import session
from db.users import add_user
from ui.auth import LoggedIn

ROOT = Path(__file__).resolve().parents[1]


def make_user(name: str, role: str, password: str = "pw") -> LoggedIn:
    with session() as s:
        u = add_user(s, name=name, role=role, password=password)
        s.commit()
        return LoggedIn.of(u)


def app(user: LoggedIn | None = None, timeout: float = 30) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=timeout)
    if user is not None:
        at.session_state["user"] = user
    return at


def page(path: str, user: LoggedIn | None, timeout: float = 30) -> AppTest:
    """A page script run on its own, as a hand-typed URL reaches it, with `user` logged in."""
    at = AppTest.from_file(str(ROOT / path), default_timeout=timeout)
    if user is not None:
        at.session_state["user"] = user
    return at


def page_payload(at: AppTest) -> str:
    """Every element message the page sent to the browser (labels, texts, options, widget
    ids and keys), as text: what a blinding check must search."""
    return "\n".join(str(node.proto) for node in at._tree if getattr(node, "proto", None))


def viewer_args(at: AppTest) -> list[dict]:
    """The arguments the in-browser volume viewer received, one dict per viewer on the page."""
    return [json.loads(e.proto.json_args) for e in at.get("component_instance")
            if e.proto.component_name.endswith("nmb_volume_viewer")]
