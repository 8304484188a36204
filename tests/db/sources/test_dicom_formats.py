"""DICOM as hospitals send it: Siemens mosaics (nibabel's real diffusion mosaics), several
b-values in one series, compressed transfer syntaxes (pydicom's real JPEG-LS file, the others
encoded in the test), and what the import holds back or refuses from the header alone (one
line naming the series and why, exit 2, the study unchanged)."""

import gzip
import io
import json
from pathlib import Path

import nibabel as nib
import numpy as np
import pydicom
import pytest
from pydicom import uid
from pydicom.data import get_testdata_file
from pydicom.uid import generate_uid
from sqlmodel import Session, select

import cli
from db.bundle.importer import BundleInvalid
from db.engine import engine_for, nmb_home
from db.models import Series
from db.sources.dicom import import_dicom
from tests.db.bundle.bundles import snapshot
from tests.db.sources.dicom_files import classic_series, compressed, volume, write_series

CASE = {"case_id": "c1", "title": "t", "ehr": "e", "tasks": []}
NIBABEL_DATA = Path(nib.__file__).parent / "nicom" / "tests" / "data"


def _import(url: str, folder: Path, tmp_path: Path, **kw):
    info = tmp_path / "CASE.json"
    info.write_text(json.dumps(CASE))
    with Session(engine_for(url), expire_on_commit=False) as s:
        return import_dicom(s, folder, case_info=info, actor="admin", **kw)


def _lps_to_ras(p) -> np.ndarray:
    return np.asarray(p, float) * [-1, -1, 1]


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:The DICOM readers are highly experimental")
def test_a_siemens_mosaic_dwi_is_one_4d_series_with_its_b_values(sqlite_url: str,
                                                                 tmp_path: Path) -> None:
    """nibabel's two real Siemens diffusion mosaics (48 slices of 128 x 128 tiled in 896 x 896,
    b=0 and b=1000, one series) were refused: "has all its images at one position". Their
    pixels (zero in nibabel's copy) are replaced by random values so every voxel is checked
    against nibabel's own mosaic reader; the scanner's ADC map stays its own series."""
    from nibabel.nicom.dicomwrappers import wrapper_from_data

    rng = np.random.default_rng(7)
    folder, mosaics = tmp_path / "study", []
    folder.mkdir()
    for k, name in enumerate(("siemens_dwi_0.dcm.gz", "siemens_dwi_1000.dcm.gz")):
        ds = pydicom.dcmread(io.BytesIO(gzip.decompress((NIBABEL_DATA / name).read_bytes())))
        ds.PixelData = rng.integers(1, 4000, (ds.Rows, ds.Columns)).astype("<u2").tobytes()
        ds.save_as(folder / f"MOSAIC{k}")
        mosaics.append(ds)
    adc = classic_series("ep2d_diff_3scan_trace_ADC", 13, study_uid=mosaics[0].StudyInstanceUID,
                         frame_uid=generate_uid(), data=volume(6, 6, 3))
    write_series(folder / "adc", adc)
    summary = _import(sqlite_url, folder, tmp_path)
    assert summary.series == ["DTI (b=0,1000): 128x128x48x2", "ADC: 6x6x3"]
    with Session(engine_for(sqlite_url)) as s:
        row = s.exec(select(Series).where(Series.sequence == "DTI (b=0,1000)")).one()
    img = nib.load(nmb_home() / row.path)
    data = np.asarray(img.dataobj)
    to_voxel = np.linalg.inv(img.affine)
    for t, ds in enumerate(mosaics):
        wrapper = wrapper_from_data(ds)  # nibabel's mosaic reader: its voxels and LPS affine
        expected = wrapper.get_data()
        for ijk in rng.integers(0, expected.shape, (200, 3)):
            world = _lps_to_ras((wrapper.affine @ np.append(ijk, 1))[:3])
            at = np.round(to_voxel @ np.append(world, 1))[:3].astype(int)
            assert data[(*at, t)] == expected[tuple(ijk)]


SYNTAXES = {
    # pydicom's real JPEG-LS file: three slices of it
    "jpeg_ls": uid.JPEGLSLossless,
    "jpeg_lossless_sv1": uid.JPEGLosslessSV1,
    "jpeg_2000_lossless": uid.JPEG2000Lossless,
    "jpeg_baseline": uid.JPEGBaseline8Bit,  # lossy: checked within the lossy tolerance
    "rle": uid.RLELossless,
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SYNTAXES))
def test_compressed_series_are_decoded_and_converted(sqlite_url: str, tmp_path: Path,
                                                     name: str) -> None:
    """JPEG-LS was refused ("... missing dependencies:" naming nothing), JPEG lossless could
    not be decoded by pydicom: the `[dicom]` extra brings pylibjpeg's plugins; dcm2niix decodes
    them itself, and its voxels must equal pydicom's pixels (within the tolerance if lossy)."""
    study, frame = generate_uid(), generate_uid()
    if name == "jpeg_ls":
        real = pydicom.dcmread(get_testdata_file("MR_small_jpeg_ls_lossless.dcm"))
        datasets = classic_series("T2 AX", 2, study_uid=study, frame_uid=frame,
                                  data=np.zeros((3, real.Rows, real.Columns), np.int16))
        for ds in datasets:
            ds.file_meta.TransferSyntaxUID = real.file_meta.TransferSyntaxUID
            ds.PixelData, ds.PixelRepresentation = real.PixelData, real.PixelRepresentation
            ds.BitsStored, ds.HighBit = real.BitsStored, real.HighBit
            ds["PixelData"].VR = "OB"
    else:
        datasets = compressed(classic_series("T2 AX", 2, study_uid=study, frame_uid=frame,
                                             data=volume(64, 48, 3)), SYNTAXES[name])
    folder = write_series(tmp_path / "study", datasets)
    assert pydicom.dcmread(folder / "IM00000").file_meta.TransferSyntaxUID == SYNTAXES[name]
    summary = _import(sqlite_url, folder, tmp_path)
    with Session(engine_for(sqlite_url)) as s:
        img = nib.load(nmb_home() / s.exec(select(Series)).one().path)
    ds = pydicom.dcmread(folder / "IM00001")
    assert summary.series == [f"T2: {ds.Columns}x{ds.Rows}x3"]
    # slice 1 in the volume (dcm2niix flips the rows to RAS)
    got = np.flipud(np.asarray(img.dataobj)[:, :, 1].T).astype(float)
    off = np.abs(got - ds.pixel_array).max()
    assert off <= (3 if name == "jpeg_baseline" else 0), off


def test_a_missing_decoder_is_one_line_naming_the_package(sqlite_url: str, tmp_path: Path,
                                                          monkeypatch) -> None:
    """pydicom's message ended at "missing dependencies:" without naming one, once per file;
    now once for the series, naming what to install."""
    from pydicom.pixels import get_decoder

    decoder = get_decoder(uid.JPEGLSLossless)
    for plugin in list(decoder._available):  # as on a machine without the decoders
        monkeypatch.delitem(decoder._available, plugin)
        monkeypatch.setitem(decoder._unavailable, plugin, ("pylibjpeg-libjpeg",))
    real = pydicom.dcmread(get_testdata_file("MR_small_jpeg_ls_lossless.dcm"))
    real.SeriesDescription = "T2 AX"
    folder = tmp_path / "study"
    folder.mkdir()
    for k in range(3):
        real.SOPInstanceUID = real.file_meta.MediaStorageSOPInstanceUID = generate_uid()
        real.ImagePositionPatient = [0, 0, 5.0 * k]
        real.save_as(folder / f"IM{k}")
    before = snapshot(sqlite_url)
    with pytest.raises(BundleInvalid) as e:
        _import(sqlite_url, folder, tmp_path)
    assert [str(p) for p in e.value.problems] == [
        f"study: series {real.SeriesNumber}: IM0: its pixels are JPEG-LS Lossless Image "
        "Compression, which pydicom cannot decode without pylibjpeg and pylibjpeg-libjpeg: pip "
        "install 'neural-medbench-studio[dicom]'"]
    assert snapshot(sqlite_url) == before


def _ultrasound(ds) -> None:
    ds.Modality = "US"


def _photograph(ds) -> None:
    ds.Modality = "XC"
    ds.SOPClassUID = ds.file_meta.MediaStorageSOPClassUID = "1.2.840.10008.5.1.4.1.1.77.1.4"


def _screen_save(ds) -> None:
    ds.ImageType = ["DERIVED", "SECONDARY", "SCREEN SAVE"]


def _face(ds) -> None:
    ds.RecognizableVisualFeatures = "YES"


def _nan_slope(ds) -> None:
    ds.RescaleSlope = "777.5"  # made "nan" in the file's bytes: pydicom writes no NaN


def _huge_slope(ds) -> None:
    ds.RescaleSlope = "1e308"


HOSTILE = {  # name: (change, why)
    "ultrasound": (_ultrasound, "series 2: is an ultrasound image (Modality US): its pixels may "
                   "show patient identifiers (--allow-burned-in after checking them)"),
    "vl_photograph": (_photograph, "series 2: is a visible-light photograph (Modality XC): its "
                      "pixels may show patient identifiers (--allow-burned-in after checking "
                      "them)"),
    "screen_save": (_screen_save, "series 2: is a screen save (ImageType SCREEN SAVE): its "
                    "pixels may show patient identifiers (--allow-burned-in after checking "
                    "them)"),
    "recognizable_face": (_face, "series 2: is marked RecognizableVisualFeatures YES (a face may "
                          "be recognizable): its pixels may show patient identifiers "
                          "(--allow-burned-in after checking them)"),
    "rescale_slope_nan": (_nan_slope, "series 2: IM00000: RescaleSlope nan is not finite"),
    "rescale_slope_1e308": (_huge_slope, "series 2: IM00000: RescaleSlope 1e+308 is outside "
                            "1e-06-1e+06 (damage or a unit mistake)"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_pictures_faces_and_absurd_rescales_are_one_line(sqlite_url: str, tmp_path: Path,
                                                          capsys, name: str) -> None:
    """Ultrasound, VL photographs, screen saves and RecognizableVisualFeatures YES (which
    usually show a name or a face) were imported without --allow-burned-in; a RescaleSlope of
    NaN or 1e308 was dropped silently. Each is one line naming the series, exit 2."""
    change, why = HOSTILE[name]
    datasets = classic_series("T2 AX", 2, study_uid=generate_uid(), frame_uid=generate_uid(),
                              data=volume(6, 6, 3))
    for ds in datasets:
        change(ds)
    folder = write_series(tmp_path / "study", datasets)
    for f in folder.iterdir():
        f.write_bytes(f.read_bytes().replace(b"777.5 ", b"nan   "))
    info = tmp_path / "CASE.json"
    info.write_text(json.dumps(CASE))
    before = snapshot(sqlite_url)
    assert cli.main(["import", str(folder), "--from", "dicom", "--case-info", str(info)]) == 2
    assert capsys.readouterr().err == f"nmb: study: {why}\n"
    assert snapshot(sqlite_url) == before
