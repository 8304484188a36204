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


def test_only_the_cli_imports_the_demo() -> None:
    """demo/ sits on top of db and calibration: no package imports it (cli.py and tests do)."""
    files = [ROOT / "app.py", *(p for pkg in ("db", "rubric", "imaging", "calibration", "ui", "pages")
                                for p in (ROOT / pkg).rglob("*.py"))]
    offenders = [str(p.relative_to(ROOT)) for p in files
                 if "import demo" in p.read_text() or "from demo" in p.read_text()]
    assert offenders == []
