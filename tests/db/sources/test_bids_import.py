"""BIDS datasets made in the test: one case per subject (and session), suffix to sequence,
participants.tsv through the case info, refusals one line each with the study unchanged."""

import json
from pathlib import Path

import nibabel as nib
import numpy as np
import pytest
from sqlmodel import Session, select

from db.bundle.importer import BundleInvalid
from db.engine import engine_for, nmb_home
from db.models import Case, Series, Task
from db.sources.bids import import_bids
from tests.db.bundle.bundles import snapshot

TASK = {"task_id": "dx", "family": "differential", "level": 1, "prompt": "Diagnosis?"}


def _nifti(path: Path, seed: int, descrip: bytes = b"") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    img = nib.Nifti1Image(np.random.default_rng(seed).integers(0, 900, (6, 7, 5)).astype(np.int16),
                          np.diag([1.0, 1.0, 2.0, 1.0]))
    img.header["descrip"] = descrip
    nib.save(img, path)


def dataset(root: Path) -> Path:
    (root).mkdir(parents=True)
    (root / "dataset_description.json").write_text(json.dumps({"Name": "Tiny", "BIDSVersion":
                                                               "1.9.0"}))
    (root / "participants.tsv").write_text("participant_id\tage\tsex\nsub-01\t54\tM\n"
                                           "sub-02\t61\tF\n")
    _nifti(root / "sub-01/anat/sub-01_T1w.nii.gz", 1, b"scanned 2024-01-17 QUIXOTE")
    (root / "sub-01/anat/sub-01_T1w.json").write_text(json.dumps({"InstitutionName": "X"}))
    _nifti(root / "sub-01/anat/sub-01_ce-gadolinium_T1w.nii.gz", 2)
    _nifti(root / "sub-01/anat/sub-01_FLAIR.nii.gz", 3)
    _nifti(root / "sub-01/dwi/sub-01_dwi.nii.gz", 4)
    _nifti(root / "sub-01/anat/sub-01_MP2RAGE.nii.gz", 5)  # an unknown suffix: named by itself
    _nifti(root / "sub-01/anat/sub-01_defacemask.nii.gz", 7)  # not an image to read: left out
    for ses in ("pre", "post"):
        _nifti(root / f"sub-02/ses-{ses}/anat/sub-02_ses-{ses}_T2w.nii", 6)
    return root


def _cases(tmp_path: Path, **entries) -> Path:
    path = tmp_path / "CASES.json"
    path.write_text(json.dumps(entries or {
        "sub-01": {"title": "Subject 1, {age} years", "ehr": "Sex {sex}.", "tasks": [TASK]},
        "sub-02": {"title": "Subject 2", "ehr": "", "tasks": [TASK | {"task_id": "dx2"}]}}))
    return path


def _import(url: str, root: Path, info: Path):
    with Session(engine_for(url), expire_on_commit=False) as s:
        return import_bids(s, root, case_info=info, actor="admin")


def test_a_bids_dataset_imports_with_its_sequences(database_url: str, tmp_path: Path) -> None:
    summary = _import(database_url, dataset(tmp_path / "ds"), _cases(tmp_path))
    assert summary.cases == {"sub-01": ["FLAIR", "MP2RAGE", "T1", "T1C", "DWI"],
                             "sub-02_ses-post": ["T2"], "sub-02_ses-pre": ["T2"]}
    assert summary.left_out == ["sub-01/anat/sub-01_defacemask.nii.gz"]
    assert summary.unconfirmed == ['sub-01 "MP2RAGE"']
    with Session(engine_for(database_url)) as s:
        assert s.get(Case, "sub-01").title == "Subject 1, 54 years"
        assert s.get(Case, "sub-01").ehr == "Sex M."
        assert sorted(t.task_id for t in s.exec(select(Task))) == [
            "dx", "dx2-ses-post", "dx2-ses-pre"]
        paths = [x.path for x in s.exec(select(Series))]
    for p in paths:
        header = nib.load(nmb_home() / p).header
        assert header["descrip"].item() == b"" and not header.extensions
    assert not any(b"QUIXOTE" in f.read_bytes() for f in nmb_home().rglob("*.nii.gz"))
    assert _import(database_url, tmp_path / "ds", _cases(tmp_path)).imported.unchanged_cases == 3


def test_a_dataset_name_is_shown_with_its_control_characters_escaped(sqlite_url: str,
                                                                      tmp_path: Path) -> None:
    """dataset_description.json's Name names the import (printed by nmb import, recorded on
    each case): an escape sequence or a line break in it is shown escaped, on one line."""
    root = dataset(tmp_path / "ds")
    (root / "dataset_description.json").write_text(json.dumps(
        {"Name": "Tiny\x1b[2J\nsecond line", "BIDSVersion": "1.9.0"}))
    summary = _import(sqlite_url, root, _cases(tmp_path))
    assert str(summary).startswith("BIDS: Tiny\\u001b[2J\\nsecond line: imported 3 cases")
    assert "\n" not in str(summary)


def test_bids_refusals(database_url: str, tmp_path: Path) -> None:
    root = dataset(tmp_path / "ds")
    before = snapshot(database_url)

    def refused(info: Path, where: Path = root) -> list[str]:
        with pytest.raises(BundleInvalid) as e:
            _import(database_url, where, info)
        assert snapshot(database_url) == before
        return [str(p) for p in e.value.problems]

    assert refused(_cases(tmp_path, **{"sub-01": {"title": "{weight}", "ehr": ""},
                                       "sub-09": {"title": "x", "ehr": ""}})) == [
        "CASES.json sub-01: title names {weight}, not a participants.tsv column of this subject",
        "CASES.json: has no entry for sub-02 (give it one, or --exclude sub-02)",
        "CASES.json: sub-09: no such subject in the dataset"]
    (root / "sub-01/anat/sub-01_T2w.nii.gz").write_bytes(b"\x1f\x8b not really")
    assert refused(_cases(tmp_path))[0].startswith("sub-01/anat/sub-01_T2w.nii.gz: is not a "
                                                   "usable image")
    (root / "dataset_description.json").unlink()
    assert refused(_cases(tmp_path)) == [
        "ds: has no dataset_description.json: not a BIDS dataset"]


def test_a_case_id_in_the_case_info_keeps_the_subjects_label_out_of_the_study(
        database_url: str, tmp_path: Path) -> None:
    """Where a site's labels carry a hospital number (sub-12345678), the case info's `case_id`
    names the case, and the label is stored nowhere: not in a row, not in a file's name or
    content. An entry shared by sessions gets the session appended, as its task ids do."""
    root = tmp_path / "ds"
    root.mkdir()
    (root / "dataset_description.json").write_text(json.dumps({"Name": "Site"}))
    _nifti(root / "sub-12345678/anat/sub-12345678_T1w.nii.gz", 1)
    for ses in ("pre", "post"):
        _nifti(root / f"sub-87654321/ses-{ses}/anat/sub-87654321_ses-{ses}_T2w.nii.gz", 2)
    info = _cases(tmp_path, **{
        "sub-12345678": {"case_id": "site-001", "title": "S1", "ehr": "", "tasks": [TASK]},
        "sub-87654321": {"case_id": "site-002", "title": "S2", "ehr": "",
                         "tasks": [TASK | {"task_id": "dx2"}]}})
    summary = _import(database_url, root, info)
    assert summary.cases == {"site-001": ["T1"], "site-002-ses-post": ["T2"],
                             "site-002-ses-pre": ["T2"]}
    stored = json.dumps(snapshot(database_url), default=str)
    assert "site-001" in stored and "12345678" not in stored and "87654321" not in stored
    files = [f for f in nmb_home().rglob("*") if f.is_file()]
    assert not any("12345678" in str(f) or b"12345678" in f.read_bytes() for f in files)
