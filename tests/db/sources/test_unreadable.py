"""A study folder the server's user may read only in part: a DICOM series folder, a BIDS
subject, session or datatype folder, participants.tsv or a volume it may not read is named in
one line (exit 2, no traceback, the study unchanged), never left out in silence (a case
imported without its FLAIR) and never a crash (indexed_gzip, under nibabel, killed the
process on a .nii.gz it could not open). `nmb` runs as a real process without the capabilities
that let root read anything (setpriv), as a server's account would."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.db.sources.dicom_files import pacs_export
from tests.db.sources.test_bids_import import _cases, dataset
from tests.db.sources.test_dicom_import import CASE

pytestmark = pytest.mark.slow  # starts processes or takes seconds: make test only

ROOT = Path(__file__).resolve().parents[3]
AS_AN_ACCOUNT = (["setpriv", "--bounding-set", "-dac_override,-dac_read_search"]
                 if os.geteuid() == 0 else [])


def _nmb(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*AS_AN_ACCOUNT, sys.executable, "-m", "cli", *args], cwd=ROOT,
                          capture_output=True, text=True, env=dict(os.environ), timeout=120)


def _cases_in_study() -> int:
    out = _nmb("status", "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])["cases"]


def _refused_while_unreadable(path: Path, *args: str) -> str:
    """`nmb import ARGS` while `path` has mode 000: its one line of error."""
    mode = path.stat().st_mode
    path.chmod(0)
    try:
        out = _nmb("import", *args)
    finally:
        path.chmod(mode)
    assert out.returncode == 2, out.stdout + out.stderr
    assert "Traceback" not in out.stderr and len(out.stderr.splitlines()) == 1, out.stderr
    assert _cases_in_study() == 0
    return out.stderr.strip()


@pytest.mark.parametrize(("part", "error"), [
    ("S004", "nmb: S004: cannot read: Permission denied"),  # imported without it before
    (".", "nmb: plain: cannot read: Permission denied"),
])
def test_an_unreadable_dicom_folder_is_named(tmp_path: Path, part: str, error: str) -> None:
    pacs_export(tmp_path / "plain", dicomdir=False)
    info = tmp_path / "CASE.json"
    info.write_text(json.dumps(CASE))
    assert _refused_while_unreadable(tmp_path / "plain" / part, str(tmp_path / "plain"),
                                     "--from", "dicom", "--case-info", str(info)) == error


@pytest.mark.parametrize(("part", "error"), [
    ("sub-01/anat", "sub-01/anat: cannot read: Permission denied"),  # left out before
    ("sub-01/dwi", "sub-01/dwi: cannot read: Permission denied"),  # left out before
    ("sub-02", "sub-02: cannot read: Permission denied"),  # a traceback before
    ("sub-02/ses-pre", "sub-02/ses-pre: cannot read: Permission denied"),
    ("participants.tsv", "participants.tsv: cannot read: Permission denied"),  # a traceback
    ("sub-01/anat/sub-01_FLAIR.nii.gz",  # a segmentation fault before
     "sub-01/anat/sub-01_FLAIR.nii.gz: is not a usable image: cannot read: Permission denied"),
])
def test_an_unreadable_part_of_a_bids_dataset_is_named(tmp_path: Path, part: str,
                                                       error: str) -> None:
    root = dataset(tmp_path / "bids")
    info = _cases(tmp_path)
    assert _refused_while_unreadable(root / part, str(root), "--from", "bids",
                                     "--case-info", str(info)) == f"nmb: {error}"


def test_an_unreadable_bundle_folder_is_one_line_naming_the_file(tmp_path: Path) -> None:
    """Any other file the account may not read or write: `cli.main`'s one line (a traceback
    before)."""
    bundle = tmp_path / "bundle"
    shutil.copytree(ROOT / "examples" / "sample-bundle", bundle)
    assert _refused_while_unreadable(bundle, str(bundle)) == \
        f"nmb: {bundle / 'bundle.json'}: Permission denied"
