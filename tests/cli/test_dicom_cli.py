"""`nmb import DIR --from dicom` and `--from bids` as docs/commands.md runs them: a real process,
exit codes."""

import json
import sys
from pathlib import Path

import pytest
from sqlmodel import Session, select

import cli
from db.engine import engine_for
from db.models import Case, Series
from tests.cli.test_cli import nmb
from tests.db.bundle.bundles import snapshot
from tests.db.sources.dicom_files import pacs_export
from tests.db.sources.test_bids_import import TASK, dataset

pytestmark = pytest.mark.slow  # starts processes or takes seconds: make test only


def test_readme_dicom_import_and_its_mistakes(nmb_home: Path, tmp_path: Path) -> None:
    pacs_export(tmp_path / "export")
    info = Path(__file__).resolve().parents[2] / "examples" / "dicom" / "CASE.json"
    out = nmb("import", str(tmp_path / "export"), "--from", "dicom", "--case-info", str(info))
    assert out.returncode == 0, out.stderr
    assert "imported 1 case, 3 series, 2 tasks" in out.stdout
    assert "left out 1 SR without pixels; series 1: localizer (3 files)" in out.stdout
    assert "PatientName" in out.stdout and "QUIXOTE" not in out.stdout + out.stderr
    before = snapshot(f"sqlite:///{nmb_home / 'study.db'}")
    missing = nmb("import", str(tmp_path / "export"), "--from", "dicom")
    assert missing.returncode == 2
    assert missing.stderr == "nmb: --from dicom needs --case-info CASE.json (docs/bundle-format.md)\n"
    bad = tmp_path / "CASE.json"
    bad.write_text(json.dumps({"case_id": "x", "title": "t", "ehr": "", "masks": []}))
    refused = nmb("import", str(tmp_path / "export"), "--from", "dicom", "--case-info", str(bad))
    assert refused.returncode == 2
    assert refused.stderr == "nmb: CASE.json: masks comes from the images: leave it out\n"
    assert snapshot(f"sqlite:///{nmb_home / 'study.db'}") == before


def test_readme_bids_import(nmb_home: Path, tmp_path: Path) -> None:
    """`nmb import bids-dataset/ --from bids --case-info CASES.json`, CASES.json as docs/bundle-format.md
    shows it (title from a participants.tsv column)."""
    root = dataset(tmp_path / "bids-dataset")
    cases = tmp_path / "CASES.json"
    cases.write_text(json.dumps({
        "sub-01": {"title": "Subject 1, {age} years", "ehr": "Sex {sex}.", "tasks": [TASK]},
        "sub-02": {"title": "Subject 2", "ehr": "", "tasks": [TASK | {"task_id": "dx2"}]}}))
    out = nmb("import", str(root), "--from", "bids", "--case-info", str(cases))
    assert out.returncode == 0, out.stderr
    assert "imported 3 cases, 7 series, 3 tasks" in out.stdout
    assert "sub-01: FLAIR, MP2RAGE, T1, T1C, DWI" in out.stdout
    assert "left out sub-01/anat/sub-01_defacemask.nii.gz" in out.stdout
    assert 'named by their file, to confirm: sub-01 "MP2RAGE"' in out.stdout
    with Session(engine_for(f"sqlite:///{nmb_home / 'study.db'}")) as s:
        assert s.get(Case, "sub-01").title == "Subject 1, 54 years"
        assert sorted((x.case_id, x.sequence) for x in s.exec(select(Series))) == [
            ("sub-01", "DWI"), ("sub-01", "FLAIR"), ("sub-01", "MP2RAGE"), ("sub-01", "T1"),
            ("sub-01", "T1C"),
            ("sub-02_ses-post", "T2"), ("sub-02_ses-pre", "T2")]
    again = nmb("import", str(root), "--from", "bids", "--case-info", str(cases), "--json")
    assert json.loads(again.stdout)["imported"]["unchanged_cases"] == 3


def test_without_the_dicom_extra_one_line(nmb_home: Path, tmp_path: Path, monkeypatch,
                                          capsys) -> None:
    """pydicom not installed (an import of it fails): one line naming the extra, exit 2."""
    pacs_export(tmp_path / "export")
    info = tmp_path / "CASE.json"
    info.write_text(json.dumps({"case_id": "x", "title": "t", "ehr": ""}))
    monkeypatch.setitem(sys.modules, "pydicom", None)
    assert cli.main(["import", str(tmp_path / "export"), "--from", "dicom", "--case-info",
                     str(info)]) == 2
    assert capsys.readouterr().err == ("nmb: the DICOM import needs dcm2niix and pydicom: pip "
                                       "install 'neural-medbench-studio[dicom]'\n")
