"""The code base stays `ruff` clean, and no package below the pages imports Streamlit."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_clean() -> None:
    out = subprocess.run([sys.executable, "-m", "ruff", "check", "."], cwd=ROOT,
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_packages_never_import_streamlit() -> None:
    offenders = [str(p.relative_to(ROOT)) for pkg in ("db", "rubric", "imaging", "calibration")
                 for p in (ROOT / pkg).rglob("*.py")
                 if "import streamlit" in p.read_text() or "from streamlit" in p.read_text()]
    assert offenders == []
