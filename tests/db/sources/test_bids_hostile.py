"""Hostile BIDS datasets made in the test: a participants.tsv row shorter than its header,
symbolic links that leave the dataset. Each is one problem naming the file, the study
unchanged; links inside the dataset (a DataLad annex) still import."""

import json
from pathlib import Path

import pytest
from sqlmodel import Session

from db.bundle.importer import BundleInvalid
from db.engine import engine_for
from db.sources.bids import import_bids
from tests.db.bundle.bundles import snapshot
from tests.db.sources.test_bids_import import TASK, _nifti


def _dataset(root: Path, participants: str = "participant_id\tage\nsub-01\t54\n") -> Path:
    root.mkdir(parents=True)
    (root / "dataset_description.json").write_text(json.dumps({"Name": "Tiny"}))
    (root / "participants.tsv").write_text(participants)
    _nifti(root / "sub-01/anat/sub-01_T1w.nii.gz", 1)
    return root


def _info(tmp_path: Path, title: str = "Subject 1") -> Path:
    path = tmp_path / "CASES.json"
    path.write_text(json.dumps({"sub-01": {"title": title, "ehr": "", "tasks": [TASK]}}))
    return path


def _import(url: str, root: Path, info: Path):
    with Session(engine_for(url), expire_on_commit=False) as s:
        return import_bids(s, root, case_info=info, actor="admin")


def _refused(url: str, root: Path, info: Path) -> list[str]:
    before = snapshot(url)
    with pytest.raises(BundleInvalid) as e:
        _import(url, root, info)
    assert snapshot(url) == before
    return [str(p) for p in e.value.problems]


def test_a_participants_row_shorter_than_its_header_is_named(sqlite_url: str,
                                                            tmp_path: Path) -> None:
    """Before: csv gives None for the missing column and {sex} became "" silently."""
    root = _dataset(tmp_path / "ds", "participant_id\tage\tsex\nsub-01\t54\n")
    assert _refused(sqlite_url, root, _info(tmp_path, "Subject 1, {sex}")) == [
        "participants.tsv: line 2 has fewer fields than the header"]


def test_a_subject_listed_twice_in_participants_is_named(sqlite_url: str,
                                                        tmp_path: Path) -> None:
    """Before: the later row won in silence, so {age} was whichever line came last."""
    root = _dataset(tmp_path / "ds", "participant_id\tage\tsex\nsub-01\t54\tM\nsub-01\t61\tF\n")
    assert _refused(sqlite_url, root, _info(tmp_path, "Subject 1, {age}")) == [
        "participants.tsv: line 3 lists sub-01 again (first on line 2)"]


def test_two_subjects_given_one_case_id_are_named(sqlite_url: str, tmp_path: Path) -> None:
    """A case_id in CASES.json that another subject has (its own, or given too) was a
    FileExistsError traceback while the cases were written."""
    root = _dataset(tmp_path / "ds")
    _nifti(root / "sub-02/anat/sub-02_T1w.nii.gz", 2)
    info = tmp_path / "CASES.json"
    info.write_text(json.dumps({"sub-01": {"case_id": "sub-02", "title": "One", "ehr": ""},
                                "sub-02": {"title": "Two", "ehr": ""}}))
    assert _refused(sqlite_url, root, info) == [
        'CASES.json sub-02: case_id "sub-02" is CASES.json sub-01\'s as well']


@pytest.mark.parametrize("make, refusal", [
    (lambda path: path.mkdir(), "participants.tsv: is a folder, not a file"),
    (lambda path: __import__("os").mkfifo(path), "participants.tsv: is not a regular file")])
def test_a_participants_tsv_that_is_not_a_file_is_named(sqlite_url: str, tmp_path: Path,
                                                       make, refusal: str) -> None:
    """Before: skipped as if absent (the subjects imported without their columns, or a
    {column} was said to be missing), never named."""
    root = _dataset(tmp_path / "ds")
    (root / "participants.tsv").unlink()
    make(root / "participants.tsv")
    assert _refused(sqlite_url, root, _info(tmp_path)) == [refusal]


def test_symbolic_links_leaving_the_dataset_are_refused(sqlite_url: str, tmp_path: Path) -> None:
    """A volume linked from elsewhere (another patient's folder, another dataset) was read
    and imported as this subject's; a link inside the dataset (DataLad's annex) is fine."""
    root = _dataset(tmp_path / "ds")
    annexed = root / ".git/annex/objects/T2.nii.gz"
    _nifti(annexed, 2)
    (root / "sub-01/anat/sub-01_T2w.nii.gz").symlink_to(annexed)
    _nifti(tmp_path / "elsewhere/other_FLAIR.nii.gz", 3)
    (root / "sub-01/anat/sub-01_FLAIR.nii.gz").symlink_to(tmp_path / "elsewhere/other_FLAIR.nii.gz")
    loop = root / "sub-01/anat/sub-01_PDw.nii.gz"  # a link to itself: no file at all
    loop.symlink_to(loop)
    assert _refused(sqlite_url, root, _info(tmp_path)) == [
        "sub-01/anat/sub-01_FLAIR.nii.gz: is a symbolic link to a file outside the dataset",
        "sub-01/anat/sub-01_PDw.nii.gz: is a symbolic link to a file outside the dataset"]
    (root / "sub-01/anat/sub-01_FLAIR.nii.gz").unlink()
    loop.unlink()
    (tmp_path / "elsewhere/sub-02/anat").mkdir(parents=True)
    _nifti(tmp_path / "elsewhere/sub-02/anat/sub-02_T1w.nii.gz", 4)
    (root / "sub-02").symlink_to(tmp_path / "elsewhere/sub-02")
    info = tmp_path / "CASES.json"
    info.write_text(json.dumps({s: {"title": "S", "ehr": "", "tasks": []}
                                for s in ("sub-01", "sub-02")}))
    assert _refused(sqlite_url, root, info) == [
        "sub-02/anat/sub-02_T1w.nii.gz: is a symbolic link to a file outside the dataset"]
    (root / "sub-02").unlink()
    assert _import(sqlite_url, root, _info(tmp_path)).cases == {"sub-01": ["T1", "T2"]}


@pytest.mark.parametrize("name", ["participants.tsv", "dataset_description.json"])
def test_the_datasets_own_files_may_not_link_outside_it(sqlite_url: str, tmp_path: Path,
                                                        name: str) -> None:
    """participants.tsv fills titles and records, dataset_description.json names the bundle:
    a link to another dataset's file was read as this one's."""
    root = _dataset(tmp_path / "ds")
    other = tmp_path / "other" / name
    other.parent.mkdir()
    (root / name).rename(other)
    (root / name).symlink_to(other)
    assert _refused(sqlite_url, root, _info(tmp_path)) == [
        f"{name}: is a symbolic link to a file outside the dataset"]


def test_hidden_files_are_not_volumes(sqlite_url: str, tmp_path: Path) -> None:
    """macOS writes `._<name>` beside every file it copies to exFAT or FAT media (a USB
    stick): `._sub-01_T1w.nii.gz` matched the T1w suffix and refused the dataset as "not a
    usable image" (a DICOM folder's hidden files were already skipped)."""
    root = _dataset(tmp_path / "ds")
    (root / "sub-01/anat/._sub-01_T1w.nii.gz").write_bytes(b"\x00\x05\x16\x07" + bytes(4092))
    assert _import(sqlite_url, root, _info(tmp_path)).cases == {"sub-01": ["T1"]}


def test_a_line_break_in_a_left_out_name_stays_on_its_line(sqlite_url: str,
                                                            tmp_path: Path) -> None:
    """The summary lists files left out by name; a name holding a line break forged a line of
    nmb's output."""
    root = _dataset(tmp_path / "ds")
    _nifti(root / "sub-01/anat/sub-01_x\nnmb: imported_MP2RAGE.nii.gz", 2)
    summary = _import(sqlite_url, root, _info(tmp_path))
    assert "\n" not in str(summary)
    assert summary.left_out == ["sub-01/anat/sub-01_x\\nnmb: imported_MP2RAGE.nii.gz"]
