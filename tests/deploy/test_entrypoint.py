"""deploy/entrypoint.sh run natively, as the container runs it: configuration from the
environment alone, migrations at start against a real PostgreSQL, the app answering, the
secrets file private and out of the logs, a sign-on sent to the provider with the configured
prompt, and a database newer than the code refused."""

import http.server
import json
import os
import stat
import subprocess
import sys
import threading
import time
import tomllib
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from sqlalchemy import create_engine, text

from db.engine import HEAD_REVISION
from tests.services import free_port

ROOT = Path(__file__).resolve().parents[2]
ENTRYPOINT = ROOT / "deploy" / "entrypoint.sh"
CLIENT_SECRET = "client-secret-d0-not-log-\"quoted\\"
COOKIE_SECRET = "cookie-secret-never-in-a-log-0123456789abcdef"
DB_PASSWORD = "db-password-never-logged"

pytestmark = pytest.mark.postgres


def _revision(url: str) -> str | None:
    eng = create_engine(url)
    try:
        with eng.connect() as conn:
            return conn.execute(text("SELECT version_num FROM alembic_version")).scalar()
    finally:
        eng.dispose()


@pytest.fixture
def discovery() -> Iterator[str]:
    """The URL of an OpenID Connect discovery document served on loopback: all the app reads
    of a provider before it sends the browser to the provider's authorization endpoint."""

    class Metadata(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            issuer = f"http://127.0.0.1:{self.server.server_address[1]}"
            body = json.dumps({"issuer": issuer, "authorization_endpoint": f"{issuer}/auth",
                               "token_endpoint": f"{issuer}/token", "jwks_uri": f"{issuer}/jwks",
                               "response_types_supported": ["code"]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Metadata)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/.well-known/openid-configuration"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def deploy_env(postgres_server, discovery: str, tmp_path: Path) -> dict[str, str]:
    """The container's environment: a new PostgreSQL database (its URL with a password, which
    the trust authentication of the test server ignores), a fresh NMB_HOME, single sign-on
    with `prompt=login`."""
    url = postgres_server.create_database().replace("postgres@", f"postgres:{DB_PASSWORD}@")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NMB_", "STREAMLIT_"))}
    env.update({
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        "NMB_DATABASE_URL": url,
        "NMB_HOME": str(tmp_path / "home"),
        "NMB_RUNTIME_DIR": str(tmp_path / "run"),
        "NMB_PORT": str(free_port()),
        "NMB_BASE_PATH": "nmb",
        "NMB_TRUSTED_PROXIES": "127.0.0.1",
        "NMB_OIDC_CLIENT_ID": "nmb-studio",
        "NMB_OIDC_CLIENT_SECRET": CLIENT_SECRET,
        "NMB_OIDC_METADATA_URL": discovery,
        "NMB_OIDC_REDIRECT_URI": "https://hospital.example/nmb/oauth2callback",
        "NMB_AUTH_COOKIE_SECRET": COOKIE_SECRET,
        "NMB_OIDC_PROMPT": "login",
    })
    return env


@pytest.fixture
def started(deploy_env: dict[str, str], tmp_path: Path) -> Iterator[tuple[subprocess.Popen, Path]]:
    """The entrypoint running; its stdout and stderr go to files (read after it stops)."""
    out = tmp_path / "stdout"
    with out.open("wb") as o, (tmp_path / "stderr").open("wb") as e:
        proc = subprocess.Popen(["sh", str(ENTRYPOINT)], env=deploy_env, cwd=tmp_path,
                                stdout=o, stderr=e)
    try:
        yield proc, out
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _health(url: str, proc: subprocess.Popen, deadline: float) -> str:
    """The body of the first successful answer of `url`, or the failure when the entrypoint
    stopped or `deadline` passed."""
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                return r.read().decode()
        except OSError as err:
            if proc.poll() is not None or time.monotonic() > deadline:
                return f"no answer ({err}); entrypoint exit code {proc.poll()}"
            time.sleep(0.5)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def _authorization_request(base: str, secrets: Path) -> dict[str, list[str]]:
    """The query of the provider URL the app sends a browser to at "Log in with single sign-on"
    (Streamlit's `/auth/login` with a provider token signed with the secrets file's cookie
    secret, as `st.login` makes it)."""
    token = subprocess.run(
        [sys.executable, "-c", "import sys; from streamlit import config; "
         "config.set_option('secrets.files', sys.argv[1:]); "
         "from streamlit.auth_util import encode_provider_token; "
         "print(encode_provider_token('default'))", str(secrets)],
        capture_output=True, text=True, check=True).stdout.strip()
    try:
        urllib.request.build_opener(_NoRedirect).open(f"{base}/auth/login?provider={token}",
                                                      timeout=10).close()
    except urllib.error.HTTPError as redirect:
        assert redirect.code == 302, redirect.read()
        return parse_qs(urlsplit(redirect.headers["Location"]).query)
    raise AssertionError("/auth/login did not redirect to the provider")


def test_the_entrypoint_migrates_writes_private_secrets_and_serves_under_the_prefix(
        started, deploy_env: dict[str, str], tmp_path: Path) -> None:
    proc, out = started
    base = f"http://127.0.0.1:{deploy_env['NMB_PORT']}/nmb"
    assert _health(f"{base}/_stcore/health", proc, time.monotonic() + 120) == "ok"
    with urllib.request.urlopen(f"{base}/healthz", timeout=10) as r:
        assert json.load(r) == {"status": "ok", "db_revision": HEAD_REVISION}
    with urllib.request.urlopen(f"{base}/", timeout=10) as r:
        assert r.status == 200 and "<html" in r.read().decode().lower()
    # Streamlit read the secrets file: a callback without state finds the redirect URI's origin
    # there (without it, it logs "misconfigured origin for `redirect_uri` in secrets")
    urllib.request.urlopen(f"{base}/oauth2callback", timeout=10).close()

    assert _revision(deploy_env["NMB_DATABASE_URL"]) == HEAD_REVISION  # migrated at start
    assert Path(deploy_env["NMB_HOME"]).is_dir()
    secrets = Path(deploy_env["NMB_RUNTIME_DIR"]) / "secrets.toml"
    assert stat.S_IMODE(secrets.stat().st_mode) == 0o600
    auth = tomllib.loads(secrets.read_text())["auth"]
    assert auth == {"redirect_uri": deploy_env["NMB_OIDC_REDIRECT_URI"], "cookie_secret": COOKIE_SECRET,
                    "client_id": "nmb-studio", "client_secret": CLIENT_SECRET,
                    "server_metadata_url": deploy_env["NMB_OIDC_METADATA_URL"],
                    "client_kwargs": {"prompt": "login"}}
    asked = _authorization_request(base, secrets)  # NMB_OIDC_PROMPT reaches the provider
    assert (asked["prompt"], asked["client_id"]) == (["login"], ["nmb-studio"])

    proc.terminate()
    proc.wait(timeout=30)
    log = out.read_text()
    assert "single sign-on on" in log and "database is at the newest revision" in log
    assert "Missing provider for OAuth callback" in log and "misconfigured origin" not in log
    assert (tmp_path / "stderr").read_text() == ""  # one stream: stdout
    for secret in (CLIENT_SECRET, COOKIE_SECRET, DB_PASSWORD):
        assert secret not in log


def test_a_database_newer_than_the_code_stops_the_start_in_one_line(
        deploy_env: dict[str, str], tmp_path: Path) -> None:
    url = deploy_env["NMB_DATABASE_URL"]
    first = subprocess.run([sys.executable, "-m", "cli", "db", "upgrade"], cwd=ROOT, env=deploy_env,
                           capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    eng = create_engine(url)
    with eng.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '0099'"))
    eng.dispose()

    run = subprocess.run(["sh", str(ENTRYPOINT)], env=deploy_env, cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 2
    refusal = [line for line in run.stdout.splitlines() if "downgrade" in line]
    assert refusal == [f"nmb: the database is at revision '0099', newer than this version of the app "
                       f"(newest {HEAD_REVISION}): a downgrade is refused; run the newer version, or "
                       "restore a backup taken before the upgrade"]
    assert "Traceback" not in run.stdout and run.stderr == ""
    assert _revision(url) == "0099"  # unchanged


def test_a_database_that_does_not_answer_stops_the_start_in_one_line(
        deploy_env: dict[str, str], tmp_path: Path) -> None:
    closed = free_port()  # nothing listens there
    env = {**deploy_env, "NMB_DB_WAIT": "1",
           "NMB_DATABASE_URL": f"postgresql+psycopg://nmb:{DB_PASSWORD}@127.0.0.1:{closed}/nmb"}
    run = subprocess.run(["sh", str(ENTRYPOINT)], env=env, cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and run.stderr == ""
    line = run.stdout.splitlines()[-1]
    assert line.startswith(f"nmb: the database postgresql+psycopg://nmb:***@127.0.0.1:{closed}/nmb "
                           "does not answer after 1 s: ")
    assert len(run.stdout.splitlines()) == 2  # the settings' line, then this one
    assert DB_PASSWORD not in run.stdout and "Traceback" not in run.stdout


@pytest.mark.parametrize("wait", ["soon", "\u00b2", "3601"])
def test_a_wait_that_is_not_a_number_of_seconds_is_one_line(wait: str) -> None:
    env = {**os.environ, "NMB_DB_WAIT": wait,
           "NMB_DATABASE_URL": "postgresql+psycopg://nmb@127.0.0.1:1/nmb"}
    run = subprocess.run([sys.executable, str(ENTRYPOINT.parent / "wait_for_database.py")],
                         env=env, capture_output=True, text=True, timeout=60)
    assert (run.returncode, run.stdout) == (2, "")
    assert run.stderr == f"nmb: NMB_DB_WAIT: {wait!r} is not a number of seconds from 0 to 3600\n"


def test_a_database_that_is_not_utf8_stops_the_start_in_one_line(
        postgres_server, deploy_env: dict[str, str], tmp_path: Path) -> None:
    import psycopg

    name = f"ascii{time.time_ns()}"
    with psycopg.connect(f"host=127.0.0.1 port={postgres_server.port} user=postgres",
                         autocommit=True) as c:
        c.execute(f"CREATE DATABASE \"{name}\" ENCODING 'SQL_ASCII' TEMPLATE template0 LC_COLLATE 'C' "
                  "LC_CTYPE 'C'")
    env = {**deploy_env, "NMB_DATABASE_URL": postgres_server.url(name)}
    run = subprocess.run(["sh", str(ENTRYPOINT)], env=env, cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and "Traceback" not in run.stdout
    assert run.stdout.splitlines()[-1] == (
        f"nmb: the database postgresql+psycopg://postgres@127.0.0.1:{postgres_server.port}/{name} "
        "stores SQL_ASCII, not UTF8: create it with ENCODING 'UTF8' (docs/deploy.md)")
    with psycopg.connect(f"host=127.0.0.1 port={postgres_server.port} user=postgres dbname={name}") as c:
        assert c.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchone() == (0,)
