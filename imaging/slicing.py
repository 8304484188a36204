"""Take a 2-D slice of a volume in screen orientation, by slice index or by world position.

Sequences on different grids are synchronized through world (scanner mm) coordinates: the
shared position is a world point, and each volume shows the slice nearest to it through its
own affine (`inv(affine) @ point`), so a flipped or coarser grid still shows the same anatomy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from errors import UserError
from imaging.geometry import (
    NORMAL_AXIS,
    check_plane,
    screen_layout,
    screen_position,
    to_screen,
    voxel_to_world,
    world_to_voxel,
)
from imaging.volume import Volume


@dataclass(frozen=True)
class Slice:
    """A slice ready to window and render.

    `pixels` are in screen order (row 0 at the top, column 0 at the left), float32 in image
    units, possibly a view of the volume. `pixel_mm` is (row spacing, column spacing).
    `crosshair` is the screen (row, column) of the crosshair point, or None if it is not set
    or lies outside the slice. `in_view` is False when the requested world position is outside
    the volume; `pixels` are then background.
    """

    plane: str
    index: int
    n_slices: int
    pixels: np.ndarray
    pixel_mm: tuple[float, float]
    letters: dict[str, str]
    crosshair: tuple[float, float] | None
    in_view: bool
    has_nonfinite: bool


def slice_index(volume: Volume, plane: str, world_mm: np.ndarray) -> int | None:
    """Index of the slice of `plane` nearest to the world point, or None if outside the volume."""
    axis = NORMAL_AXIS[check_plane(plane)]
    position = world_to_voxel(volume.affine, world_mm)[axis]
    index = int(np.floor(position + 0.5))
    return index if 0 <= index < volume.shape[axis] else None


def slice_world(volume: Volume, plane: str, index: int) -> np.ndarray:
    """World mm of the centre of slice `index` of `plane` (the in-plane centre of the grid)."""
    axis = NORMAL_AXIS[check_plane(plane)]
    voxel = (np.array(volume.shape, dtype=float) - 1) / 2
    voxel[axis] = index
    return voxel_to_world(volume.affine, voxel)


def take_slice(
    volume: Volume,
    plane: str,
    *,
    index: int | None = None,
    world_mm: np.ndarray | None = None,
    crosshair_mm: np.ndarray | None = None,
    radiological: bool = True,
) -> Slice:
    """The slice of `plane` at `index`, or nearest to `world_mm`, or the middle one.

    `index` counts along the RAS+ grid (0 = rightmost / most posterior / most inferior slice).
    """
    axis = NORMAL_AXIS[check_plane(plane)]
    n_slices = volume.shape[axis]
    layout = screen_layout(plane, radiological)
    in_view = True
    if index is None and world_mm is not None:
        found = slice_index(volume, plane, world_mm)
        in_view = found is not None
        index = found if found is not None else n_slices // 2
    elif index is None:
        index = n_slices // 2
    elif not 0 <= index < n_slices:
        raise UserError(
            f"{volume.path.name}: {plane} slice index {index} out of range 0..{n_slices - 1}"
        )
    slab = volume.data[(slice(None),) * axis + (index,)]  # a view, no copy
    pixels = to_screen(slab, layout)
    if not in_view:
        pixels = np.zeros(pixels.shape, dtype=np.float32)
    sizes = volume.voxel_sizes
    crosshair = None
    if crosshair_mm is not None:
        voxel = world_to_voxel(volume.affine, crosshair_mm)
        row, col = screen_position(voxel, volume.shape, layout)
        if -0.5 <= row < pixels.shape[0] - 0.5 and -0.5 <= col < pixels.shape[1] - 0.5:
            crosshair = (row, col)
    return Slice(
        plane=plane,
        index=index,
        n_slices=n_slices,
        pixels=pixels,
        pixel_mm=(sizes[layout.row_axis], sizes[layout.col_axis]),
        letters=layout.letters,
        crosshair=crosshair,
        in_view=in_view,
        has_nonfinite=volume.has_nonfinite and in_view,
    )

