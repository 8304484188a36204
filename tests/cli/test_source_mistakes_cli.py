"""The hostile inputs of issue 24 item 5, each on its own, through `nmb import --from dicom`,
`--from bids` and `nmb import-responses`: one line on stderr naming the file and the problem,
exit code 2, and the study (database, image store, temp area) as it was."""

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from pydicom.uid import generate_uid

import cli
from db.engine import engine_for, upgrade
from tests.db.bundle.bundles import snapshot, write_bundle
from tests.db.sources.dicom_files import classic_series, volume, write_series
from tests.db.sources.test_bids_import import dataset
from tests.db.sources.test_dicom_import import CASE

pytestmark = pytest.mark.slow  # starts processes or takes seconds: make test only


def _series(description: str = "T2 AX", **kw) -> list:
    return classic_series(description, 3, study_uid=generate_uid(), frame_uid=generate_uid(),
                          data=volume(6, 6, 4), **kw)


def _truncated(root: Path) -> list[str]:
    folder = write_series(root, _series())
    cut = folder / "IM00002"
    cut.write_bytes(cut.read_bytes()[:-40])
    return ["dicom", "IM00002: is truncated"]


def _not_dicom(root: Path) -> list[str]:
    write_series(root, _series())
    (root / "IM00009").write_bytes(b"MZ\x90\x00 not a DICOM file at all" * 10)
    return ["dicom", "IM00009: is not a DICOM file"]


def _no_position(root: Path) -> list[str]:
    series = _series()
    del series[1].ImagePositionPatient
    write_series(root, series)
    return ["dicom", "IM00001: has no ImagePositionPatient"]


def _no_spacing(root: Path) -> list[str]:
    series = _series()
    for ds in series:
        del ds.PixelSpacing
    write_series(root, series)
    return ["dicom", "has no PixelSpacing"]


def _mixed_orientations(root: Path) -> list[str]:
    series = _series()
    series[2].ImageOrientationPatient = [0, 1, 0, 0, 0, -1]
    write_series(root, series)
    return ["dicom", "series 3: mixes image orientations"]


def _gap(root: Path) -> list[str]:
    write_series(root, _series(positions=[[0, 0, 0], [0, 0, 3], [0, 0, 6], [0, 0, 15]]))
    return ["dicom", "series 3: has a gap between slices"]


def _line_break_in_a_name(root: Path) -> list[str]:
    """A file name may hold a line break: printed as is, it forged a line of nmb's output."""
    write_series(root, _series())
    (root / "IM9\nnmb: imported 1 cases").write_bytes(b"not DICOM")
    return ["dicom", "IM9\\nnmb: imported 1 cases: is not a DICOM file"]


def _no_description(root: Path) -> list[str]:
    ds = dataset(root)
    (ds / "dataset_description.json").unlink()
    return ["bids", "has no dataset_description.json: not a BIDS dataset"]


def _tsv_columns(root: Path) -> list[str]:
    root.mkdir()
    (root / "preds.tsv").write_text("idx\tanswer\nt1\tStroke.\n")
    return ["vlmevalkit", "preds.tsv: has no column index, prediction (found: idx, answer)"]


def _xlsx_columns(root: Path) -> list[str]:
    import openpyxl

    root.mkdir()
    book = openpyxl.Workbook()
    book.active.append(["index", "question", "answer"])
    book.active.append(["t1", "q", "Stroke."])
    book.save(root / "MyVLM.xlsx")
    return ["vlmevalkit", "MyVLM.xlsx: has no column prediction (found: index, question, answer)"]


HOSTILE: dict[str, Callable[[Path], list[str]]] = {
    "truncated DICOM file": _truncated, "non-DICOM file": _not_dicom,
    "missing ImagePositionPatient": _no_position, "missing PixelSpacing": _no_spacing,
    "mixed orientations": _mixed_orientations, "gap between slices": _gap,
    "line break in a file name": _line_break_in_a_name,
    "BIDS without dataset_description.json": _no_description,
    "prediction .tsv without its columns": _tsv_columns,
    "prediction .xlsx without its columns": _xlsx_columns,
}


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A study holding the base bundle (cases, images, tasks t1-t3), copied by each test."""
    root = tmp_path_factory.mktemp("study")
    home = root / "home"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("NMB_HOME", str(home))
        mp.delenv("NMB_DATABASE_URL", raising=False)
        upgrade()
        assert cli.main(["import", str(write_bundle(root / "base", with_responses=[]))]) == 0
    engine_for(f"sqlite:///{home / 'study.db'}").dispose()
    return home


@pytest.mark.parametrize("name", list(HOSTILE))
def test_each_hostile_input_is_one_line_exit_2_nothing_written(study: Path, nmb_home: Path,
                                                               tmp_path: Path, name: str,
                                                               capsys) -> None:
    shutil.copytree(study, nmb_home)
    url = f"sqlite:///{nmb_home / 'study.db'}"
    before = snapshot(url)
    assert before["files"] and before["task"]
    source, expected = HOSTILE[name](tmp_path / "in")
    if source == "vlmevalkit":
        [path] = (tmp_path / "in").iterdir()
        args = ["import-responses", str(path), "--from", source, "--model", "MyVLM"]
    else:
        info = tmp_path / "CASE.json"
        info.write_text(json.dumps(CASE if source == "dicom" else {
            "sub-01": {"title": "One", "ehr": ""}, "sub-02": {"title": "Two", "ehr": ""}}))
        args = ["import", str(tmp_path / "in"), "--from", source, "--case-info", str(info)]
    capsys.readouterr()
    assert cli.main(args) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("nmb: ") and err.count("\n") == 1, err
    assert expected in err and "Traceback" not in err, err
    assert snapshot(url) == before
    capsys.readouterr()
    assert cli.main([*args, "--dry-run"]) == 2
    assert capsys.readouterr().err == err  # the dry run refuses it the same way
