"""Key slices: the few slices of a case's series that a model is shown.

A bundle may name them per case (`key_slices`: series, plane, index); otherwise the default is
three orthogonal slices (axial, coronal, sagittal) through the centre of each series. A slice is
rendered as the viewer shows it by default: RAS+ grid, radiological convention, the "auto"
window, orientation letters at the edges.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import nibabel as nib

from imaging.geometry import NORMAL_AXIS, PLANES
from imaging.image_file import open_image, spatial_shape
from imaging.render import render_png
from imaging.slicing import take_slice
from imaging.volume import load_volume
from imaging.window import preset_window

WINDOW = "auto"
RENDER_VERSION = "1"  # bump when a key slice would render differently


@dataclass(frozen=True)
class KeySlice:
    """One slice to show: a series (its sequence name), a plane, and an index on the RAS+ grid
    (None: the middle slice)."""

    series: str
    plane: str
    index: int | None = None


def default_key_slices(sequences: list[str]) -> list[KeySlice]:
    """Three orthogonal slices through the centre of each series, in series order."""
    return [KeySlice(seq, plane) for seq in sequences for plane in PLANES]


def ras_shape(path: Path) -> tuple[int, int, int]:
    """The (x, y, z) shape of the image on its RAS+ grid (header only, no voxel data read):
    slice indices count along these axes."""
    img = open_image(Path(path))
    shape, _ = spatial_shape(img, Path(path).name)
    ornt = nib.orientations.io_orientation(img.affine)
    out = [0, 0, 0]
    for axis, (target, _flip) in enumerate(ornt):
        out[int(target)] = shape[axis]
    return out[0], out[1], out[2]


def n_slices(path: Path, plane: str) -> int:
    """How many slices the image has in `plane`."""
    return ras_shape(path)[NORMAL_AXIS[plane]]


@dataclass(frozen=True)
class RenderedSlice:
    """A key slice as PNG bytes, with the index actually shown and the number of slices."""

    png: bytes
    index: int
    n_slices: int


def render_key_slice(path: Path, plane: str, index: int | None = None) -> RenderedSlice:
    """Render one key slice of the image at `path` (UserError for an index out of range)."""
    vol = load_volume(Path(path))
    sl = take_slice(vol, plane, index=index)
    return RenderedSlice(render_png(sl, preset_window(vol.intensity_stats(), WINDOW)),
                         sl.index, sl.n_slices)


def key_slice_world(path: Path, plane: str, index: int | None = None) -> tuple[float, float, float]:
    """The world (scanner mm) point at the centre of a key slice (header only): the slice's
    voxel `index` along the plane's normal on the RAS+ grid (None: the middle one), the middle
    of the other two axes. The interactive viewer opens there."""
    img = open_image(Path(path))
    shape, _ = spatial_shape(img, Path(path).name)
    ornt = nib.orientations.io_orientation(img.affine)
    ras = ras_shape(path)
    canonical = img.affine @ nib.orientations.inv_ornt_aff(ornt, shape)
    voxel = [(n - 1) / 2 for n in ras]
    axis = NORMAL_AXIS[plane]
    if index is not None:
        voxel[axis] = min(max(int(index), 0), ras[axis] - 1)
    x, y, z = nib.affines.apply_affine(canonical, voxel)
    return float(x), float(y), float(z)
