"""The converters write the bundle they build as UTF-8 whatever the locale: under a locale
whose encoding is ASCII (LC_ALL=C without Python's UTF-8 mode or locale coercion) a release
in Chinese, or a BIDS dataset named in it, was a UnicodeEncodeError traceback."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlmodel import Session, select

from db.engine import engine_for
from db.models import Case
from tests.db.release.release_files import write_release
from tests.db.sources.test_bids_import import TASK, _nifti

pytestmark = pytest.mark.slow  # starts processes or takes seconds: make test only

ROOT = Path(__file__).resolve().parents[3]
ASCII_LOCALE = {"LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}


def _nmb(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, **ASCII_LOCALE}
    return subprocess.run([sys.executable, "-m", "cli", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, encoding="utf-8", timeout=600)


def test_a_release_in_chinese_imports_under_an_ascii_locale(sqlite_url: str,
                                                           tmp_path: Path) -> None:
    files = write_release(tmp_path / "release", answers=False)
    done = _nmb("import", str(files[0]), "--from", "neural-medbench")
    assert done.returncode == 0, done.stderr
    with Session(engine_for(sqlite_url)) as s:
        assert s.get(Case, "direct-case_1").ehr.startswith("男, 45岁")


def test_a_bids_dataset_named_in_chinese_imports_under_an_ascii_locale(
        sqlite_url: str, tmp_path: Path) -> None:
    root = tmp_path / "ds"
    root.mkdir()
    (root / "dataset_description.json").write_text(json.dumps({"Name": "脑肿瘤"}))
    _nifti(root / "sub-01/anat/sub-01_T1w.nii.gz", 1)
    info = tmp_path / "CASES.json"
    info.write_text(json.dumps({"sub-01": {"title": "病例 1", "ehr": "头痛", "tasks": [TASK]}}))
    done = _nmb("import", str(root), "--from", "bids", "--case-info", str(info))
    assert done.returncode == 0, done.stderr
    with Session(engine_for(sqlite_url)) as s:
        assert [c.title for c in s.exec(select(Case))] == ["病例 1"]
