"""Hostile DICOM files made with pydicom in the test (a deflate bomb, a compressed image
claiming gigapixels, malformed values): each is one problem naming the file, never a
traceback or an allocation of what the file claims; the study unchanged."""

import json
from pathlib import Path

import pytest
from pydicom.uid import DeflatedExplicitVRLittleEndian, RLELossless, generate_uid
from sqlmodel import Session

from db.bundle.importer import BundleInvalid
from db.engine import engine_for
from db.sources import dicom
from db.sources.dicom import import_dicom
from tests.db.bundle.bundles import snapshot
from tests.db.sources.dicom_files import classic_series, volume, write_series

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
