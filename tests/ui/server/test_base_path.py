"""The app under a path prefix (`server.baseUrlPath`): the volume route, the viewers' URLs and
the login cookie's path carry it; the health endpoint answers under it."""


import pytest
from sqlalchemy import text
from starlette.applications import Starlette
from starlette.testclient import TestClient
from streamlit import config

from db.engine import HEAD_REVISION, engine_for
from db.users import LOGIN_COOKIE
from tests.services import free_port
from tests.ui.server.test_volume_route import study  # noqa: F401 (a fixture)
from ui.server import health, volume_server
from ui.server.base_path import base_path


@pytest.mark.parametrize(("setting", "path"), [
    ("", ""), ("nmb", "/nmb"), ("/nmb/", "/nmb"), ("tools/nmb/", "/tools/nmb")])
def test_the_prefix_is_one_leading_slash_and_no_trailing_one(setting: str, path: str) -> None:
    old = config.get_option("server.baseUrlPath")
    config.set_option("server.baseUrlPath", setting)
    try:
        assert base_path() == path
    finally:
        config.set_option("server.baseUrlPath", old)


def test_the_volume_route_and_its_urls_live_under_the_prefix(prefix, study) -> None:  # noqa: F811
    _, tokens, paths, _ = study
    client = TestClient(Starlette(routes=volume_server.routes()))
    url = volume_server.publish(paths[("series", "case0")], login_token=tokens["expert"])
    assert url.startswith("/nmb/nmb/volumes/")
    assert client.get(url).status_code == 403  # no login cookie
    client.cookies.set(LOGIN_COOKIE, tokens["expert"])
    assert client.get(url).status_code == 200
    assert client.get(url.removeprefix("/nmb")).status_code == 404  # not outside the prefix
    stored = paths[("series", "case1")]
    assert volume_server.publish_picture(stored, login_token="t").startswith("/nmb/nmb/volumes/")


def test_the_login_cookie_is_scoped_to_the_prefix(prefix) -> None:
    from ui.auth import _cookie_script

    script = _cookie_script("token", 60)
    assert f"{LOGIN_COOKIE}=token; Path=/nmb; Max-Age=60; SameSite=Strict'" in script
    assert "Secure" not in script  # no https page here; the browser test sees it under https


def _health(client: TestClient, path: str = "/nmb/healthz"):
    answer = client.get(path)
    assert answer.headers["cache-control"] == "no-store"
    return answer.status_code, answer.json()


def test_health_answers_ok_only_at_the_newest_revision(prefix, database_url: str) -> None:
    client = TestClient(Starlette(routes=health.routes()))
    assert _health(client) == (200, {"status": "ok", "db_revision": HEAD_REVISION})
    assert client.get("/healthz").status_code == 404  # under the prefix only
    with engine_for(database_url).begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '0012'"))
    assert _health(client) == (503, {"status": "unavailable", "db_revision": "0012"})


def test_health_answers_503_when_the_database_is_unreachable(prefix, monkeypatch) -> None:
    monkeypatch.setenv("NMB_DATABASE_URL",
                       f"postgresql+psycopg://nobody:secret@127.0.0.1:{free_port()}/study")
    client = TestClient(Starlette(routes=health.routes()))
    status, body = _health(client)
    assert (status, body) == (503, {"status": "unavailable", "db_revision": None})
