"""The server logs to stdout (`ui.server.logs`): its own lines, Streamlit's and a warning of the
health endpoint all arrive there and nothing on stderr; a mistyped `NMB_LOG_LEVEL` stops it
with one line."""

import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.services import free_port

pytestmark = pytest.mark.slow  # starts processes or takes seconds: make test only

ROOT = Path(__file__).resolve().parents[3]


def _serve(env: dict[str, str], out: Path, err: Path, port: int) -> subprocess.Popen:
    with out.open("wb") as stdout, err.open("wb") as stderr:
        return subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "serve.py", "--server.address",
             "127.0.0.1", "--server.port", str(port), "--server.headless", "true",
             "--browser.gatherUsageStats", "false", "--server.baseUrlPath", "nmb"],
            cwd=ROOT, env={**os.environ, **env}, stdout=stdout, stderr=stderr)


def _status(url: str) -> int | None:
    try:
        with urllib.request.urlopen(url, timeout=2) as answer:
            return answer.status
    except urllib.error.HTTPError as refused:
        return refused.code
    except OSError:
        return None


def test_every_line_goes_to_stdout(tmp_path: Path) -> None:
    port, out, err = free_port(), tmp_path / "out", tmp_path / "err"
    unreachable = f"postgresql+psycopg://nobody:secret@127.0.0.1:{free_port()}/study"
    proc = _serve({"NMB_HOME": str(tmp_path / "home"), "NMB_DATABASE_URL": unreachable},
                  out, err, port)
    try:
        deadline = time.monotonic() + 120
        while _status(f"http://127.0.0.1:{port}/nmb/_stcore/health") != 200:
            assert proc.poll() is None and time.monotonic() < deadline, err.read_text()
            time.sleep(0.2)
        assert _status(f"http://127.0.0.1:{port}/nmb/healthz") == 503
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    logged = out.read_text()
    assert "INFO nmb: serving under /nmb/ with 0 trusted proxy network(s)" in logged
    assert ("WARNING ui.server.health: health: the database is unreachable or empty "
            "(expected revision") in logged
    assert "secret" not in logged
    assert err.read_text() == ""


def test_a_mistyped_log_level_stops_the_server_with_one_line(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "streamlit", "run", "serve.py", "--server.address", "127.0.0.1",
         "--server.port", str(free_port()), "--server.headless", "true"],
        cwd=ROOT, env={**os.environ, "NMB_HOME": str(tmp_path), "NMB_LOG_LEVEL": "loud"},
        capture_output=True, text=True, timeout=120)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines()[-1] == (
        "nmb: NMB_LOG_LEVEL: 'LOUD' is not one of DEBUG, INFO, WARNING, ERROR")
    assert "Traceback" not in out.stderr
