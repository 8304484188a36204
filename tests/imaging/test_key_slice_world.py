"""Where the interactive viewer opens: a key slice's world point from the image header, on
grids stored in any orientation, and the start point combined from several key slices."""

from pathlib import Path

import nibabel as nib
import numpy as np
import pytest

from imaging.key_slices import key_slice_world
from ui.volume_viewer import key_slice_jumps, start_point


def _image(path: Path, affine: np.ndarray, shape=(20, 30, 40)) -> Path:
    nib.save(nib.Nifti1Image(np.zeros(shape, dtype=np.int16), affine), path)
    return path


@pytest.mark.parametrize("affine", [
    np.diag([2.0, 2.0, 3.0, 1.0]),  # RAS
    np.array([[-1.5, 0, 0, 30], [0, -1.5, 0, 40], [0, 0, 2, -20], [0, 0, 0, 1]]),  # LPS
    np.array([[0, 0, 1.0, -5], [-1.0, 0, 0, 12], [0, 1.0, 0, 7], [0, 0, 0, 1]]),  # permuted
])
def test_the_point_is_the_slice_centre_on_the_ras_grid(tmp_path: Path, affine) -> None:
    path = _image(tmp_path / "t1.nii.gz", affine)
    canonical = nib.as_closest_canonical(nib.load(path))
    shape = canonical.shape
    for plane, axis in (("sagittal", 0), ("coronal", 1), ("axial", 2)):
        index = shape[axis] // 3
        voxel = [(n - 1) / 2 for n in shape]
        voxel[axis] = index
        expected = nib.affines.apply_affine(canonical.affine, voxel)
        assert np.allclose(key_slice_world(path, plane, index), expected), plane
        middle = nib.affines.apply_affine(canonical.affine, [(n - 1) / 2 for n in shape])
        assert np.allclose(key_slice_world(path, plane, None), middle)
    beyond = key_slice_world(path, "axial", 10_000)  # clamped to the last slice
    voxel = [(n - 1) / 2 for n in shape]
    voxel[2] = shape[2] - 1
    assert np.allclose(beyond, nib.affines.apply_affine(canonical.affine, voxel))


def test_the_start_takes_each_axis_from_the_key_slice_across_it(tmp_path: Path) -> None:
    path = _image(tmp_path / "t1.nii.gz", np.diag([1.0, 1.0, 1.0, 1.0]))
    jumps = key_slice_jumps({"T1": path}, [
        {"series": "T1", "plane": "coronal", "index": 5},
        {"series": "T2", "plane": "axial", "index": 3},  # not a shown series: left out
        {"series": "T1", "plane": "axial", "index": 7},
        {"series": "T1", "plane": "sagittal", "index": None},
        {"series": "T1", "plane": "oblique", "index": 1},  # not a plane: left out
    ])
    assert [j["label"] for j in jumps] == ["T1 coronal 6", "T1 axial 8", "T1 sagittal middle"]
    start = start_point(jumps)
    assert start["plane"] == "coronal"
    assert start["mm"] == pytest.approx([9.5, 5.0, 7.0])  # sagittal middle, coronal 5, axial 7
