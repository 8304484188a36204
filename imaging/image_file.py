"""Open an image file with nibabel, refusing what the viewer cannot show, and inspect it.

Every refusal is a `UserError` with one line naming the file: not an image (any error nibabel
raises while parsing the file, named), CIFTI, 2-D or more than 4-D, RGB/complex/structured
voxels, more memory than `NMB_MAX_IMAGE_BYTES` (checked from the header, before any voxel is
read), a NIfTI header with its extensions beyond `MAX_HEADER_BYTES` (checked before nibabel
reads it), non-finite or singular affine, a NIfTI without orientation (both codes 0), header
claiming more data than the file holds, truncated or corrupt data; at import also voxel sizes
outside `MIN_VOXEL_MM`-`MAX_VOXEL_MM` or a qform's sizes (pixdim) that are not positive.
`inspect_image` also tells whether every voxel holds one value (`ImageInfo.constant`: a blank
image, which the importer refuses unless allowed).
"""

from __future__ import annotations

import contextlib
import gzip
import logging
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import nibabel as nib
import numpy as np
from nibabel.spatialimages import SpatialImage

from errors import UserError, not_a_file, one_line

MAX_IMAGE_BYTES_ENV = "NMB_MAX_IMAGE_BYTES"
DEFAULT_MAX_IMAGE_BYTES = 2**30  # 1 GiB
COMPRESSED_MAGIC = (b"\x1f\x8b", b"BZh", b"\x28\xb5\x2f\xfd")  # gzip, bzip2, zstd
# A NIfTI header with its extensions, i.e. where its voxel data may start (dcm2niix's
# extensions, the largest in use, are a few KiB): nibabel reads each extension whole, so a
# 4.5 MB .nii.gz claiming a 1 GiB one took 1.1 GB.
MAX_HEADER_BYTES = 64 * 2**20
# Voxel sizes a brain MRI can have: from below preclinical scanners' finest (0.02 mm) to far
# above the thickest clinical slices (10 mm); outside them lies a unit mistake (metres,
# micrometres) or a broken header, and a volume that cannot be shown at its true shape.
MIN_VOXEL_MM, MAX_VOXEL_MM = 0.01, 100.0

# nibabel prints its header fixes ("sizeof_hdr should be 348...") on stderr through this logger;
# a file it cannot read raises as well, and that is what we report (on one line).
logging.getLogger("nibabel.global").setLevel(logging.CRITICAL + 1)


def max_image_bytes() -> int:
    """The memory bound of one image in bytes: `NMB_MAX_IMAGE_BYTES` (default 1 GiB)."""
    raw = os.environ.get(MAX_IMAGE_BYTES_ENV, "").strip()
    if not raw:
        return DEFAULT_MAX_IMAGE_BYTES
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value <= 0:
        raise UserError(f"{MAX_IMAGE_BYTES_ENV}={raw!r} is not a positive whole number of bytes")
    return value


_FOLDERS = re.compile(r"(?<![\w.~:/])/(?:[^\s/'\"]+/)+")  # the folders of an absolute path


@contextlib.contextmanager
def reading(name: str, what: str) -> Iterator[None]:
    """Turn any error nibabel (or zlib, gzip, numpy under it) raises on the file into one line.

    nibabel parses untrusted bytes and raises many unrelated types on bad files (MGHError,
    ImageFileError, HeaderDataError, struct.error, EOFError, zlib.error, KeyError, TypeError,
    ...): every exception from inside this block is a property of the file, not of our code.
    numpy's floating-point warnings on nonsense header values are silenced likewise.
    """
    try:
        with np.errstate(all="ignore"):
            yield
    except UserError:
        raise
    except MemoryError:
        raise UserError(f"{name}: image is too large to read into memory") from None
    except Exception as exc:
        detail = one_line(_FOLDERS.sub("", str(exc)), 160)  # pages show it: no server path
        kind = type(exc).__name__
        raise UserError(f"{name}: {what} ({kind}: {detail})" if detail else
                        f"{name}: {what} ({kind})") from None


@dataclass(frozen=True)
class ImageInfo:
    """What bundle validation needs to know about a series image."""

    shape: tuple[int, ...]
    voxel_sizes: tuple[float, float, float]
    n_volumes: int
    dtype: str
    constant: float | None = None  # the one value of every voxel (a blank image), else None


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


def _check_voxel_type(img: SpatialImage, name: str) -> np.dtype:
    """The voxel dtype, if it is one number per voxel (not RGB, complex or a record)."""
    dtype = np.dtype(img.get_data_dtype())
    if dtype.names and set(dtype.names) <= {"R", "G", "B", "A"}:
        raise UserError(f"{name}: RGB colour voxels ({dtype.name}) cannot be shown as greyscale "
                        "slices; convert the image to one intensity per voxel")
    if dtype.kind == "c":
        raise UserError(f"{name}: complex-valued voxels ({dtype.name}) are not supported; "
                        "store the magnitude image")
    if dtype.kind not in "biuf":
        raise UserError(f"{name}: voxels of type {dtype.name} are not numbers the viewer can show")
    return dtype


def decoded_bytes(shape: tuple[int, int, int], n_volumes: int, dtype: np.dtype) -> int:
    """Memory of the whole image decoded: every voxel as float32, or its own type if wider."""
    x, y, z = shape
    return x * y * z * n_volumes * max(4, dtype.itemsize)


def _check_memory(img: SpatialImage, name: str) -> None:
    """Refuse, from the header alone, an image whose voxels would need more than the bound."""
    (x, y, z), n_volumes = spatial_shape(img, name)
    need = decoded_bytes((x, y, z), n_volumes, _check_voxel_type(img, name))
    limit = max_image_bytes()
    if need > limit:
        dims = "x".join(str(n) for n in (x, y, z, n_volumes)[: 4 if n_volumes > 1 else 3])
        raise UserError(f"{name}: {dims} voxels need {need / 2**20:,.0f} MiB of memory, more "
                        f"than the limit of {limit / 2**20:,.0f} MiB ({MAX_IMAGE_BYTES_ENV})")


def _check_affine(img: SpatialImage, name: str) -> None:
    """A finite affine whose three voxel axes map to three distinct world directions, and, for
    NIfTI, one that the file states: with qform_code and sform_code both 0 nibabel falls back
    to the voxel sizes alone (NIfTI-1 header notes, method 1), which says nothing of left and
    right."""
    header = img.header
    if isinstance(header, nib.Nifti1Header) and not (int(header["qform_code"])
                                                     or int(header["sform_code"])):
        raise UserError(f"{name}: the image has no orientation (qform_code and sform_code are 0): "
                        "left and right cannot be told apart")
    affine = img.affine
    if affine is None or not np.all(np.isfinite(affine)):
        raise UserError(f"{name}: the image affine (voxel-to-world matrix) is not finite")
    singular = abs(np.linalg.det(np.asarray(affine)[:3, :3])) < 1e-12
    if singular or np.isnan(nib.orientations.io_orientation(affine)).any():
        raise UserError(f"{name}: the image affine (voxel-to-world matrix) is singular")


def _raw_nifti_header(path: Path) -> tuple[int, nib.Nifti1Header, BinaryIO] | None:
    """(its size, the NIfTI-1 or -2 header as written, nibabel's fixes not applied, the open
    file after it: through gzip for a .nii.gz), or None (closed) if the file holds none."""
    with open(path, "rb") as fh:
        compressed = fh.read(2) == COMPRESSED_MAGIC[0]
    fh = gzip.open(path, "rb") if compressed else open(path, "rb")  # noqa: SIM115
    block = fh.read(nib.Nifti2Header.template_dtype.itemsize)
    sizes = {int.from_bytes(block[:4], order) for order in ("little", "big")}
    for size, klass in ((348, nib.Nifti1Header), (540, nib.Nifti2Header)):
        if size in sizes and len(block) >= size + 4:
            fh.seek(size)
            return size, klass(block[:size], check=False), fh
    fh.close()
    return None


def _check_nifti_header(path: Path, name: str) -> None:
    """Refuse, before nibabel reads the header, voxel data that starts beyond MAX_HEADER_BYTES
    (of a .nii.gz, everything before it is inflated at each read: 4 MB of gzip starting its
    voxels at 4 GiB took 6 s a read) and extensions beyond it (or of a size below their own
    8-byte header, for which nibabel reads the rest of the file)."""
    if (raw := _raw_nifti_header(path)) is None:
        return  # not a NIfTI header: nibabel names what it is not
    size, header, fh = raw
    with fh:
        if not float(header["vox_offset"]) <= MAX_HEADER_BYTES:  # NaN too
            raise UserError(f"{name}: the voxel data starts at byte "
                            f"{float(header['vox_offset']):,.0f} (vox_offset), beyond the header "
                            f"limit of {MAX_HEADER_BYTES:,}")
        if fh.read(4)[:1] in (b"", b"\0"):
            return  # no extensions
        order = "little" if header.endianness == "<" else "big"
        left, total = float(header["vox_offset"]) - (size + 4), 0
        while left >= 16:  # nibabel's loop (Nifti1Extensions.from_fileobj)
            if len(ext := fh.read(8)) < 8:
                return
            esize = int.from_bytes(ext[:4], order, signed=True)
            total += esize
            if esize < 8 or total > MAX_HEADER_BYTES:
                raise UserError(f"{name}: header extension of {esize:,} bytes "
                                + ("is malformed" if esize < 8 else
                                   f"takes the header over the limit of {MAX_HEADER_BYTES:,}"))
            fh.seek(esize - 8, os.SEEK_CUR)
            left -= esize


def check_voxel_sizes(path: Path, img: SpatialImage) -> None:
    """Refuse, at import, voxel sizes outside MIN_VOXEL_MM-MAX_VOXEL_MM (compared as float32,
    the type headers store them in) and, where a NIfTI's qform places the voxels, sizes
    (pixdim) that are not positive finite numbers: nibabel makes a 0 into 1 mm and drops a
    minus sign without a word. Not in `open_image`: an image imported before these checks
    stays viewable."""
    name = Path(path).name
    if name.lower().endswith((".nii", ".nii.gz")) and (raw := _raw_nifti_header(path)):
        _, header, fh = raw
        fh.close()
        if int(header["qform_code"]) > 0 and int(header["sform_code"]) == 0:
            for axis, mm in zip("xyz", header["pixdim"][1:4], strict=True):
                if not (np.isfinite(mm) and mm > 0):
                    raise UserError(f"{name}: voxel size {float(mm):g} along {axis} (pixdim) "
                                    "is not a positive number")
    low, high = np.float32(MIN_VOXEL_MM), np.float32(MAX_VOXEL_MM)
    for axis, mm in zip("xyz", nib.affines.voxel_sizes(img.affine), strict=True):
        if not low <= np.float32(mm) <= high:
            raise UserError(f"{name}: voxel size {float(mm):g} mm along {axis} is outside "
                            f"{MIN_VOXEL_MM:g}-{MAX_VOXEL_MM:g} mm (brain MRI; a unit mistake?)")


def open_image(path: Path) -> SpatialImage:
    """Load `path` with nibabel (lazily: no voxel data is read) or raise UserError."""
    path = Path(path)
    name = path.name
    if not path.is_file():
        raise UserError(f"{name}: {not_a_file(path, 'file not found')}")  # no server path
    try:  # before nibabel: indexed_gzip 1.10 crashes the process on a .nii.gz it cannot open
        os.close(os.open(path, os.O_RDONLY))
    except OSError as e:
        raise UserError(f"{name}: cannot read: {e.strerror}") from None
    with reading(name, "not an image nibabel can read"):
        if name.lower().endswith((".nii", ".nii.gz")):
            _check_nifti_header(path, name)
        img = nib.load(path)
        if isinstance(img, nib.Cifti2Image) or _is_cifti_nifti(img):
            raise UserError(f"{name}: CIFTI files (surface/grayordinate data) cannot be shown "
                            "as slices")
        if not isinstance(img, SpatialImage):
            raise UserError(f"{name}: {type(img).__name__} is not a volume image")
        _check_memory(img, name)
        _check_affine(img, name)
    with reading(name, "cannot read the image data"):
        _check_size_on_disk(img, name)
    return img


def _is_cifti_nifti(img: SpatialImage) -> bool:
    """NIfTI intent codes 3000-3099 mark CIFTI-2 content (CIFTI-2 spec, appendix)."""
    header = img.header
    if not isinstance(header, nib.Nifti1Header):
        return False
    return 3000 <= int(header["intent_code"]) <= 3099


CORRUPT = "image data is truncated or corrupt"


def check_readable(img: SpatialImage, name: str) -> float | None:
    """Read every voxel once (raw dtype, no float copy) to prove the data is complete; the
    value every voxel holds (scaled) when they all hold one (NaN counts as one value), else
    None."""
    proxy = img.dataobj
    with reading(name, CORRUPT):
        raw = proxy.get_unscaled() if hasattr(proxy, "get_unscaled") else np.asarray(proxy)
        # fmin/fmax skip NaN (without nanmin's warning on all-NaN data)
        low, high = (np.fmin.reduce(raw, axis=None), np.fmax.reduce(raw, axis=None)
                     ) if raw.dtype.kind == "f" else (raw.min(), raw.max())
        if np.isnan(low) or low == high:  # all NaN, or one value
            slope = float(getattr(proxy, "slope", 1.0) or 1.0)
            return float(low) * slope + float(getattr(proxy, "inter", 0.0) or 0.0)
    return None


def inspect_image(path: Path) -> ImageInfo:
    """Validate a series image for import and describe it; raise UserError if it cannot be shown.

    The voxel data is read fully once (truncation and gzip corruption only show up then).
    """
    path = Path(path)
    img = open_image(path)
    (x, y, z), n_volumes = spatial_shape(img, path.name)
    with reading(path.name, "not an image nibabel can read"):
        check_voxel_sizes(path, img)
    constant = check_readable(img, path.name)
    sizes = nib.affines.voxel_sizes(img.affine)
    return ImageInfo(
        shape=tuple(int(n) for n in img.shape),
        voxel_sizes=(float(sizes[0]), float(sizes[1]), float(sizes[2])),
        n_volumes=n_volumes,
        dtype=np.dtype(img.get_data_dtype()).name,
        constant=constant,
    )
