"""Shared fixtures: a temporary NMB_HOME, the study database on SQLite and PostgreSQL; the
two lanes (`make check` runs the tests not marked `slow`, `make test` runs all)."""

import multiprocessing.process
import os
import platform
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.services import PostgresServer, postgres_available, require

#: A test is slow (the full lane only) when it needs a service, a browser or the demo build.
SLOW_MARKERS = {"postgres", "browser", "nginx", "oidc"}
SLOW_FIXTURES = {"demo_template", "demo_study", "postgres_server"}


# The openai client sends the platform with its first request; Python reads the processor by
# running `uname -p` once per process. Read here, before any test, so the fast lane's guard
# does not catch that process in whichever test happens to send first.
platform.platform()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if (SLOW_MARKERS & {m.name for m in item.iter_markers()}
                or SLOW_FIXTURES & set(getattr(item, "fixturenames", ()))):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True)
def fast_lane_starts_no_process(request: pytest.FixtureRequest, monkeypatch) -> None:
    """In the fast lane (`-m "not slow"`), a test that starts a process fails with the fix."""
    if "not slow" not in (request.config.option.markexpr or "") or request.node.get_closest_marker("slow"):
        return

    def refuse(*_args, **_kwargs):
        pytest.fail("this test starts a process: mark it @pytest.mark.slow (make check runs none)",
                    pytrace=False)

    monkeypatch.setattr(subprocess.Popen, "__init__", refuse)
    monkeypatch.setattr(multiprocessing.process.BaseProcess, "start", refuse)


@pytest.fixture(autouse=True)
def nmb_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own NMB_HOME and, unless it asks for PostgreSQL, its own SQLite file."""
    home = tmp_path / "nmb-home"
    monkeypatch.setenv("NMB_HOME", str(home))
    monkeypatch.delenv("NMB_DATABASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    return home


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    ok, reason = postgres_available()
    require(ok, reason)
    server = PostgresServer().start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def migrated_sqlite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite study database migrated to the newest revision once per test session; tests
    get a copy (running every migration per test cost most of a database test's time)."""
    from db.engine import engine_for, upgrade

    path = tmp_path_factory.mktemp("migrated") / "study.db"
    url = f"sqlite:///{path}"
    upgrade(url)
    engine_for(url).dispose()
    return path


@pytest.fixture(scope="session")
def migrated_postgres(postgres_server: PostgresServer) -> str:
    """The name of a PostgreSQL database migrated once per session, the template of each
    test's database (CREATE DATABASE ... TEMPLATE)."""
    from db.engine import engine_for, upgrade

    url = postgres_server.create_database()
    upgrade(url)
    engine_for(url).dispose()  # a template must have no connections
    return url.rsplit("/", 1)[1]


def _fresh_sqlite(template: Path) -> str:
    from db.engine import database_url as current_url
    from db.engine import nmb_home

    nmb_home().mkdir(parents=True, exist_ok=True)
    shutil.copyfile(template, nmb_home() / "study.db")
    return current_url()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest, nmb_home: Path, monkeypatch) -> Iterator[str]:
    """The URL of a fresh, migrated study database, once on SQLite and once on PostgreSQL; its
    pooled connections are closed after the test (the session's one PostgreSQL server allows
    100 at once, and every test's database has its own engine)."""
    from db.engine import engine_for

    if request.param == "postgres":
        server = request.getfixturevalue("postgres_server")
        template = request.getfixturevalue("migrated_postgres")
        url = server.create_database(template=template)
        monkeypatch.setenv("NMB_DATABASE_URL", url)
    else:
        url = _fresh_sqlite(request.getfixturevalue("migrated_sqlite"))
    yield url
    engine_for(url).dispose()


@pytest.fixture
def sqlite_url(nmb_home: Path, migrated_sqlite: Path) -> str:
    """A fresh, migrated SQLite study database (for tests that need only one backend)."""
    return _fresh_sqlite(migrated_sqlite)


@pytest.fixture(scope="session")
def demo_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo study (2 mm images) built once per test session, into its own NMB_HOME."""
    import subprocess
    import sys

    home = tmp_path_factory.mktemp("demo-template")
    env = {**os.environ, "NMB_HOME": str(home)}
    env.pop("NMB_DATABASE_URL", None)
    subprocess.run([sys.executable, "-m", "cli", "demo", "--resolution", "2"], check=True,
                   cwd=Path(__file__).resolve().parents[1], env=env, capture_output=True,
                   timeout=600)
    return home


@pytest.fixture
def demo_study(demo_template: Path, nmb_home: Path) -> Path:
    """A private copy of the demo study as this test's NMB_HOME (SQLite)."""
    shutil.copytree(demo_template, nmb_home, dirs_exist_ok=True)
    return nmb_home
