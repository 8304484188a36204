"""Synthetic NIfTI volumes built in world space, for any storage order (no patient data)."""

from pathlib import Path

import nibabel as nib
import numpy as np

_WORLD_AXIS = {"R": 0, "L": 0, "A": 1, "P": 1, "S": 2, "I": 2}
_SIGN = {"R": 1, "L": -1, "A": 1, "P": -1, "S": 1, "I": -1}


def affine_for(codes: str, shape: tuple[int, ...], zooms: tuple[float, ...]) -> np.ndarray:
    """Affine whose storage axis a runs towards direction codes[a], grid centred on world 0.

    Built by hand (not with nibabel's orientation helpers) so that tests check the viewer's
    reorientation against an independent construction.
    """
    affine = np.eye(4)
    affine[:3, :3] = 0
    for axis, code in enumerate(codes):
        affine[_WORLD_AXIS[code], axis] = _SIGN[code] * zooms[axis]
    centre = (np.array(shape[:3], dtype=float) - 1) / 2
    affine[:3, 3] = -affine[:3, :3] @ centre
    return affine


def world_grid(affine: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """World mm of every voxel centre, shape (3, *shape)."""
    ijk = np.indices(shape[:3]).reshape(3, -1).astype(float)
    return (affine[:3, :3] @ ijk + affine[:3, 3:4]).reshape(3, *shape[:3])


def sphere_image(
    codes: str,
    shape: tuple[int, int, int],
    zooms: tuple[float, float, float],
    centre_mm: tuple[float, float, float],
    radius_mm: float = 4.0,
) -> nib.Nifti1Image:
    """Background 10, a sphere of 100 around `centre_mm` (world mm), stored in `codes` order."""
    affine = affine_for(codes, shape, zooms)
    world = world_grid(affine, shape)
    distance = np.linalg.norm(world - np.array(centre_mm)[:, None, None, None], axis=0)
    data = np.where(distance <= radius_mm, 100.0, 10.0).astype(np.float32)
    return nib.Nifti1Image(data, affine)


def save(img: nib.Nifti1Image, path: Path) -> Path:
    nib.save(img, path)
    return path
