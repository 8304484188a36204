"""Open an image file with nibabel, refusing what the viewer cannot show, and inspect it.

Every refusal is a `UserError` with one line naming the file: not an image, CIFTI, 2-D or
more than 4-D, non-finite or singular affine, header claiming more data than the file holds,
truncated or corrupt data.
"""

from __future__ import annotations

import os
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

import nibabel as nib
import numpy as np
from nibabel.filebasedimages import ImageFileError
from nibabel.spatialimages import HeaderDataError, ImageDataError, SpatialImage

from errors import UserError, one_line

# Exceptions nibabel, zlib, indexed_gzip and numpy raise on files that are not readable images.
READ_ERRORS: tuple[type[BaseException], ...] = (
    ImageFileError,
    HeaderDataError,
    ImageDataError,
    OSError,  # includes indexed_gzip.ZranError and "Expected N bytes, got M" from nibabel
    EOFError,
    ValueError,
    zlib.error,
    struct.error,
    ImportError,  # e.g. MINC2 needs h5py
)
try:  # PAR/REC errors derive from Exception only
    from nibabel.parrec import PARRECError

    READ_ERRORS += (PARRECError,)
except ImportError:  # pragma: no cover
    pass

MAX_VOXELS = 2**31
COMPRESSED_MAGIC = (b"\x1f\x8b", b"BZh", b"\x28\xb5\x2f\xfd")  # gzip, bzip2, zstd


@dataclass(frozen=True)
class ImageInfo:
    """What bundle validation needs to know about a series image."""

    shape: tuple[int, ...]
    voxel_sizes: tuple[float, float, float]
    n_volumes: int
    dtype: str


def _one_line(exc: BaseException) -> str:
    return one_line(str(exc), 160) or type(exc).__name__


def spatial_shape(img: SpatialImage, name: str) -> tuple[tuple[int, int, int], int]:
    """(x, y, z) shape and number of volumes; trailing singleton dimensions are ignored."""
    shape = tuple(int(n) for n in img.shape)
    while len(shape) > 3 and shape[-1] == 1:
        shape = shape[:-1]
    if len(shape) < 3:
        raise UserError(f"{name}: a {len(shape)}-D image cannot be shown as slices (need 3-D or 4-D)")
    if len(shape) > 4:
        raise UserError(f"{name}: a {len(shape)}-D image is not supported (need 3-D or 4-D)")
    if min(shape) < 1:
        raise UserError(f"{name}: image has an empty dimension {shape}")
    return shape[:3], (shape[3] if len(shape) == 4 else 1)  # type: ignore[return-value]


def _check_size_on_disk(img: SpatialImage, name: str) -> None:
    """Refuse an uncompressed file shorter than its header says (offset + voxels x itemsize)."""
    proxy = img.dataobj
    file_like = getattr(proxy, "file_like", None)
    offset = getattr(proxy, "offset", None)
    dtype = getattr(proxy, "dtype", None)
    if not isinstance(file_like, str | os.PathLike) or offset is None or dtype is None:
        return
    with open(file_like, "rb") as fh:
        if fh.read(4).startswith(COMPRESSED_MAGIC):
            return  # only a full read can tell; see check_readable
    expected = int(offset) + int(np.prod(proxy.shape, dtype=np.int64)) * np.dtype(dtype).itemsize
    actual = os.path.getsize(file_like)
    if actual < expected:
        raise UserError(
            f"{name}: header claims {expected} bytes of image data but the file holds {actual}"
        )


def open_image(path: Path) -> SpatialImage:
    """Load `path` with nibabel (lazily: no voxel data is read) or raise UserError."""
    path = Path(path)
    name = path.name
    if not path.is_file():
        raise UserError(f"{name}: file not found ({path})")
    try:
        img = nib.load(path)
    except READ_ERRORS as exc:
        raise UserError(f"{name}: not an image nibabel can read ({_one_line(exc)})") from None
    if isinstance(img, nib.Cifti2Image) or _is_cifti_nifti(img):
        raise UserError(f"{name}: CIFTI files (surface/grayordinate data) cannot be shown as slices")
    if not isinstance(img, SpatialImage):
        raise UserError(f"{name}: {type(img).__name__} is not a volume image")
    (x, y, z), n_volumes = spatial_shape(img, name)
    if x * y * z * n_volumes > MAX_VOXELS:
        raise UserError(f"{name}: {x * y * z * n_volumes} voxels is too large to view")
    affine = img.affine
    if affine is None or not np.all(np.isfinite(affine)):
        raise UserError(f"{name}: the image affine (voxel-to-world matrix) is not finite")
    if abs(np.linalg.det(np.asarray(affine)[:3, :3])) < 1e-12:
        raise UserError(f"{name}: the image affine (voxel-to-world matrix) is singular")
    try:
        _check_size_on_disk(img, name)
    except OSError as exc:
        raise UserError(f"{name}: cannot read the image data ({_one_line(exc)})") from None
    return img


def _is_cifti_nifti(img: SpatialImage) -> bool:
    """NIfTI intent codes 3000-3099 mark CIFTI-2 content (CIFTI-2 spec, appendix)."""
    header = img.header
    if not isinstance(header, nib.Nifti1Header):
        return False
    return 3000 <= int(header["intent_code"]) <= 3099


def read_error(name: str, exc: BaseException) -> UserError:
    """The UserError for voxel data that could not be read."""
    return UserError(f"{name}: image data is truncated or corrupt ({_one_line(exc)})")


def check_readable(img: SpatialImage, name: str) -> None:
    """Read every voxel once (raw dtype, no float copy) to prove the data is complete."""
    proxy = img.dataobj
    try:
        if hasattr(proxy, "get_unscaled"):
            proxy.get_unscaled()
        else:
            np.asarray(proxy)
    except MemoryError:
        raise UserError(f"{name}: image is too large to read into memory") from None
    except READ_ERRORS as exc:
        raise read_error(name, exc) from None


def inspect_image(path: Path) -> ImageInfo:
    """Validate a series image for import and describe it; raise UserError if it cannot be shown.

    The voxel data is read fully once (truncation and gzip corruption only show up then).
    """
    path = Path(path)
    img = open_image(path)
    (x, y, z), n_volumes = spatial_shape(img, path.name)
    check_readable(img, path.name)
    sizes = nib.affines.voxel_sizes(img.affine)
    return ImageInfo(
        shape=tuple(int(n) for n in img.shape),
        voxel_sizes=(float(sizes[0]), float(sizes[1]), float(sizes[2])),
        n_volumes=n_volumes,
        dtype=np.dtype(img.get_data_dtype()).name,
    )
