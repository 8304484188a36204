"""What a DICOM file's pixels are, read with pydicom before dcm2niix converts its series: images
held back as possibly identifying, rescale values, decoders, and Siemens mosaics split into
slices.
"""

import zlib
from pathlib import Path
from typing import Any

import numpy as np

from db.bundle.records import show
from errors import escape_unprintable
from imaging.image_file import (
    MAX_IMAGE_BYTES_ENV,
    MAX_VOXEL_MM,
    MIN_VOXEL_MM,
    max_image_bytes,
)

SECONDARY_CAPTURE = "1.2.840.10008.5.1.4.1.1.7"
DEFLATED = "1.2.840.10008.1.2.1.99"  # Deflated Explicit VR Little Endian (PS3.5 A.5)
#: RescaleSlope and RescaleIntercept beyond this (or a slope below its inverse, or not finite)
#: are damage or a unit mistake: dcm2niix stores them as float32 scale factors (1e308 is inf)
MAX_RESCALE = 1e6
#: The packages (the `[dicom]` extra) that let pydicom decode a transfer syntax
DECODERS = {
    **dict.fromkeys(("1.2.840.10008.1.2.4.50", "1.2.840.10008.1.2.4.51",
                     "1.2.840.10008.1.2.4.57", "1.2.840.10008.1.2.4.70",
                     "1.2.840.10008.1.2.4.80", "1.2.840.10008.1.2.4.81"),
                    "pylibjpeg and pylibjpeg-libjpeg"),
    **dict.fromkeys(("1.2.840.10008.1.2.4.90", "1.2.840.10008.1.2.4.91",
                     "1.2.840.10008.1.2.4.201", "1.2.840.10008.1.2.4.202",
                     "1.2.840.10008.1.2.4.203"), "pylibjpeg and pylibjpeg-openjpeg"),
    "1.2.840.10008.1.2.5": "pylibjpeg and pylibjpeg-rle",
}
#: Modalities whose images are photographs or screens rather than slices of a scanner's
#: volume, usually showing a face, a name or a label (DICOM PS3.3 C.7.3.1.1.1): ultrasound,
#: external-camera, endoscopic, ophthalmic, microscopy photographs, documents, and the retired
#: SC (secondary capture) modality code
PICTURE_MODALITIES = {"US": "an ultrasound image", "XC": "a visible-light photograph",
                       "ES": "an endoscopy image", "OP": "an ophthalmic photograph",
                       "GM": "a microscopy image", "SM": "a microscopy image",
                       "DOC": "a scanned document", "SC": "a secondary capture"}
ULTRASOUND = ("1.2.840.10008.5.1.4.1.1.6.", "1.2.840.10008.5.1.4.1.1.3.")  # US image classes
VISIBLE_LIGHT = "1.2.840.10008.5.1.4.1.1.77."  # VL endoscopic, microscopic, photographic ...
def secondary_capture(sop_class: str) -> bool:
    """Is `sop_class` a Secondary Capture Image Storage class (DICOM PS3.4 B.5: ...1.1.7 and
    its multi-frame ...1.1.7.1 to .4)? Screenshots and scanned films, whose pixels usually show
    the patient's name whether or not BurnedInAnnotation says so."""
    return sop_class == SECONDARY_CAPTURE or sop_class.startswith(SECONDARY_CAPTURE + ".")


def held_back(ds: Any, sop_class: str, image_type: list[str]) -> str:
    """Why the pixels of `ds` may show who the patient is, whatever its header says (the
    header is not the pixels): burned-in annotation, a screen or scanned picture, a photograph
    or ultrasound image, recognizable features; "" if none. Checked from the header only."""
    modality = str(getattr(ds, "Modality", "") or "").upper()
    if str(getattr(ds, "BurnedInAnnotation", "")).upper() == "YES":
        return "is marked BurnedInAnnotation YES"
    if secondary_capture(sop_class):
        return "is a Secondary Capture (a screen or scanned picture)"
    if "SCREEN SAVE" in image_type:
        return "is a screen save (ImageType SCREEN SAVE)"
    if str(getattr(ds, "RecognizableVisualFeatures", "")).upper() == "YES":
        return "is marked RecognizableVisualFeatures YES (a face may be recognizable)"
    if modality in PICTURE_MODALITIES:
        return f"is {PICTURE_MODALITIES[modality]} (Modality {modality})"
    if sop_class.startswith(ULTRASOUND):
        return "is an ultrasound image (its SOP class)"
    if sop_class.startswith(VISIBLE_LIGHT):
        return "is a visible-light image: a photograph, endoscopy or microscopy (its SOP class)"
    return ""


def rescale_problem(ds: Any) -> str | None:
    """Why the RescaleSlope/RescaleIntercept of `ds` (top level, or an enhanced image's
    pixel value transformation) cannot scale its pixels: not a number, not finite, a slope of
    0 or outside 1/MAX_RESCALE..MAX_RESCALE, an intercept beyond MAX_RESCALE; None if usable.
    dcm2niix would store such values as scale factors that turn every voxel into NaN or inf,
    or leave them out: either way the volume would silently not be the one the scanner made."""
    places = [ds]
    for seq in ("SharedFunctionalGroupsSequence", "PerFrameFunctionalGroupsSequence"):
        for group in (getattr(ds, seq, None) or []):
            places += list(getattr(group, "PixelValueTransformationSequence", None) or [])
    for place in places:
        for name in ("RescaleSlope", "RescaleIntercept"):
            if name not in place:
                continue
            raw = place[name].value
            if raw is None or raw == "":
                continue
            try:
                value = float(raw)
            except (TypeError, ValueError):
                return f"{name} {show(str(raw))} is not a number"
            if not np.isfinite(value):
                return f"{name} {value:g} is not finite"
            if name == "RescaleSlope" and not 1 / MAX_RESCALE <= abs(value) <= MAX_RESCALE:
                return (f"RescaleSlope {value:g} is outside {1 / MAX_RESCALE:g}-{MAX_RESCALE:g} "
                        "(damage or a unit mistake)")
            if name == "RescaleIntercept" and abs(value) > MAX_RESCALE:
                return (f"RescaleIntercept {value:g} is beyond {MAX_RESCALE:g} (damage or a "
                        "unit mistake)")
    return None


def inflated_bytes(path: Path, limit: int) -> int:
    """The bytes a deflated data set inflates to, counted in 1 MiB steps and only up to just
    over `limit` (pydicom inflates it whole, in memory); 0 if the file is not deflated or
    its header cannot be read (pydicom then names what is wrong)."""
    from pydicom.filereader import _read_file_meta_info, read_preamble

    try:
        with open(path, "rb") as fp:
            read_preamble(fp, False)
            meta = _read_file_meta_info(fp)
            if str(meta.get("TransferSyntaxUID", "")) != DEFLATED:
                return 0
            inflate, n = zlib.decompressobj(-zlib.MAX_WBITS), 0
            while n <= limit and (chunk := fp.read(2**20)):
                n += len(inflate.decompress(chunk, 2**20))
                while inflate.unconsumed_tail and n <= limit:
                    n += len(inflate.decompress(inflate.unconsumed_tail, 2**20))
            return n
    except Exception:  # not DICOM, damaged meta or deflate data: dcmread's problem to name
        return 0


def bad_geometry(ipp: Any, iop: Any, spacing: Any) -> str | None:
    """Why a frame's ImagePositionPatient (3 finite numbers), ImageOrientationPatient (two
    perpendicular unit vectors) or PixelSpacing (2 numbers within MIN_VOXEL_MM-MAX_VOXEL_MM)
    cannot place it, or None."""
    values = {}
    for name, value, n in (("ImagePositionPatient", ipp, 3), ("ImageOrientationPatient", iop, 6),
                           ("PixelSpacing", spacing, 2)):
        try:
            v = np.atleast_1d(np.asarray(value, dtype=float))
        except (TypeError, ValueError):
            return f"{name} is not a list of numbers"
        if v.shape != (n,):
            return f"{name} holds {v.size} values, not {n}"
        if not np.isfinite(v).all():
            return f"{name} holds a value that is not finite"
        values[name] = v
    if (values["PixelSpacing"] <= 0).any():
        return "PixelSpacing is not positive"
    if ((odd := values["PixelSpacing"]) < MIN_VOXEL_MM).any() or (odd > MAX_VOXEL_MM).any():
        return (f"PixelSpacing {' x '.join(f'{v:g}' for v in odd)} mm is outside "
                f"{MIN_VOXEL_MM:g}-{MAX_VOXEL_MM:g} mm (brain MRI; a unit mistake?)")
    row, col = values["ImageOrientationPatient"][:3], values["ImageOrientationPatient"][3:]
    if (abs(np.linalg.norm(row) - 1) > 1e-2 or abs(np.linalg.norm(col) - 1) > 1e-2
            or abs(row @ col) > 1e-2):
        return "ImageOrientationPatient is not two perpendicular unit vectors"
    return None


def read_pixels(ds: Any, name: str) -> np.ndarray | str:
    """The raw pixel array (frames, rows, cols), or why it cannot be read. The decoded size
    is capped (NMB_MAX_IMAGE_BYTES) from the header before a decoder allocates it."""
    limit = max_image_bytes()
    try:
        rows, cols = int(ds.Rows), int(ds.Columns)
        frames = int(getattr(ds, "NumberOfFrames", 1) or 1)
        need = rows * cols * frames * int(ds.BitsAllocated) // 8 * int(ds.SamplesPerPixel)
        if need > limit:
            return (f"is {rows:,} x {cols:,} pixels x {frames:,} frames: decoded, more than "
                    f"the limit of {limit / 2**20:,.0f} MiB ({MAX_IMAGE_BYTES_ENV})")
        if not ds.file_meta.TransferSyntaxUID.is_compressed:
            if len(ds.PixelData) < need:
                return (f"is truncated: pixel data holds {len(ds.PixelData):,} bytes of "
                        f"{need:,}")
        data = ds.pixel_array
    except Exception as e:  # pydicom and its decoders raise many types on damaged data
        return f"pixel data cannot be read: {str(e).splitlines()[0][:200]}"
    if getattr(ds, "SamplesPerPixel", 1) != 1:
        return "is a colour image (one value per pixel is needed)"
    if data.size != frames * rows * cols:
        return (f"pixel data decodes to {data.size:,} values, not Rows x Columns x "
                f"NumberOfFrames = {frames * rows * cols:,}")
    return data.reshape(frames, rows, cols)


def no_decoder(ds: Any) -> str | None:
    """Why pydicom cannot decode the compressed pixels of `ds` here, naming what to install;
    None if it can (or they are not compressed, or the file meta is damaged: `_pixels` names
    that)."""
    from pydicom.pixels import get_decoder

    syntax = getattr(getattr(ds, "file_meta", None), "TransferSyntaxUID", None)
    try:
        if syntax is None or not syntax.is_compressed:
            return None
    except (ValueError, AttributeError):  # not a transfer syntax pydicom knows (or several
        return None  # values, damaged): `_pixels` names it
    name = escape_unprintable(syntax.name)[:80]
    try:
        decoder = get_decoder(syntax)
    except NotImplementedError:
        return (f"its pixels are in transfer syntax {name} ({escape_unprintable(str(syntax))[:64]}"
                "), which the import cannot decode")
    if decoder.is_available:
        return None
    return (f"its pixels are {name}, which pydicom cannot decode without "
            f"{DECODERS.get(str(syntax), 'a decoder plugin')}: pip install "
            "'neural-medbench-studio[dicom]'")


def csa_image_header(ds: Any) -> dict[str, Any]:
    """The tags of a Siemens CSA image header (0029,xx10), {} if there is none; raises on a
    damaged one (nibabel's reader: `nibabel.nicom.csareader`)."""
    from nibabel.nicom import csareader

    return (csareader.get_csa_header(ds, "image") or {}).get("tags", {})


def csa_value(csa: dict[str, Any], name: str) -> list:
    return list((csa.get(name) or {}).get("items") or [])


def mosaic(ds: Any, pixels: np.ndarray, ipp: Any, iop: Any, spacing: Any
            ) -> tuple[np.ndarray, list[tuple[Any, Any, Any]]] | str:
    """A Siemens mosaic (ImageType MOSAIC: the slices of one volume tiled in one image) as its
    slices and each slice's geometry, or why it cannot be. The number of slices is the
    NumberOfImagesInMosaic of Siemens' private header (0019,xx0A) or CSA image header; tiles
    fill a ceil(sqrt(n)) square row by row. ImagePositionPatient is the top-left of the whole
    mosaic: the first slice's is that shifted by half the pixels the tiles leave, along the
    row and column directions; slice k lies k x SpacingBetweenSlices (else SliceThickness)
    along the CSA SliceNormalVector (else the row x column direction). This is how nibabel
    (`MosaicWrapper.image_position`) and dcm2niix read mosaics; the geometry check then tests
    dcm2niix's volume against it."""
    try:
        csa = csa_image_header(ds)
    except Exception as e:  # nibabel raises several types on a damaged CSA header
        why = (str(e).splitlines() or [type(e).__name__])[0]
        return f"is a Siemens mosaic whose CSA header cannot be read: {escape_unprintable(why)[:120]}"
    n = None
    try:
        block = ds.private_block(0x0019, "SIEMENS MR HEADER")
        if (0x0019, block.block_start + 0x0A) in ds:
            n = int(block[0x0A].value)
    except (TypeError, ValueError, KeyError):  # no Siemens private header, or a damaged one
        n = None
    try:
        if n is None and (items := csa_value(csa, "NumberOfImagesInMosaic")):
            n = int(items[0])
    except (TypeError, ValueError):
        n = None
    if n is None or not 1 <= n <= 4096:
        return ("is a Siemens mosaic without a usable NumberOfImagesInMosaic (its slices "
                "cannot be found)")
    per_row = int(np.ceil(np.sqrt(n)))
    _, rows, cols = pixels.shape
    if rows % per_row or cols % per_row:
        return (f"is a Siemens mosaic of {n} images whose {rows} x {cols} pixels do not split "
                f"into {per_row} x {per_row} tiles")
    tr, tc = rows // per_row, cols // per_row
    step = getattr(ds, "SpacingBetweenSlices", None) or getattr(ds, "SliceThickness", None)
    try:
        step = float(step)
    except (TypeError, ValueError):
        return ("is a Siemens mosaic without a usable SpacingBetweenSlices or SliceThickness "
                "(where its slices lie cannot be known)")
    if not np.isfinite(step) or step <= 0:
        return f"is a Siemens mosaic whose slice spacing {step:g} mm is not positive"
    if why := bad_geometry(ipp, iop, spacing):
        return f"{why} (the volume's geometry cannot be known)"
    iop, spacing = np.asarray(iop, float), np.asarray(spacing, float)
    row_dir, col_dir = iop[:3], iop[3:]
    normal = np.cross(row_dir, col_dir)
    if len(given := csa_value(csa, "SliceNormalVector")) == 3:
        try:
            v = np.asarray(given, float)
        except (TypeError, ValueError):
            v = np.zeros(3)
        if np.isfinite(v).all() and abs(np.linalg.norm(v) - 1) < 1e-2:
            normal = v
    first = (np.asarray(ipp, float) + row_dir * spacing[1] * (cols - tc) / 2
             + col_dir * spacing[0] * (rows - tr) / 2)
    tiles = np.stack([pixels[0, (k // per_row) * tr:(k // per_row + 1) * tr,
                             (k % per_row) * tc:(k % per_row + 1) * tc] for k in range(n)])
    return tiles, [(first + k * step * normal, iop, spacing) for k in range(n)]
