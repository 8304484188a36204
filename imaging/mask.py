"""Lesion masks: label images (integer labels >= 0, 0 = background) drawn over a case's series.

A mask passes every check of a series image (`open_image`: size caps, header, affine) and
must in addition be one 3-D volume whose every voxel is a whole number >= 0 (scale factors
applied; a 0/1 float mask is fine, 0.5 is not). Its grid may differ from the series': the
viewer resamples it through its own affine into world (scanner mm) space, so it must overlap
the series it is drawn on there (`world_box`, `overlaps`).
"""

from __future__ import annotations

from pathlib import Path

import nibabel as nib
import numpy as np

from errors import UserError
from imaging.image_file import (
    CORRUPT,
    ImageInfo,
    check_voxel_sizes,
    open_image,
    reading,
    spatial_shape,
)

Box = tuple[np.ndarray, np.ndarray]  # lowest and highest world corner, mm


def inspect_mask(path: Path) -> tuple[ImageInfo, Box]:
    """Validate a mask image; its description and world box. UserError (one line) if unusable."""
    path = Path(path)
    name = path.name
    img = open_image(path)
    shape, n_volumes = spatial_shape(img, name)
    if n_volumes > 1:
        raise UserError(f"{name}: a mask is one 3-D volume, this image has {n_volumes} volumes")
    with reading(name, "not an image nibabel can read"):
        check_voxel_sizes(path, img)
    with reading(name, CORRUPT):
        data = np.asanyarray(img.dataobj)
    bad = ~np.isfinite(data) | (data < 0) | (data != np.round(data))
    if bad.any():
        value = data[bad].flat[0]
        raise UserError(f"{name}: a mask holds whole-number labels >= 0 (0 = background), "
                        f"found {value:g} in {int(bad.sum())} voxels")
    sizes = nib.affines.voxel_sizes(img.affine)
    info = ImageInfo(shape=tuple(int(n) for n in img.shape),
                     voxel_sizes=(float(sizes[0]), float(sizes[1]), float(sizes[2])),
                     n_volumes=1, dtype=np.dtype(img.get_data_dtype()).name)
    return info, world_box(shape, img.affine)


def image_box(path: Path) -> Box:
    """The world box of an image, from its header alone."""
    img = open_image(Path(path))
    return world_box(spatial_shape(img, Path(path).name)[0], img.affine)


def world_box(shape: tuple[int, ...], affine: np.ndarray) -> Box:
    """The axis-aligned world box (mm) covered by a grid's voxels, half a voxel beyond centres."""
    corners = np.array([[i, j, k] for i in (-0.5, shape[0] - 0.5) for j in (-0.5, shape[1] - 0.5)
                        for k in (-0.5, shape[2] - 0.5)])
    world = nib.affines.apply_affine(np.asarray(affine, float), corners)
    return world.min(axis=0), world.max(axis=0)


def overlaps(a: Box, b: Box) -> bool:
    """Whether two world boxes share some volume."""
    return bool(np.all(np.minimum(a[1], b[1]) > np.maximum(a[0], b[0])))
