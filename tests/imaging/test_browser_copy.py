"""The viewer's copy of a series: the same voxels in the same place, and no header text."""

import gzip
from pathlib import Path

import nibabel as nib
import numpy as np
import pytest

from errors import UserError
from imaging import load_volume, preset_window
from imaging.browser_copy import write_browser_copy

TEXT = b"meridian-med-2 says glioma"


def _tagged(path: Path, data: np.ndarray, affine: np.ndarray, *, slope: float = 1.0,
            inter: float = 0.0) -> Path:
    """A NIfTI whose every free-text field and an extension carry TEXT."""
    img = nib.Nifti1Image(data, affine)
    hdr = img.header
    hdr.set_slope_inter(slope, inter)
    hdr["descrip"] = TEXT
    hdr["aux_file"] = TEXT[:23]
    hdr["intent_name"] = TEXT[:15]
    hdr["db_name"] = TEXT[:17]
    hdr.extensions.append(nib.nifti1.Nifti1Extension(6, TEXT))  # code 6: comment
    nib.save(img, path)
    return path


def _oblique_affine() -> np.ndarray:
    affine = np.diag([-2.0, 2.5, 4.0, 1.0])
    affine[:3, 3] = [40.0, -60.0, -30.0]
    return affine


def test_copy_keeps_voxels_scaling_and_geometry_but_no_text(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    data = rng.integers(0, 3000, (20, 16, 12), dtype=np.int16)
    src = _tagged(tmp_path / "flair.nii.gz", data, _oblique_affine(), slope=0.5, inter=10.0)
    out = write_browser_copy(src, tmp_path / "copy" / "x.nii.gz")

    raw = gzip.decompress(out.read_bytes())
    assert b"meridian" not in raw and b"glioma" not in raw
    copy = nib.load(out)
    hdr = copy.header
    for field in ("descrip", "aux_file", "intent_name", "db_name"):
        assert hdr[field].tobytes().strip(b"\0") == b"", field
    assert len(hdr.extensions) == 0
    assert hdr.get_data_dtype() == np.int16  # not widened to float
    assert np.allclose(copy.affine, _oblique_affine())
    assert np.array_equal(np.asanyarray(copy.dataobj), data * 0.5 + 10.0)
    auto = preset_window(load_volume(src).intensity_stats(), "auto")  # the PNG viewer's default
    assert (float(hdr["cal_min"]), float(hdr["cal_max"])) == pytest.approx((auto.low, auto.high))


def test_copy_of_float_4d_and_mgh(tmp_path: Path) -> None:
    data = np.arange(4 * 5 * 6 * 2, dtype=np.float64).reshape(4, 5, 6, 2)
    data[1, 1, 1, 0] = np.nan
    src = _tagged(tmp_path / "dwi.nii", data, np.eye(4))
    copy = nib.load(write_browser_copy(src, tmp_path / "dwi-copy.nii.gz"))
    assert copy.shape == (4, 5, 6, 2) and copy.get_data_dtype() == np.float32
    expected = np.nan_to_num(data).astype(np.float32)
    assert np.array_equal(np.asanyarray(copy.dataobj), expected)

    mgh = tmp_path / "t1.mgz"
    nib.save(nib.MGHImage(np.ones((6, 7, 8), np.uint8) * 7, _oblique_affine()), mgh)
    copy = nib.load(write_browser_copy(mgh, tmp_path / "t1-copy.nii.gz"))
    assert isinstance(copy, nib.Nifti1Image) and np.allclose(copy.affine, _oblique_affine())
    assert np.all(np.asanyarray(copy.dataobj) == 7)


def test_unreadable_image_is_one_line_naming_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "broken.nii.gz"
    bad.write_bytes(b"not an image")
    with pytest.raises(UserError, match="broken.nii.gz"):
        write_browser_copy(bad, tmp_path / "out.nii.gz")
    assert not (tmp_path / "out.nii.gz").exists()
