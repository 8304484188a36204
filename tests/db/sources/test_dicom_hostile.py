"""Hostile DICOM files made with pydicom in the test (a deflate bomb, a compressed image
claiming gigapixels, malformed values): each is one problem naming the file, never a
traceback or an allocation of what the file claims; the study unchanged."""

import copy
import json
import random
import shutil
import warnings
from pathlib import Path

import nibabel as nib
import pytest
from pydicom.uid import DeflatedExplicitVRLittleEndian, RLELossless, generate_uid
from sqlmodel import Session, select

from db.bundle.importer import BundleInvalid
from db.engine import engine_for, nmb_home
from db.models import Series
from db.sources import dicom, dicom_pixels
from db.sources.dicom import import_dicom
from tests.db.bundle.bundles import snapshot
from tests.db.sources.dicom_files import (
    classic_series,
    enhanced_series,
    pacs_export,
    volume,
    write_series,
)
from tests.warning_filters import recorded_without_catch_warnings

CASE = {"case_id": "c1", "title": "t", "ehr": "e", "tasks": []}


def _refused(url: str, folder: Path, tmp_path: Path) -> list[str]:
    info = tmp_path / "CASE.json"
    info.write_text(json.dumps(CASE))
    before = snapshot(url)
    with pytest.raises(BundleInvalid) as e, Session(engine_for(url)) as s:
        import_dicom(s, folder, case_info=info, actor="admin")
    assert snapshot(url) == before
    return [str(p) for p in e.value.problems]


def _series(n: int = 3) -> list:
    return classic_series("T2 AX", 2, study_uid=generate_uid(), frame_uid=generate_uid(),
                          data=volume(6, 6, n))


@pytest.mark.slow
def test_a_deflate_bomb_is_refused_before_it_is_inflated(sqlite_url: str, tmp_path: Path,
                                                          monkeypatch) -> None:
    """pydicom inflates a deflated data set whole, in memory: 400 KiB became 400 MiB."""
    monkeypatch.setattr(dicom, "MAX_FILE_BYTES", 32 * 2**20)
    datasets = _series()
    bomb = datasets[0]
    bomb.add_new(0x00291010, "OB", b"\0" * (40 * 2**20))
    bomb.file_meta.TransferSyntaxUID = DeflatedExplicitVRLittleEndian
    folder = write_series(tmp_path / "study", datasets)
    size = (folder / "IM00000").stat().st_size
    assert size < 2**20
    assert _refused(sqlite_url, folder, tmp_path) == [
        f"IM00000: is a deflated data set of {size:,} bytes that inflates to more than the "
        f"limit of {32 * 2**20:,}"]


def test_compressed_pixels_are_capped_before_they_are_decoded(sqlite_url: str, tmp_path: Path,
                                                              monkeypatch) -> None:
    """A 1.4 KB RLE file claiming 40,000 x 40,000 pixels took 3.1 GB before its decoder
    failed; the header's size is checked against NMB_MAX_IMAGE_BYTES first."""
    monkeypatch.setenv("NMB_MAX_IMAGE_BYTES", str(16 * 2**20))
    datasets = _series()
    datasets[0].compress(RLELossless)
    datasets[0].Rows = datasets[0].Columns = 4000
    folder = write_series(tmp_path / "study", datasets)
    assert _refused(sqlite_url, folder, tmp_path)[0] == (
        "IM00000: is 4,000 x 4,000 pixels x 1 frames: decoded, more than the limit of 16 MiB "
        "(NMB_MAX_IMAGE_BYTES)")


def _set(attr: str, value):
    def change(datasets: list) -> None:
        setattr(datasets[1], attr, value)
    return change


def _more_frame_groups(datasets: list) -> None:
    groups = datasets[0].PerFrameFunctionalGroupsSequence
    groups.append(copy.deepcopy(groups[0]))


MALFORMED = {  # name: (change, bytes to replace in the files, the problem)
    "series_number_text": (_set("SeriesNumber", 987654), (b"987654", b"abcdef"),
                           "IM00001: SeriesNumber is not a whole number"),
    "position_of_two": (_set("ImagePositionPatient", [1.0, 2.0]), None,
                        "bad: series 2: IM00001: ImagePositionPatient holds 2 values, not 3 "
                        "(the volume's geometry cannot be known)"),
    "position_nan": (_set("ImagePositionPatient", ["777.5", "0", "0"]), (b"777.5", b"nan  "),
                     "bad: series 2: IM00001: ImagePositionPatient holds a value that is not "
                     "finite (the volume's geometry cannot be known)"),
    "orientation_of_five": (_set("ImageOrientationPatient", [1, 0, 0, 0, 1]), None,
                            "bad: series 2: IM00001: ImageOrientationPatient holds 5 values, "
                            "not 6 (the volume's geometry cannot be known)"),
    "orientation_zero": (_set("ImageOrientationPatient", [0, 0, 0, 0, 0, 0]), None,
                         "bad: series 2: IM00001: ImageOrientationPatient is not two "
                         "perpendicular unit vectors (the volume's geometry cannot be known)"),
    "spacing_of_one": (_set("PixelSpacing", [0.9]), None,
                       "bad: series 2: IM00001: PixelSpacing holds 1 values, not 2 (the "
                       "volume's geometry cannot be known)"),
    "spacing_negative": (_set("PixelSpacing", [-0.9, 0.8]), None,
                         "bad: series 2: IM00001: PixelSpacing is not positive (the volume's "
                         "geometry cannot be known)"),
    "spacing_in_metres": (_set("PixelSpacing", [0.0009, 0.0008]), None,
                          "bad: series 2: IM00001: PixelSpacing 0.0009 x 0.0008 mm is outside "
                          "0.01-100 mm (brain MRI; a unit mistake?) (the volume's geometry "
                          "cannot be known)"),
    "spacing_in_micrometres": (_set("PixelSpacing", [900, 800]), None,
                               "bad: series 2: IM00001: PixelSpacing 900 x 800 mm is outside "
                               "0.01-100 mm (brain MRI; a unit mistake?) (the volume's geometry "
                               "cannot be known)"),
    "more_frame_groups_than_frames": (_more_frame_groups, None,
                                      "bad: series 5: IM00000: has 4 per-frame functional "
                                      "groups for 3 frames"),
}


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:Invalid value for VR")
@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_values_are_one_problem_not_a_traceback(sqlite_url: str, tmp_path: Path,
                                                          name: str) -> None:
    """Before: ValueError, IndexError (more frame groups than frames), or a series taken
    with a 1-value PixelSpacing or a 5-value orientation."""
    change, patch, problem = MALFORMED[name]
    datasets = ([enhanced_series("T1 AX", 5, study_uid=generate_uid(), frame_uid=generate_uid(),
                                 data=volume(6, 6, 3))]
                if name == "more_frame_groups_than_frames" else _series())
    change(datasets)
    folder = write_series(tmp_path / "bad", datasets)
    if patch:
        for f in folder.iterdir():
            f.write_bytes(f.read_bytes().replace(*patch))
    assert problem in _refused(sqlite_url, folder, tmp_path)


@pytest.mark.slow
def test_series_sharing_a_series_number_keep_their_own_voxels(sqlite_url: str,
                                                             tmp_path: Path) -> None:
    """SeriesNumber is not unique (missing, 0, or reused by a scanner): two series numbered
    3 were both written to series-3-1.nii.gz, so the T2 row showed the FLAIR's voxels."""
    study, frame = generate_uid(), generate_uid()
    t2 = classic_series("T2 AX", 3, study_uid=study, frame_uid=frame, data=volume(6, 6, 3, 1))
    flair = classic_series("FLAIR AX", 3, study_uid=study, frame_uid=frame,
                           data=volume(6, 6, 4, 2))
    folder = write_series(tmp_path / "study", [*t2, *flair])
    info = tmp_path / "CASE.json"
    info.write_text(json.dumps(CASE))
    with Session(engine_for(sqlite_url)) as s:
        summary = import_dicom(s, folder, case_info=info, actor="admin")
    assert sorted(summary.series) == ["FLAIR: 6x6x4", "T2: 6x6x3"]
    with Session(engine_for(sqlite_url)) as s:
        shapes = {x.sequence: nib.load(nmb_home() / x.path).shape
                  for x in s.exec(select(Series))}
    assert shapes == {"T2": (6, 6, 3), "FLAIR": (6, 6, 4)}


def test_a_dicomdir_is_capped_like_the_files_it_lists(sqlite_url: str, tmp_path: Path,
                                                      monkeypatch) -> None:
    """A DICOMDIR given as the study was read whatever its size and however many files it
    listed (a folder's files are capped by MAX_FILES)."""
    pacs_export(tmp_path / "export")
    dicomdir = tmp_path / "export" / "DICOMDIR"
    monkeypatch.setattr(dicom, "MAX_FILES", 5)
    assert _refused(sqlite_url, dicomdir, tmp_path) == ["DICOMDIR: lists more than 5 files"]
    size = dicomdir.stat().st_size
    monkeypatch.setattr(dicom, "MAX_FILE_BYTES", size - 1)
    assert _refused(sqlite_url, dicomdir, tmp_path) == [
        f"DICOMDIR: is {size:,} bytes, more than the limit of {size - 1:,}"]


def test_a_pipe_listed_in_a_dicomdir_is_refused(sqlite_url: str, tmp_path: Path) -> None:
    """A DICOMDIR's files are checked as a folder's are: a pipe it lists (opening it would
    wait for a writer forever) is named, not opened."""
    import os

    pacs_export(tmp_path / "export")
    listed = sorted(p for p in (tmp_path / "export").rglob("IM*") if p.is_file())[2]
    listed.unlink()
    os.mkfifo(listed)
    assert _refused(sqlite_url, tmp_path / "export" / "DICOMDIR", tmp_path) == [
        f"{listed.relative_to(tmp_path / 'export').as_posix()}: is not a regular file"]


def _enhanced(tmp_path: Path) -> Path:
    return write_series(tmp_path / "study", [enhanced_series(
        "T1 AX", 5, study_uid=generate_uid(), frame_uid=generate_uid(), data=volume(6, 6, 3))])


@pytest.mark.parametrize(("old", "new", "problem"), [
    # PixelSpacing inside the shared functional groups with a VR that does not exist
    (b"\x28\x00\x30\x00DS", b"\x28\x00\x30\x00D\xff",
     "IM00000: is not a readable DICOM file: With tag (5200,9229) got exception: With tag "
     "(0028,9110) got exception: With tag (0028,0030) got exception: Unknown Value "
     "Representation '0x44 0xff' in tag (0028,0030)"),
    # MediaStorageSOPClassUID in the file meta with a VR that does not exist
    (b"\x02\x00\x02\x00UI", b"\x02\x00\x02\x00U|",
     "IM00000: is not a readable DICOM file: With tag (0002,0002) got exception: Unknown "
     "Value Representation '0x55 0x7c' in tag (0002,0002)"),
    # NumberOfFrames 0: pydicom decodes every frame, the import expected one
    (b"\x28\x00\x08\x00IS\x02\x003 ", b"\x28\x00\x08\x00IS\x02\x000 ",
     "IM00000: pixel data decodes to 108 values, not Rows x Columns x NumberOfFrames = 36"),
], ids=["nested_item_vr", "file_meta_vr", "number_of_frames_0"])
def test_damage_found_by_fuzzing_is_one_problem(sqlite_url: str, tmp_path: Path, old: bytes,
                                                new: bytes, problem: str) -> None:
    """Found by flipping bytes of these files: pydicom parses sequence items and the file
    meta lazily, so the damage raised (NotImplementedError, OSError) where the import first
    read them; a frame count the decoder disagreed with raised ValueError in reshape."""
    folder = _enhanced(tmp_path)
    f = folder / "IM00000"
    assert f.read_bytes().count(old) == 1
    f.write_bytes(f.read_bytes().replace(old, new))
    assert _refused(sqlite_url, folder, tmp_path) == [problem]


@pytest.mark.slow
def test_flipped_bytes_are_problems_or_read(tmp_path: Path) -> None:
    """600 seeded mutations (bytes flipped or cut) of a classic and an enhanced series: reading
    and checking them gives problems or series, never another exception."""
    study, frame = generate_uid(), generate_uid()
    sources = [write_series(tmp_path / "classic", classic_series(
                   "T2 AX", 2, study_uid=study, frame_uid=frame, data=volume(6, 6, 3))),
               write_series(tmp_path / "enhanced", [enhanced_series(
                   "T1 AX", 5, study_uid=study, frame_uid=frame, data=volume(6, 6, 3))])]
    rng = random.Random(24)
    for i in range(600):
        folder = tmp_path / f"m{i}"
        shutil.copytree(rng.choice(sources), folder)
        for f in sorted(folder.iterdir()):
            data = bytearray(f.read_bytes())
            for _ in range(rng.randint(1, 6)):
                data[rng.randrange(132, len(data))] = rng.choice(
                    [0, 0xFF, ord("\\"), ord("-"), rng.randrange(256)])
            if rng.random() < 0.2:
                data = data[:rng.randrange(132, len(data))]
            f.write_bytes(bytes(data))
        problems: list = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            series, _, _ = dicom.read_study(folder, problems)
            for s in series:
                if not s.damaged:
                    dicom._check_series(s)
        shutil.rmtree(folder)


@pytest.mark.slow
def test_a_folder_holding_a_pipe_or_a_link_out_of_it_is_refused(sqlite_url: str,
                                                                  tmp_path: Path) -> None:
    """A FIFO among the files (opening it would wait for a writer forever) and a symbolic link
    to a file outside the folder (another patient's DICOM on the server) are named, not read;
    a link within the folder is read, as in a BIDS dataset (DataLad's annex)."""
    import os

    folder = write_series(tmp_path / "study", _series())
    elsewhere = write_series(tmp_path / "elsewhere", _series())
    os.mkfifo(folder / "pipe")
    (folder / "sub").mkdir()
    (folder / "sub" / "theirs.dcm").symlink_to(elsewhere / "IM00000")
    (folder / "sub" / "loop").symlink_to(folder / "sub" / "loop")
    assert sorted(_refused(sqlite_url, folder, tmp_path)) == [
        "pipe: is not a regular file",
        "sub/loop: is a symbolic link to a file outside the folder",
        "sub/theirs.dcm: is a symbolic link to a file outside the folder"]
    shutil.rmtree(folder / "sub")
    (folder / "pipe").unlink()
    annexed = folder / ".git" / "annex" / "IM00000"  # DataLad: the file in the annex, a link
    annexed.parent.mkdir(parents=True)  # in its place (hidden folders are not walked)
    (folder / "IM00000").rename(annexed)
    (folder / "IM00000").symlink_to(annexed)
    info = tmp_path / "CASE.json"
    with Session(engine_for(sqlite_url)) as s:
        assert import_dicom(s, folder, case_info=info, actor="admin").series == ["T2: 6x6x3"]


@pytest.mark.slow
def test_a_secondary_capture_is_held_back_like_burned_in_text(sqlite_url: str,
                                                              tmp_path: Path) -> None:
    """A Secondary Capture (a screenshot of a workstation, a scanned film) usually carries the
    patient's name in its pixels without saying so (BurnedInAnnotation is optional): it is
    refused unless the admin allows burned-in pixels after checking them. A VL image class
    whose UID merely starts alike (1.2.840.10008.5.1.4.1.1.77.x) is not one."""
    capture = _series()
    for ds in capture:
        ds.SOPClassUID = ds.file_meta.MediaStorageSOPClassUID = "1.2.840.10008.5.1.4.1.1.7"
    folder = write_series(tmp_path / "study", capture)
    assert _refused(sqlite_url, folder, tmp_path) == [
        "study: series 2: is a Secondary Capture (a screen or scanned picture): its pixels may "
        "show patient identifiers (--allow-burned-in after checking them)"]
    info = tmp_path / "CASE.json"
    with Session(engine_for(sqlite_url)) as s:
        summary = import_dicom(s, folder, case_info=info, actor="admin", allow_burned_in=True,
                               dry_run=True)
    assert summary.series == ["T2: 6x6x3"]
    assert not dicom_pixels.secondary_capture("1.2.840.10008.5.1.4.1.1.77.1.4")


@pytest.mark.slow
def test_what_pydicom_warns_of_stays_off_the_terminal(sqlite_url: str, tmp_path: Path) -> None:
    """pydicom warns (on stderr, from `nmb import`) of values it finds odd; the refusal is the
    one line the user reads, without the warning's two lines before it."""
    import subprocess
    import sys

    datasets = _series(4)
    datasets[2].Rows = 5  # pydicom: "The pixel data is 72 bytes long, which indicates ..."
    folder = write_series(tmp_path / "study", datasets)
    info = tmp_path / "CASE.json"
    info.write_text(json.dumps(CASE))
    out = subprocess.run([sys.executable, "-m", "cli", "import", str(folder), "--from", "dicom",
                          "--case-info", str(info)], cwd=Path(__file__).parents[3],
                         capture_output=True, text=True, timeout=300)
    assert (out.returncode, out.stderr) == (2, "nmb: study: series 2: holds images of "
                                               "different sizes\n")


def test_a_folder_holding_two_studies_is_refused(sqlite_url: str, tmp_path: Path) -> None:
    """One import is one study, one case: a folder that also holds another study (another
    visit, or another patient's series exported beside it) is refused, naming a file of each,
    rather than merged into one case."""
    folder = tmp_path / "export"
    write_series(folder / "a", _series())
    other = classic_series("FLAIR AX", 3, study_uid=generate_uid(), frame_uid=generate_uid(),
                           data=volume(6, 6, 3))
    for ds in other:
        ds.PatientID = "ANOTHER-PATIENT"
    write_series(folder / "b", other)
    assert _refused(sqlite_url, folder, tmp_path) == [
        "b/IM00000: belongs to another study than a/IM00000 (StudyInstanceUID differs): one "
        "DICOM import is one study, one case"]


@pytest.mark.parametrize("pattern", ["(" * 3000, "(" * 5000 + "T2" + ")" * 5000, "[" + "x" * 5000])
def test_a_sequence_map_pattern_that_cannot_be_compiled_is_one_short_line(tmp_path: Path,
                                                                          pattern: str) -> None:
    """Groups nested thousands deep were a RecursionError traceback in the regular expression
    parser; a long pattern is quoted cut, not whole."""
    from errors import UserError

    mapping = tmp_path / "map.json"
    mapping.write_text(json.dumps({pattern: "T2"}))
    with pytest.raises(UserError) as e:
        dicom.read_sequence_map(mapping)
    assert str(e.value).startswith("map.json: pattern ") and len(str(e.value)) < 200
    assert "\n" not in str(e.value)


def test_a_series_is_capped_as_a_whole_before_it_is_converted(sqlite_url: str, tmp_path: Path,
                                                              monkeypatch) -> None:
    """Each file within NMB_MAX_IMAGE_BYTES, the series' volume beyond it: dcm2niix decoded
    and assembled it all (20,000 compressed files of up to 1 GiB each are allowed) before the
    converted volume was refused."""
    monkeypatch.setenv("NMB_MAX_IMAGE_BYTES", str(2**20))
    datasets = classic_series("T2 AX", 2, study_uid=generate_uid(), frame_uid=generate_uid(),
                              data=volume(300, 300, 4))  # 176 KiB a file; 1.4 MiB as float32
    folder = write_series(tmp_path / "study", datasets)
    assert _refused(sqlite_url, folder, tmp_path) == [
        "study: series 2: is 300 x 300 pixels x 4 images: decoded as one volume, more than the "
        "limit of 1 MiB (NMB_MAX_IMAGE_BYTES)"]


def test_pydicom_is_quieted_without_swapping_the_process_wide_warning_filters(
        sqlite_url: str, tmp_path: Path) -> None:
    """The import silenced pydicom with warnings.catch_warnings, which swaps the filter list of
    the whole process and puts it back on exit: under Streamlit's threads one session's import
    could hide another session's warnings, or restore a list without another thread's filter.
    pydicom's warnings must stay off the terminal all the same."""
    datasets = _series(4)
    datasets[2].Rows = 5  # pydicom: "The pixel data is 72 bytes long, which indicates ..."
    folder = write_series(tmp_path / "study", datasets)
    with recorded_without_catch_warnings() as seen:
        problems = _refused(sqlite_url, folder, tmp_path)
        warnings.warn("another session's warning", UserWarning, stacklevel=1)
    assert problems == ["study: series 2: holds images of different sizes"]
    assert [str(w.message) for w in seen if "pydicom" in w.filename] == []
    assert "another session's warning" in [str(w.message) for w in seen]  # not swallowed


@pytest.mark.parametrize(("step", "shown"), [(150.0, "150"), (0.005, "0.005")])
def test_slices_too_far_apart_or_too_close_are_refused_before_conversion(
        sqlite_url: str, tmp_path: Path, step: float, shown: str) -> None:
    """Slice positions 150 mm apart (or 0.005 mm): converted by dcm2niix, then refused as the
    converted file's voxel size, a name (series-2-0.nii.gz) the user never saw."""
    datasets = classic_series("T2 AX", 2, study_uid=generate_uid(), frame_uid=generate_uid(),
                              data=volume(6, 6, 3), step=step)
    folder = write_series(tmp_path / "study", datasets)
    assert _refused(sqlite_url, folder, tmp_path) == [
        f"study: series 2: has its slices {shown} mm apart, outside 0.01-100 mm (brain MRI; a "
        "unit mistake?)"]
