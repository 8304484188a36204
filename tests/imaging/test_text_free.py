"""`save_text_free` on real NIfTI files written here: every voxel type nibabel reads is
written back with its values, its scale factors and its affine, and no text."""

import gzip
from pathlib import Path

import nibabel as nib
import numpy as np
import pytest

from imaging.text_free import save_text_free


@pytest.mark.parametrize("dtype", ["int64", "uint64", "int16", "float64"])
def test_every_voxel_type_is_written_back_with_its_values(tmp_path: Path, dtype: str) -> None:
    """A 64-bit integer NIfTI (a valid type, e.g. a BIDS label map) raised nibabel's
    ValueError "may cause incompatibilities" from the copy: a traceback at import."""
    data = np.arange(4 * 5 * 6).reshape(4, 5, 6).astype(dtype)
    affine = np.diag([0.9, 1.1, 2.0, 1.0])
    src = nib.Nifti1Image(data, affine, dtype=dtype)
    src.header["descrip"] = b"QUIXOTE 2024-01-17"
    src.header["aux_file"] = b"PID-8372651"
    src.header.set_slope_inter(2.0, -3.0)
    nib.save(src, tmp_path / "in.nii.gz")
    save_text_free(tmp_path / "in.nii.gz", tmp_path / "out.nii.gz")
    out = nib.load(tmp_path / "out.nii.gz")
    assert out.get_data_dtype() == np.dtype(dtype)
    assert np.array_equal(out.get_fdata(), nib.load(tmp_path / "in.nii.gz").get_fdata())
    assert np.allclose(out.affine, affine)
    assert out.header["descrip"].item() == b"" and out.header["aux_file"].item() == b""
    assert b"QUIXOTE" not in gzip.decompress((tmp_path / "out.nii.gz").read_bytes())
