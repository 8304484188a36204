"""inspect_image: describes good images, refuses the rest with one line naming the file."""

import gzip
import os
from pathlib import Path

import nibabel as nib
import numpy as np
import pytest
from nibabel.testing import data_path

from errors import UserError
from imaging import inspect_image


def _nifti(tmp_path, name, shape=(6, 7, 8), affine=None, dtype=np.int16):
    path = tmp_path / name
    data = np.arange(np.prod(shape)).reshape(shape).astype(dtype)
    nib.save(nib.Nifti1Image(data, np.diag([1.0, 1.5, 2.0, 1.0]) if affine is None else affine), path)
    return path


@pytest.mark.parametrize("name", ["t1.nii", "t1.nii.gz", "t1.mgz"])
def test_describes_3d_images(tmp_path, name):
    path = tmp_path / name
    data = np.ones((6, 7, 8), dtype=np.float32)
    cls = nib.MGHImage if name.endswith(".mgz") else nib.Nifti1Image
    nib.save(cls(data, np.diag([1.0, 1.5, 2.0, 1.0])), path)
    info = inspect_image(path)
    assert info.shape == (6, 7, 8)
    assert info.voxel_sizes == (1.0, 1.5, 2.0)
    assert info.n_volumes == 1
    assert info.dtype == "float32"


def test_describes_4d_images(tmp_path):
    info = inspect_image(_nifti(tmp_path, "bold.nii.gz", shape=(4, 5, 6, 3)))
    assert (info.shape, info.n_volumes, info.dtype) == ((4, 5, 6, 3), 3, "int16")


def _refused(path, match):
    with pytest.raises(UserError, match=match) as caught:
        inspect_image(path)
    message = str(caught.value)
    assert path.name in message and "\n" not in message
    return message


def test_refuses_2d_and_5d(tmp_path):
    _refused(_nifti(tmp_path, "flat.nii", shape=(6, 7)), "2-D")
    _refused(_nifti(tmp_path, "vector.nii", shape=(3, 4, 5, 2, 3)), "5-D")


def test_refuses_cifti():
    _refused(Path(data_path) / "row_major.dconn.nii", "CIFTI")


def test_refuses_non_finite_affine(tmp_path):
    path = _nifti(tmp_path, "nan_affine.nii")
    img = nib.load(path)
    header = img.header.copy()
    header["srow_x"][0] = np.nan
    header.set_qform(None, code=0)
    with open(path, "r+b") as fh:  # write the raw header: nibabel refuses to save a NaN affine
        header.write_to(fh)
    _refused(path, "not finite")


def test_refuses_header_claiming_more_data_than_the_file_holds(tmp_path):
    path = _nifti(tmp_path, "short.nii")
    os.truncate(path, path.stat().st_size - 10)
    _refused(path, "header claims")


def test_refuses_truncated_gzip(tmp_path):
    path = tmp_path / "cut.nii.gz"
    rng = np.random.default_rng(0)
    nib.save(nib.Nifti1Image(rng.normal(size=(20, 20, 20)).astype(np.float32), np.eye(4)), path)
    blob = path.read_bytes()
    path.write_bytes(blob[: len(blob) * 2 // 3])
    _refused(path, "truncated or corrupt")


def test_refuses_corrupt_gzip_data(tmp_path):
    raw = tmp_path / "ok.nii"
    nib.save(nib.Nifti1Image(np.ones((30, 30, 30), dtype=np.float32), np.eye(4)), raw)
    blob = bytearray(gzip.compress(raw.read_bytes()))
    middle = len(blob) // 2
    blob[middle : middle + 32] = bytes(range(32))
    path = tmp_path / "corrupt.nii.gz"
    path.write_bytes(bytes(blob))
    _refused(path, "corrupt|not an image")


def test_refuses_non_images_and_missing_files(tmp_path):
    text = tmp_path / "notes.nii"
    text.write_text("not an image\n")
    _refused(text, "not an image")
    _refused(tmp_path / "absent.nii.gz", "not found")
