"""Lesion masks: whole-number labels >= 0 in one 3-D volume, and their world boxes."""

from pathlib import Path

import nibabel as nib
import numpy as np
import pytest

from errors import UserError
from imaging import image_box, inspect_mask, overlaps


def _save(path: Path, data: np.ndarray, affine: np.ndarray | None = None,
          slope: float | None = None) -> Path:
    img = nib.Nifti1Image(data, np.diag([2.0, 2.0, 2.0, 1.0]) if affine is None else affine)
    if slope is not None:
        img.header.set_slope_inter(slope, 0.0)
    nib.save(img, path)
    return path


@pytest.mark.parametrize("data", [
    np.eye(4, dtype=np.uint8)[:, :, None].repeat(3, axis=2),  # 0/1 uint8
    np.eye(4, dtype=np.float32)[:, :, None].repeat(3, axis=2),  # 0/1 float
    np.arange(48, dtype=np.int16).reshape(4, 4, 3),  # many labels
])
def test_label_images_are_masks(tmp_path: Path, data: np.ndarray) -> None:
    info, (low, high) = inspect_mask(_save(tmp_path / "m.nii.gz", data))
    assert info.shape == (4, 4, 3) and info.voxel_sizes == (2.0, 2.0, 2.0)
    assert low.tolist() == [-1.0, -1.0, -1.0] and high.tolist() == [7.0, 7.0, 5.0]


@pytest.mark.parametrize(("data", "slope", "found"), [
    (np.full((4, 4, 3), 0.5, np.float32), None, "found 0.5"),
    (np.full((4, 4, 3), -1, np.int16), None, "found -1"),
    (np.full((4, 4, 3), np.nan, np.float32), None, "found nan"),
    (np.ones((4, 4, 3), np.int16), 0.3, "found 0.3"),  # scale factors are applied
])
def test_non_labels_are_refused(tmp_path: Path, data: np.ndarray, slope: float | None,
                                found: str) -> None:
    with pytest.raises(UserError, match=rf"^m\.nii\.gz: a mask holds whole-number labels .*{found}"):
        inspect_mask(_save(tmp_path / "m.nii.gz", data, slope=slope))


def test_a_mask_is_one_volume(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="one 3-D volume, this image has 2 volumes"):
        inspect_mask(_save(tmp_path / "m.nii.gz", np.zeros((4, 4, 3, 2), np.uint8)))


def test_world_boxes_overlap_across_grids(tmp_path: Path) -> None:
    series = image_box(_save(tmp_path / "s.nii.gz", np.zeros((8, 8, 8), np.int16)))  # 2 mm
    fine = np.diag([1.0, 1.0, 1.0, 1.0])
    _, inside = inspect_mask(_save(tmp_path / "a.nii.gz", np.zeros((4, 4, 4), np.uint8), fine))
    fine[:3, 3] = [40.0, 0.0, 0.0]
    _, beside = inspect_mask(_save(tmp_path / "b.nii.gz", np.zeros((4, 4, 4), np.uint8), fine))
    assert overlaps(inside, series) and not overlaps(beside, series)
