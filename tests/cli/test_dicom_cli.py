"""`nmb import DIR --from dicom` as the README runs it: a real process, exit codes."""

import json
from pathlib import Path

from tests.cli.test_cli import nmb
from tests.db.bundles import snapshot
from tests.db.dicom_files import pacs_export


def test_readme_dicom_import_and_its_mistakes(nmb_home: Path, tmp_path: Path) -> None:
    pacs_export(tmp_path / "export")
    info = Path(__file__).resolve().parents[2] / "examples" / "dicom" / "CASE.json"
    out = nmb("import", str(tmp_path / "export"), "--from", "dicom", "--case-info", str(info))
    assert out.returncode == 0, out.stderr
    assert "imported 1 cases, 3 series, 2 tasks" in out.stdout
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
