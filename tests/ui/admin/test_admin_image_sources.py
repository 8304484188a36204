"""The admin import tab for DICOM studies and BIDS datasets (issue 24 items 1, 3): a zipped
PACS export and its case info uploaded, a BIDS dataset by its path on the server; the upload
leaves nothing behind under NMB_HOME and no identifying value; a refusal is a problem row."""

import json
from pathlib import Path

import pytest
from sqlmodel import select

from db.engine import nmb_home, session
from db.models import Case, Series
from tests.apptest import make_user, page
from tests.db.sources.dicom_files import IDENTIFYING, pacs_export
from tests.db.sources.test_bids_import import TASK, dataset
from tests.db.sources.test_dicom_import import CASE
from tests.ui.admin.test_admin_page import _zip

pytestmark = pytest.mark.slow  # starts processes or takes seconds: make test only


def test_dicom_zip_and_bids_path_import_from_the_admin_page(sqlite_url: str,
                                                            tmp_path: Path) -> None:
    pacs_export(tmp_path / "export")
    at = page("pages/admin.py", make_user("root", "admin")).run()
    at.radio[0].set_value("DICOM study").run()
    at.get("file_uploader")[0].set_value(("export.zip", _zip(tmp_path / "export"),
                                          "application/zip")).run()
    at.get("file_uploader")[1].set_value(("CASE.json", json.dumps(CASE).encode(),
                                          "application/json")).run()
    next(b for b in at.button if b.label == "Import").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    [done] = [m.value.replace("\\", "") for m in at.success]
    assert "imported 1 case, 3 series, 1 task" in done and "PatientName" in done
    with session() as s:
        assert s.get(Case, CASE["case_id"]).title == CASE["title"]
    assert [p.name for p in (nmb_home() / "tmp").iterdir()] == [".lock"]  # the upload is gone
    for f in nmb_home().rglob("*"):
        if f.is_file():
            assert not any(v.encode() in f.read_bytes() for v in IDENTIFYING.values()), f

    root = dataset(tmp_path / "bids")
    info = tmp_path / "CASES.json"
    info.write_text(json.dumps({"sub-01": {"title": "Subject 1, {age} years", "ehr": "",
                                           "tasks": [TASK]},
                                "sub-02": {"title": "Subject 2", "ehr": ""}}))
    at.radio[0].set_value("BIDS dataset").run()
    at.text_input[0].set_value(str(root)).run()
    at.text_input[1].set_value(str(info)).run()
    at.text_input[3].set_value("sub-02/ses-pre").run()  # --exclude
    next(b for b in at.button if b.label == "Import").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    with session() as s:
        assert s.get(Case, "sub-01").title == "Subject 1, 54 years"
        assert s.get(Case, "sub-02_ses-post") and not s.get(Case, "sub-02_ses-pre")
        assert len(s.exec(select(Series).where(Series.case_id == "sub-01")).all()) == 5  # MP2RAGE too

    (root / "dataset_description.json").unlink()
    next(b for b in at.button if b.label == "Import").click().run()
    [problems] = [df.value for df in at.dataframe if "problem" in df.value.columns]
    assert list(problems["problem"]) == ["has no dataset_description.json: not a BIDS dataset"]
