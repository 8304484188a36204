"""Partial BIDS datasets (issue 42): a subject or session without a volume to read is skipped
and named with its reason, the dataset refused with the reasons only when nothing remains;
`--participants` / `--exclude` choose subjects and sessions; the entities of a file name
(`acq-`, `rec-`, `run-`, ...) stay in its series' name and a `ce-` makes a T1 a T1C.

The layouts are those of bids-standard/bids-examples' `7t_trt` (every subject's `ses-2` holds
only `fmap/` and `func/`) and `ds000117` (`ses-meg` holds `meg/` and `beh/`, `ses-mri` an
`acq-mprage` T1w, multi-echo FLASH and DWI; `sub-emptyroom` holds MEG noise recordings only),
with their real file names; the volumes are small and synthetic."""

import json
from pathlib import Path

import pytest
from sqlmodel import Session, select

import cli
from db.bundle.importer import BundleInvalid
from db.engine import engine_for
from db.models import Series, Task
from db.sources.bids import import_bids
from tests.db.bundle.bundles import snapshot
from tests.db.sources.test_bids_import import TASK, _nifti, dataset


def _description(root: Path, name: str) -> None:
    root.mkdir(parents=True)
    (root / "dataset_description.json").write_text(json.dumps({"BIDSVersion": "1.8.0",
                                                               "Name": name}))


def _touch(path: Path, text: str = "") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def seven_t_trt(root: Path, subjects: tuple[str, ...] = ("01", "02")) -> Path:
    """bids-examples/7t_trt: ses-1 with anat/ (T1w, T1map), fmap/ and func/; ses-2 without
    anat/."""
    _description(root, "7t_trt")
    (root / "participants.tsv").write_text(
        "participant_id\tsex\tage_at_first_scan_years\tnumber_of_scans_before\thandedness\n"
        + "".join(f"sub-{s}\tF\t{29 + k}\t17\t100\n" for k, s in enumerate(subjects)))
    for k, s in enumerate(subjects):
        sub = root / f"sub-{s}"
        _touch(sub / f"sub-{s}_sessions.tsv", "session_id\nses-1\nses-2\n")
        for ses in ("1", "2"):
            where, name = sub / f"ses-{ses}", f"sub-{s}_ses-{ses}"
            if ses == "1":
                _nifti(where / "anat" / f"{name}_T1w.nii.gz", 10 * k + 1)
                _nifti(where / "anat" / f"{name}_T1map.nii.gz", 10 * k + 2)
            for run in ("1", "2"):
                for part in ("magnitude1", "magnitude2", "phasediff"):
                    _nifti(where / "fmap" / f"{name}_run-{run}_{part}.nii.gz", 10 * k + 3)
                _touch(where / "fmap" / f"{name}_run-{run}_phasediff.json", "{}")
                _nifti(where / "func" / f"{name}_task-rest_acq-fullbrain_run-{run}_bold.nii.gz",
                       10 * k + 4)
            _touch(where / f"{name}_scans.tsv", "filename\n")
    return root


def ds000117(root: Path) -> Path:
    """bids-examples/ds000117, sub-01 and sub-emptyroom."""
    _description(root, "Multisubject, multimodal face processing")
    (root / "participants.tsv").write_text("participant_id\tage\tsex\tfirst_ses\n"
                                           "sub-01\t31\tM\tmeg\n")
    meg = root / "sub-01/ses-meg"
    _touch(meg / "beh/sub-01_ses-meg_task-facerecognition_events.tsv")
    _touch(meg / "meg/sub-01_ses-meg_task-facerecognition_run-01_meg.fif", "not MRI")
    _touch(meg / "sub-01_ses-meg_scans.tsv")
    mri = root / "sub-01/ses-mri"
    _nifti(mri / "anat/sub-01_ses-mri_acq-mprage_T1w.nii.gz", 1)
    _touch(mri / "anat/sub-01_ses-mri_acq-mprage_T1w.json", "{}")
    for run in ("1", "2"):
        _nifti(mri / f"anat/sub-01_ses-mri_run-{run}_echo-1_FLASH.nii.gz", 2)
    _nifti(mri / "dwi/sub-01_ses-mri_dwi.nii.gz", 3)
    _touch(mri / "dwi/sub-01_ses-mri_dwi.bval", "0 1000\n")
    _nifti(mri / "fmap/sub-01_ses-mri_magnitude1.nii", 4)
    _nifti(mri / "func/sub-01_ses-mri_task-facerecognition_run-01_bold.nii.gz", 5)
    for day in ("20090409", "20090506"):
        _touch(root / f"sub-emptyroom/ses-{day}/meg/sub-emptyroom_ses-{day}_task-noise_meg.fif",
               "noise")
    return root


def _info(tmp_path: Path, **entries) -> Path:
    path = tmp_path / "CASES.json"
    path.write_text(json.dumps({k: {"title": k, "ehr": "", "tasks": [TASK | {"task_id": f"{k}-dx"}]}
                                | v for k, v in entries.items()}))
    return path


def _import(url: str, root: Path, info: Path, **options):
    with Session(engine_for(url), expire_on_commit=False) as s:
        return import_bids(s, root, case_info=info, actor="admin", **options)


def _refused(url: str, root: Path, info: Path, **options) -> list[str]:
    before = snapshot(url)
    with pytest.raises(BundleInvalid) as e:
        _import(url, root, info, **options)
    assert snapshot(url) == before
    return [str(p) for p in e.value.problems]


def test_sessions_without_a_volume_are_skipped_and_named(sqlite_url: str, tmp_path: Path) -> None:
    """7t_trt: every ses-2 (fmap/, func/) was refused as a whole before; ds000117: ses-meg and
    the empty-room subject, which needs no CASES.json entry, and `acq-mprage` kept."""
    summary = _import(sqlite_url, seven_t_trt(tmp_path / "7t_trt"),
                      _info(tmp_path, **{"sub-01": {}, "sub-02": {}}))
    assert summary.cases == {"sub-01_ses-1": ["T1 map", "T1"], "sub-02_ses-1": ["T1 map", "T1"]}
    assert summary.skipped == [f"sub-0{s}/ses-2: no anat/, dwi/ or perf/ folder (it holds "
                               "fmap/, func/)" for s in (1, 2)]
    assert "; skipped sub-01/ses-2: no anat/, dwi/ or perf/ folder (it holds fmap/, func/); " \
           "sub-02/ses-2: " in str(summary)
    with Session(engine_for(sqlite_url)) as s:  # one entry for two sessions: ids stay apart
        assert sorted(t.task_id for t in s.exec(select(Task))) == ["sub-01-dx-ses-1",
                                                                   "sub-02-dx-ses-1"]

    summary = _import(sqlite_url, ds000117(tmp_path / "ds000117"),
                      _info(tmp_path, **{"sub-01_ses-mri": {"case_id": "face-01"}}))
    assert summary.cases == {"face-01": ["T1 (acq-mprage)", "run-1_echo-1_FLASH",
                                         "run-2_echo-1_FLASH", "DWI"]}
    assert summary.skipped == [
        "sub-01/ses-meg: no anat/, dwi/ or perf/ folder (it holds beh/, meg/)",
        "sub-emptyroom/ses-20090409: no anat/, dwi/ or perf/ folder (it holds meg/)",
        "sub-emptyroom/ses-20090506: no anat/, dwi/ or perf/ folder (it holds meg/)"]
    with Session(engine_for(sqlite_url)) as s:
        assert sorted(x.sequence for x in s.exec(select(Series).where(
            Series.case_id == "face-01"))) == ["DWI", "T1 (acq-mprage)", "run-1_echo-1_FLASH",
                                               "run-2_echo-1_FLASH"]


def test_a_dataset_with_nothing_to_import_is_refused_with_the_reasons(sqlite_url: str,
                                                                     tmp_path: Path) -> None:
    """Only the sessions without anat/ (and a masks-only anat/): every one named, with why."""
    root = seven_t_trt(tmp_path / "ds", subjects=("01",))
    for f in (root / "sub-01/ses-1/anat").iterdir():
        f.unlink()
    _nifti(root / "sub-01/ses-1/anat/sub-01_ses-1_defacemask.nii.gz", 1)
    assert _refused(sqlite_url, root, _info(tmp_path, **{"sub-01": {}})) == [
        "ds: no subject or session holds a volume to import",
        "sub-01/ses-1: no volume to read in anat/ (left out: sub-01_ses-1_defacemask.nii.gz)",
        "sub-01/ses-2: no anat/, dwi/ or perf/ folder (it holds fmap/, func/)"]


def test_participants_and_exclude_choose_subjects_and_sessions(sqlite_url: str,
                                                               tmp_path: Path) -> None:
    """`dataset`: sub-01 (no sessions), sub-02 (ses-pre, ses-post). A subject left out needs no
    CASES.json entry; a label that names nothing is refused, as is a choice of nothing."""
    root = dataset(tmp_path / "ds")
    only_02 = _info(tmp_path, **{"sub-02": {}})

    def chosen(info: Path = only_02, **options) -> list[str]:
        return list(_import(sqlite_url, root, info, dry_run=True, **options).cases)

    assert chosen(participants=["sub-02"]) == ["sub-02_ses-post", "sub-02_ses-pre"]
    assert chosen(participants=["02"], exclude=["sub-02/ses-pre"]) == ["sub-02_ses-post"]
    assert chosen(exclude=["sub-01", "sub-02_ses-post"]) == ["sub-02_ses-pre"]
    assert _refused(sqlite_url, root, only_02) == [
        "CASES.json: has no entry for sub-01 (give it one, or --exclude sub-01)"]
    assert _refused(sqlite_url, root, only_02, participants=["sub-09", "sub-02/ses-x"],
                    exclude=["sub-01/ses-pre", "../sub-02"]) == [
        "--participants: sub-09: no such subject in ds",
        "--participants: sub-02/ses-x: no such session in ds",
        "--exclude: sub-01/ses-pre: no such session in ds",
        "--exclude: ../sub-02: not a subject (sub-01) or a session (sub-01/ses-1)"]
    assert _refused(sqlite_url, root, only_02, participants=["sub-02"], exclude=["sub-02"]) == [
        "--participants and --exclude: leave no subject or session to import"]


def test_nmb_import_takes_participants_and_exclude(nmb_home: Path, tmp_path: Path,
                                                   capsys) -> None:
    root = seven_t_trt(tmp_path / "7t_trt")
    info = _info(tmp_path, **{"sub-02_ses-1": {}})
    assert cli.main(["import", str(root), "--from", "bids", "--case-info", str(info),
                     "--participants", "sub-01", "sub-02", "--exclude", "sub-01"]) == 0
    out = capsys.readouterr().out
    assert "imported 1 case, 2 series, 1 task" in out
    assert "sub-02_ses-1: T1 map, T1; skipped sub-02/ses-2: no anat/" in out
