"""Decoded volumes on the RAS+ grid, shared through a process-wide byte-bounded LRU cache.

One `Volume` is one 3-D volume of a series (volume 0 of a 4-D image by default), decoded once
to float32 in real units (nibabel applies the scale factors), reoriented to the closest
canonical orientation (RAS+), and kept read-only in the cache so every session shares it.
Only the requested volume is read from the file (`img.dataobj[..., k]`); with `indexed_gzip`
installed nibabel reads `.nii.gz` through a seekable index.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

import nibabel as nib
import numpy as np

from errors import UserError
from imaging.cache import ByteBoundedLRU, cache_budget_bytes
from imaging.image_file import CORRUPT, open_image, reading, spatial_shape
from imaging.window import IntensityStats, intensity_stats


@dataclass(eq=False)
class Volume:
    """One decoded 3-D volume of a series, on its closest-canonical (RAS+) voxel grid."""

    path: Path
    index: int
    n_volumes: int
    data: np.ndarray  # float32, read-only, Fortran order (axial slices contiguous)
    affine: np.ndarray  # RAS+ voxel -> world (scanner mm)
    has_nonfinite: bool
    _stats: IntensityStats | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def shape(self) -> tuple[int, int, int]:
        return self.data.shape  # type: ignore[return-value]

    @property
    def voxel_sizes(self) -> tuple[float, float, float]:
        """Voxel edge lengths in mm along the RAS+ array axes."""
        sizes = nib.affines.voxel_sizes(self.affine)
        return float(sizes[0]), float(sizes[1]), float(sizes[2])

    @property
    def nbytes(self) -> int:
        return int(self.data.nbytes)

    def intensity_stats(self) -> IntensityStats:
        """Window statistics, computed on first use and then kept with the volume."""
        with self._lock:
            if self._stats is None:
                self._stats = intensity_stats(self.data, all_finite=not self.has_nonfinite)
            return self._stats

    def world_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """(min, max) world mm of the voxel centres along x, y, z."""
        corners = np.array(np.meshgrid(*[[0, n - 1] for n in self.shape])).reshape(3, -1)
        world = self.affine[:3, :3] @ corners + self.affine[:3, 3:4]
        return world.min(axis=1), world.max(axis=1)

    def center_world(self) -> np.ndarray:
        """World mm of the centre of the voxel grid."""
        mins, maxs = self.world_bounds()
        return (mins + maxs) / 2


def decode_volume(path: Path, volume: int = 0) -> Volume:
    """Read volume `volume` of the image at `path` and reorient it to RAS+ (no cache)."""
    path = Path(path)
    img = open_image(path)
    _, n_volumes = spatial_shape(img, path.name)
    if not 0 <= volume < n_volumes:
        raise UserError(f"{path.name}: volume {volume} out of range 0..{n_volumes - 1}")
    extra = len(img.shape) - 3
    slicer = (slice(None),) * 3 + ((volume,) + (0,) * (extra - 1) if extra else ())
    with reading(path.name, CORRUPT):
        raw = np.asarray(img.dataobj[slicer], dtype=np.float32)
        if raw.base is not None:  # a view of a memory-mapped file: take a private copy
            raw = np.array(raw)
    ornt = nib.orientations.io_orientation(img.affine)
    data = nib.orientations.apply_orientation(raw, ornt)
    affine = img.affine @ nib.orientations.inv_ornt_aff(ornt, raw.shape)
    data = np.asfortranarray(data)
    data.flags.writeable = False
    has_nonfinite = not bool(np.isfinite(data).all())
    return Volume(path, volume, n_volumes, data, np.asarray(affine, dtype=float), has_nonfinite)


_CACHE: ByteBoundedLRU[Volume] = ByteBoundedLRU(cache_budget_bytes(), size_of=lambda v: v.nbytes)


def volume_cache() -> ByteBoundedLRU[Volume]:
    """The process-wide cache (bound: NMB_VOLUME_CACHE_MB, read at import, default 1024)."""
    return _CACHE


def load_volume(path: Path, volume: int = 0) -> Volume:
    """The decoded volume, from the process-wide cache when its file has not changed.

    The key is (resolved path, modification time, size, volume index): a replaced file is
    decoded again, an unchanged one never re-read.
    """
    path = Path(path)
    try:
        st = path.resolve().stat()
    except OSError:
        raise UserError(f"{path.name}: file not found") from None  # as open_image
    key = (str(path.resolve()), st.st_mtime_ns, st.st_size, int(volume))
    return _CACHE.get_or_load(key, lambda: decode_volume(path, volume))
