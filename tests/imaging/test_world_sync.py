"""Series on different grids (resolution, flipped and permuted storage) show the same anatomy."""

import nibabel as nib
import numpy as np

from imaging import load_volume, slice_index, take_slice
from imaging.geometry import NORMAL_AXIS, voxel_to_world
from tests.imaging.synthetic import affine_for, save, sphere_image, world_grid

LESION_MM = (-10.0, 6.0, 14.0)


def _two_grids(tmp_path):
    fine = sphere_image("RAS", (48, 56, 44), (1.0, 1.0, 1.0), LESION_MM, radius_mm=5.0)
    # Coarse, stored posterior-inferior-left, origin shifted so the grids do not line up.
    coarse_affine = affine_for("PIL", (22, 15, 19), (2.5, 4.0, 3.0))
    coarse_affine[:3, 3] += (1.3, -0.7, 0.4)
    coarse = _sphere_on(coarse_affine, (22, 15, 19))
    return (
        load_volume(save(fine, tmp_path / "fine.nii.gz")),
        load_volume(save(coarse, tmp_path / "coarse.nii")),
    )


def _sphere_on(affine, shape):
    world = world_grid(affine, shape)
    distance = np.linalg.norm(world - np.array(LESION_MM)[:, None, None, None], axis=0)
    return nib.Nifti1Image(np.where(distance <= 5.0, 100.0, 10.0).astype(np.float32), affine)


def test_same_world_point_selects_the_same_plane_on_both_grids(tmp_path):
    fine, coarse = _two_grids(tmp_path)
    for plane, axis in NORMAL_AXIS.items():
        for offset in (-9.0, -2.0, 0.0, 3.5, 6.0):
            point = np.array(LESION_MM)
            point[axis] += offset
            for volume in (fine, coarse):
                index = slice_index(volume, plane, point)
                assert index is not None
                voxel = np.zeros(3)
                voxel[axis] = index
                plane_mm = voxel_to_world(volume.affine, voxel)[axis]
                assert abs(plane_mm - point[axis]) <= volume.voxel_sizes[axis] / 2 + 1e-6


def test_lesion_and_crosshair_agree_across_grids(tmp_path):
    fine, coarse = _two_grids(tmp_path)
    point = np.array(LESION_MM)
    for plane in ("axial", "coronal", "sagittal"):
        for volume in (fine, coarse):
            sl = take_slice(volume, plane, world_mm=point, crosshair_mm=point)
            assert sl.in_view
            row, col = (round(v) for v in sl.crosshair)
            assert sl.pixels[row, col] == 100.0, f"{plane}: crosshair off the lesion"
            away = point.copy()
            away[NORMAL_AXIS[plane]] += 12.0
            assert not (take_slice(volume, plane, world_mm=away).pixels == 100.0).any()


def test_position_outside_a_series_is_shown_as_background(tmp_path):
    fine, _ = _two_grids(tmp_path)
    sl = take_slice(fine, "axial", world_mm=np.array((0.0, 0.0, 500.0)))
    assert not sl.in_view
    assert not sl.pixels.any()
