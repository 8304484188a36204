"""Planes, screen orientation and world (scanner mm) <-> voxel mapping on an RAS+ grid.

Volumes are held reoriented to the closest canonical orientation (RAS+: array axis 0 runs
towards the patient's Right, axis 1 Anterior, axis 2 Superior), as nibabel's
`as_closest_canonical` defines it. Screen conventions (radiological by default):

- axial: anterior at the top; patient's right on screen left (radiological) or right
  (neurological);
- coronal: superior at the top; right/left as for axial;
- sagittal: superior at the top, anterior on screen left (the usual DICOM display; the
  radiological/neurological switch does not apply).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from errors import UserError

PLANES: tuple[str, ...] = ("axial", "coronal", "sagittal")

# Array axis (on the RAS+ grid) normal to each plane.
NORMAL_AXIS: dict[str, int] = {"sagittal": 0, "coronal": 1, "axial": 2}


def check_plane(plane: str) -> str:
    """Return `plane` if it is one of PLANES, else raise UserError."""
    if plane not in NORMAL_AXIS:
        raise UserError(f"plane {plane!r} is not one of {', '.join(PLANES)}")
    return plane


@dataclass(frozen=True)
class ScreenLayout:
    """How an RAS+ slice maps to screen rows and columns.

    `row_axis`/`col_axis` are the RAS+ array axes shown down the rows and across the columns;
    `row_flip`/`col_flip` say whether screen order runs against the array axis.
    `letters` are the patient directions at the top, bottom, left and right edges.
    """

    row_axis: int
    col_axis: int
    row_flip: bool
    col_flip: bool
    letters: dict[str, str]


def screen_layout(plane: str, radiological: bool = True) -> ScreenLayout:
    """The screen layout of `plane` (see the module docstring for the conventions)."""
    check_plane(plane)
    # Radiological: screen left = patient Right = high x, so columns run against axis 0.
    lr = {"left": "R", "right": "L"} if radiological else {"left": "L", "right": "R"}
    if plane == "axial":
        return ScreenLayout(1, 0, True, radiological, {"top": "A", "bottom": "P", **lr})
    if plane == "coronal":
        return ScreenLayout(2, 0, True, radiological, {"top": "S", "bottom": "I", **lr})
    return ScreenLayout(
        2, 1, True, True, {"top": "S", "bottom": "I", "left": "A", "right": "P"}
    )


def to_screen(slab: np.ndarray, layout: ScreenLayout) -> np.ndarray:
    """Reorder a 2-D RAS+ slice (axes in increasing array order) into screen rows x columns.

    Returns a view (no copy): the transpose and flips are strides only.
    """
    # `slab` axes are the two remaining RAS+ axes in increasing order.
    view = slab if layout.row_axis < layout.col_axis else slab.T
    if layout.row_flip:
        view = view[::-1, :]
    if layout.col_flip:
        view = view[:, ::-1]
    return view


def screen_position(
    voxel: np.ndarray, shape: tuple[int, int, int], layout: ScreenLayout
) -> tuple[float, float]:
    """Screen (row, column) in slice pixels of a continuous RAS+ voxel coordinate."""
    row = float(voxel[layout.row_axis])
    col = float(voxel[layout.col_axis])
    if layout.row_flip:
        row = shape[layout.row_axis] - 1 - row
    if layout.col_flip:
        col = shape[layout.col_axis] - 1 - col
    return row, col


def world_to_voxel(affine: np.ndarray, world_mm: np.ndarray) -> np.ndarray:
    """Continuous voxel coordinate of a world (scanner mm) point: inv(affine) @ [x, y, z, 1]."""
    point = np.append(np.asarray(world_mm, dtype=float), 1.0)
    return (np.linalg.inv(affine) @ point)[:3]


def voxel_to_world(affine: np.ndarray, voxel: np.ndarray) -> np.ndarray:
    """World (scanner mm) coordinate of a voxel coordinate: affine @ [i, j, k, 1]."""
    return (affine @ np.append(np.asarray(voxel, dtype=float), 1.0))[:3]
