"""DICOM studies as cases: a PACS-style export (DICOMDIR, extension-less files) with classic and
enhanced multi-frame series, a localizer and a report, made with pydicom in the test; world
geometry against ImagePositionPatient; no identifying value anywhere under NMB_HOME; every
refusal one line, the study unchanged."""

import gzip
import json
from pathlib import Path

import nibabel as nib
import numpy as np
import pytest
from pydicom.uid import generate_uid
from sqlmodel import Session, select

from db.bundle.importer import BundleInvalid
from db.engine import engine_for, nmb_home
from db.models import AuditLog, Case, Series, Task
from db.sources.dicom import import_dicom
from tests.db.bundle.bundles import snapshot
from tests.db.sources.dicom_files import (
    IDENTIFYING,
    classic_series,
    pacs_export,
    volume,
    write_series,
)

pytestmark = pytest.mark.slow  # starts processes or takes seconds: make test only

CASE = {"case_id": "site-a-001", "title": "Right frontal mass", "ehr": "54-year-old, seizures.",
        "ground_truth": {"final_diagnosis": "Glioblastoma", "differential": ["Metastasis"]},
        "tasks": [{"task_id": "site-a-001-dx", "family": "differential", "level": 1,
                   "prompt": "Give your differential diagnosis."}]}


def _case_info(tmp_path: Path, **changes) -> Path:
    path = tmp_path / "CASE.json"
    path.write_text(json.dumps({**CASE, **changes}))
    return path


def _import(url: str, path: Path, case_info: Path, **kw):
    with Session(engine_for(url), expire_on_commit=False) as s:
        return import_dicom(s, path, case_info=case_info, actor="admin", **kw)


def _refused(url: str, path: Path, case_info: Path, **kw) -> list[str]:
    before = snapshot(url)
    with pytest.raises(BundleInvalid) as info:
        _import(url, path, case_info, **kw)
    assert snapshot(url) == before
    return [str(p) for p in info.value.problems]


def _lps_to_ras(p) -> np.ndarray:
    return np.asarray(p, float) * [-1, -1, 1]


def test_a_pacs_export_becomes_one_case_with_its_series(database_url: str,
                                                       tmp_path: Path) -> None:
    made = pacs_export(tmp_path / "export")
    summary = _import(database_url, tmp_path / "export" / "DICOMDIR", _case_info(tmp_path))
    assert (summary.imported.new_cases, summary.imported.new_series,
            summary.imported.new_tasks) == (1, 3, 1)
    assert summary.series == ["T2: 10x12x5", "FLAIR: 10x8x4", "T1: 11x9x6"]
    assert summary.left_out == ["1 SR without pixels", "series 1: localizer (3 files)"]
    assert {"PatientName", "PatientID", "PatientBirthDate", "AccessionNumber",
            "InstitutionName", "ReferringPhysicianName", "StudyDate",
            "StudyInstanceUID"} <= set(summary.dropped_identifiers)
    with Session(engine_for(database_url)) as s:
        series = {x.sequence: x for x in s.exec(select(Series))}
        case = s.get(Case, "site-a-001")
        assert s.get(Task, "site-a-001-dx").case_id == "site-a-001"
        audit = [a.detail for a in s.exec(select(AuditLog))]
    assert case.ehr == CASE["ehr"] and set(series) == {"T1", "T2", "FLAIR"}

    # world coordinates: a voxel's world position is the one DICOM gives its pixel
    for name, key, k, r, c in (("T2", "t2", 3, 4, 7), ("FLAIR", "flair", 2, 5, 1)):
        ds = made[key][k]
        img = nib.load(nmb_home() / series[name].path)
        spacing = np.asarray(ds.PixelSpacing, float)
        iop = np.asarray(ds.ImageOrientationPatient, float)
        world = (np.asarray(ds.ImagePositionPatient, float) + iop[:3] * spacing[1] * c
                 + iop[3:] * spacing[0] * r)
        ijk = np.round(np.linalg.inv(img.affine) @ np.append(_lps_to_ras(world), 1))[:3]
        assert np.allclose(img.affine @ np.append(ijk, 1), np.append(_lps_to_ras(world), 1))
        assert img.get_fdata()[tuple(ijk.astype(int))] == ds.pixel_array[r, c]
    t1 = made["t1"]
    img = nib.load(nmb_home() / series["T1"].path)
    frame = t1.PerFrameFunctionalGroupsSequence[4].PlanePositionSequence[0].ImagePositionPatient
    ijk = np.linalg.inv(img.affine) @ np.append(_lps_to_ras(frame), 1)
    assert np.allclose(ijk[:3], np.round(ijk[:3]), atol=1e-3)
    assert img.get_fdata()[tuple(np.round(ijk[:3]).astype(int))] == t1.pixel_array[4, 0, 0]

    # no identifying value anywhere under NMB_HOME: files, the database, headers
    every = [*made["t2"], *made["flair"], made["t1"], *made["localizer"], made["report"]]
    uids = {str(getattr(ds, key)) for ds in every for key in (
        "StudyInstanceUID", "SeriesInstanceUID", "SOPInstanceUID", "FrameOfReferenceUID")}
    dates = {f"{d[:4]}-{d[4:6]}-{d[6:]}" for d in (IDENTIFYING["StudyDate"],
                                                   IDENTIFYING["PatientBirthDate"])}
    values = [v.encode() for v in (*IDENTIFYING.values(), *sorted(uids), *sorted(dates))] + [
        b"DOE", b"T2 AX TSE", b"MPRAGE"]
    assert len(uids) == 1 + 5 + 14 + 2  # the study, its series, instances, frames of reference
    for f in nmb_home().rglob("*"):
        name = str(f.relative_to(nmb_home())).encode()
        assert not any(v in name for v in values), f
        if f.is_file():
            raw = f.read_bytes()
            text = gzip.decompress(raw) if f.name.endswith(".gz") else raw
            for v in values:
                assert v not in raw and v not in text, (f, v)
    for row in series.values():
        header = nib.load(nmb_home() / row.path).header
        assert header["descrip"].item() == b"" and not header.extensions
    assert not any("QUIXOTE" in json.dumps(a) for a in audit)
    dump = repr(snapshot(database_url))  # every row of every table (PostgreSQL's are not files)
    assert not any(v.decode() in dump for v in values)

    again = _import(database_url, tmp_path / "export", _case_info(tmp_path))  # the folder
    assert again.imported.new_cases == 0 and again.imported.unchanged_cases == 1


def test_sequence_map_and_plain_folders(sqlite_url: str, tmp_path: Path) -> None:
    pacs_export(tmp_path / "plain", dicomdir=False)
    mapping = tmp_path / "map.json"
    mapping.write_text(json.dumps({"mprage": "T1C", "flair": None}))
    summary = _import(sqlite_url, tmp_path / "plain", _case_info(tmp_path),
                      sequence_map=mapping)
    assert [x.split(":")[0] for x in summary.series] == ["T2", "T1C"]
    assert "series 4: mapped to null by the sequence map (4 files)" in summary.left_out


def test_dicom_refusals_are_one_line_each(database_url: str, tmp_path: Path) -> None:
    study, frame = generate_uid(), generate_uid()
    info = _case_info(tmp_path)
    folder = tmp_path / "bad"
    burned = classic_series("T2 AX", 2, study_uid=study, frame_uid=frame, data=volume(6, 6, 3))
    for ds in burned:
        ds.BurnedInAnnotation = "YES"
    write_series(folder / "burned", burned)
    gap = classic_series("FLAIR AX", 3, study_uid=study, frame_uid=frame, data=volume(6, 6, 4),
                         positions=[[0, 0, 0], [0, 0, 3], [0, 0, 6], [0, 0, 15]])
    write_series(folder / "gap", gap)
    mixed = classic_series("T1 AX", 4, study_uid=study, frame_uid=frame, data=volume(6, 6, 3))
    mixed[1].ImageOrientationPatient = [0, 1, 0, 0, 0, -1]
    write_series(folder / "mixed", mixed)
    missing = classic_series("DWI", 5, study_uid=study, frame_uid=frame, data=volume(6, 6, 3))
    del missing[0].ImagePositionPatient
    write_series(folder / "missing", missing)
    odd = classic_series("Research protocol 7", 6, study_uid=study, frame_uid=frame,
                         data=volume(6, 6, 3))  # unknown: named by itself, never a refusal
    write_series(folder / "odd", odd)
    (folder / "notes.txt").write_text("not DICOM")
    cut = folder / "odd" / "IM00001"  # a held-back series' pixels are not read: not there
    cut.write_bytes(cut.read_bytes()[:-40])
    assert sorted(_refused(database_url, folder, info)) == sorted([
        "bad: series 2: is marked BurnedInAnnotation YES: its pixels may show patient "
        "identifiers (--allow-burned-in after checking them)",
        "bad: series 3: has a gap between slices (9.00 mm where the others are 3.00 mm apart)",
        "bad: series 4: mixes image orientations (ImageOrientationPatient differs between "
        "slices)",
        "bad: series 5: missing/IM00000: has no ImagePositionPatient (the volume's geometry "
        "cannot be known)",
        "odd/IM00001: is truncated: pixel data holds 32 bytes of 72",
        "notes.txt: is not a DICOM file (no DICM preamble)"])
    ok = write_series(tmp_path / "ok", classic_series("T2 AX", 7, study_uid=study,
                                                      frame_uid=frame, data=volume(6, 6, 3)))
    assert _refused(database_url, ok, _case_info(tmp_path, series=[])) == [
        "CASE.json: series comes from the images: leave it out"]
    assert _refused(database_url, ok, _case_info(tmp_path, title="")) == [
        'CASE.json: title "" is empty']
    bad_task = _case_info(tmp_path, tasks=[{"task_id": "x", "family": "dx", "level": 1,
                                            "prompt": "p"}])
    assert _refused(database_url, ok, bad_task) == [
        'CASE.json tasks[0]: family "dx" is not differential, lesion or rationale']
    assert _refused(database_url, ok, _case_info(tmp_path, case_id="../escape")) == [
        'CASE.json: case_id "../escape" is not a valid id (1-128 printable characters, no / '
        "or \\, not starting with '.')"]


def test_burned_in_annotation_is_imported_only_when_allowed(sqlite_url: str,
                                                            tmp_path: Path) -> None:
    burned = classic_series("T2 AX", 2, study_uid=generate_uid(), frame_uid=generate_uid(),
                            data=volume(6, 6, 3))
    for ds in burned:
        ds.BurnedInAnnotation = "YES"
    folder = write_series(tmp_path / "burned", burned)
    assert _refused(sqlite_url, folder, _case_info(tmp_path)) == [
        "burned: series 2: is marked BurnedInAnnotation YES: its pixels may show patient "
        "identifiers (--allow-burned-in after checking them)"]
    summary = _import(sqlite_url, folder, _case_info(tmp_path), allow_burned_in=True)
    assert summary.imported.new_series == 1 and summary.series == ["T2: 6x6x3"]


def test_series_are_named_by_the_vendor_table_and_a_blank_one_is_refused(sqlite_url: str,
                                                                         tmp_path: Path) -> None:
    """Siemens names the old patterns got wrong (an ADC map as DWI, SWI as T2, a dark-fluid
    FLAIR as T2); a description no rule names imported under itself and listed to confirm;
    an all-zero series refused on one line naming it, imported with allow_blank."""
    study, frame = generate_uid(), generate_uid()
    folder = tmp_path / "study"
    for number, description in ((2, "ep2d_diff_3scan_trace_ADC"), (3, "t2_swi_tra_p2"),
                                (4, "RESTING_STATE_Yerkes")):
        write_series(folder / str(number), classic_series(
            description, number, study_uid=study, frame_uid=frame, data=volume(6, 6, 3, number)))
    write_series(folder / "5", classic_series("t2_tse_dark-fluid_tra", 5, study_uid=study,
                                              frame_uid=frame,
                                              data=np.zeros((3, 6, 6), np.int16)))
    assert _refused(sqlite_url, folder, _case_info(tmp_path)) == [
        'study series 5: series "FLAIR" of case site-a-001 is blank (every voxel is 0): '
        "--allow-blank imports it anyway"]
    summary = _import(sqlite_url, folder, _case_info(tmp_path), allow_blank=True)
    assert summary.series == ["ADC: 6x6x3", "SWI: 6x6x3", "RESTING_STATE_Yerkes: 6x6x3",
                              "FLAIR: 6x6x3"]
    assert summary.unconfirmed == ['series 4 "RESTING_STATE_Yerkes"']
    assert ('named by their own description, to confirm (or name them with --sequence-map): '
            'series 4 "RESTING_STATE_Yerkes"') in str(summary)
