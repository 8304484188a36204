"""Import one DICOM study as a case (`nmb import DIR --from dicom --case-info CASE.json`).

The input is a folder (any layout, extension-less names, a DICOMDIR in it or not) or a
DICOMDIR file (its referenced files are read). Every file is read with pydicom (caps first);
files are grouped into series by SeriesInstanceUID and named from their SeriesDescription by
the user's sequence map, then the vendor table of `db.sources.sequences`; a description neither
names is kept as the series' name and listed in the summary for the admin to confirm. Left out
and listed: localizers, scouts and calibration scans (ImageType LOCALIZER, or what the table
or the map names null), objects without pixels (reports, presentation states, the DICOMDIR
itself). Refused, one problem each: files that are not DICOM or are truncated, a series whose
pixels may show who the patient is (`held_back`: BurnedInAnnotation YES, a Secondary Capture,
a screen save, RecognizableVisualFeatures YES, ultrasound and visible-light photographs;
unless `allow_burned_in`), pixels no installed decoder reads (naming the package), rescale
values that are not finite or absurd, missing geometry tags, mixed orientations, pixel spacings
or sizes, slice gaps, and a blank series (every voxel of one value, unless `allow_blank`).
A Siemens mosaic's tiles are its slices (`mosaic`); a series of several volumes (diffusion
directions and b-values, time points) is one 4-D series, its b-values in its name
("DWI (b=0,1000)", from dcm2niix's .bval); a scanner's ADC or trace map is its own series.

Each series is converted by dcm2niix (the binary of its PyPI wheel) from a folder of links to
its files in a workspace under NMB_HOME/tmp, then written text-free (`imaging.text_free`) into a
bundle folder, and its geometry is checked against the DICOM tags: every slice's
ImagePositionPatient, its row and column directions (ImageOrientationPatient times
PixelSpacing) land on voxel centres of the volume, and the voxels there (in one of its volumes)
hold that slice's corner pixels, as pydicom decodes them (within LOSSY_TOLERANCE for a lossy
transfer syntax). The bundle (case.json from the case info, tasks.jsonl) is imported by
`db.bundle.importer.import_bundle`. No header value is stored (not in the database, the image
store or the NIfTI header) but the SeriesDescription of a series no rule names; the summary
lists the identifying attributes that were present and dropped
(`db.sources.dicom_identifiers`). The workspace (links, dcm2niix output) is removed whatever
happens.
"""

import json
import os
import re
import subprocess
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from sqlmodel import Session

from db.bundle.importer import FORMAT, BundleInvalid, ImportSummary, Problem, import_bundle
from db.bundle.records import show
from db.bundle.store import Workspace
from db.bundle.validate import leaves, read_json
from db.sources.case_info import CaseInfo, mapped, read_case_info, write_case
from db.sources.dicom_identifiers import present
from db.sources.dicom_pixels import (
    bad_geometry,
    held_back,
    inflated_bytes,
    mosaic,
    no_decoder,
    read_pixels,
    rescale_problem,
)
from db.sources.folder import unreadable
from db.sources.sequences import Naming, name_series, with_b_values
from errors import UserError, counted, escape_unprintable
from imaging.image_file import (
    MAX_IMAGE_BYTES_ENV,
    MAX_VOXEL_MM,
    MIN_VOXEL_MM,
    decoded_bytes,
    max_image_bytes,
)
from imaging.text_free import save_text_free

SOURCE = "dicom"
MAX_FILES = 20_000
MAX_FILE_BYTES = 2 * 2**30
MAX_TOTAL_BYTES = 32 * 2**30
DICOMDIR_CLASS = "1.2.840.10008.1.3.10"
_TOL_VOXEL = 0.05  # how far (in voxels) a DICOM position may be from a voxel centre
_TOL_SPACING = 1e-3  # relative
#: Transfer syntaxes whose pixels are lossy: pydicom's decoder and dcm2niix's may differ by a
#: rounding step, so the geometry check compares their corner pixels within LOSSY_TOLERANCE
_LOSSY = {"1.2.840.10008.1.2.4.50", "1.2.840.10008.1.2.4.51", "1.2.840.10008.1.2.4.81",
          "1.2.840.10008.1.2.4.91", "1.2.840.10008.1.2.4.203"}
LOSSY_TOLERANCE = 0.02  # of the series' pixel range (at least 2 values)


@dataclass
class DicomSummary:
    """What a DICOM import did: the bundle import's summary plus what was left out."""

    source: str
    imported: ImportSummary
    series: list[str] = field(default_factory=list)  # "T2: 12x10x5"
    left_out: list[str] = field(default_factory=list)  # "series 1: localizer (3 files)"
    dropped_identifiers: list[str] = field(default_factory=list)
    #: series named by their own description (no rule named them): for the admin to confirm
    unconfirmed: list[str] = field(default_factory=list)  # 'series 6 "RESTING_STATE"'

    @property
    def changed(self) -> bool:
        return self.imported.changed

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        out = f"{self.imported}; series {', '.join(self.series)}"
        if self.left_out:
            out += f"; left out {'; '.join(self.left_out)}"
        if self.unconfirmed:
            out += (f"; named by their own description, to confirm (or name them with "
                    f"--sequence-map): {', '.join(self.unconfirmed)}")
        if self.dropped_identifiers:
            out += ("; identifying attributes present and not stored: "
                    + ", ".join(self.dropped_identifiers))
        return out


@dataclass
class _Frame:
    position: np.ndarray  # ImagePositionPatient (LPS, mm)
    orientation: np.ndarray  # ImageOrientationPatient (6)
    spacing: np.ndarray  # PixelSpacing (row spacing, column spacing)
    corners: tuple[int, int, int]  # raw pixels (0,0), (0,cols-1), (rows-1,0)
    lossy: bool = False  # its transfer syntax is lossy (`_LOSSY`)








@dataclass
class _Series:
    uid: str
    number: int
    description: str
    files: list[Path] = field(default_factory=list)
    frames: list[_Frame] = field(default_factory=list)
    rows_cols: set[tuple[int, int]] = field(default_factory=set)
    held_back: str = ""  # why its pixels may show who the patient is (`held_back`), or ""
    span: float = 0.0  # the largest max - min of its images' pixels (lossy tolerance)
    localizer: bool = False  # ImageType LOCALIZER
    naming: Naming = Naming("", True)  # what it is called (`db.sources.sequences`)
    damaged: bool = False  # a file's pixels could not be read (reported on its own)
    problems: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        return f"series {self.number}"


# ---------------------------------------------------------------- sequence names


def read_sequence_map(path: Path | None) -> list[tuple[re.Pattern, str | None]]:
    """The user's map (a JSON object {pattern: sequence or null}), tried before the table of
    `db.sources.sequences`."""
    rules: list[tuple[str, str | None]] = []
    if path is not None:
        problems: list[Problem] = []
        data = read_json(Path(path), Path(path).name, problems)
        if problems:
            raise UserError(str(problems[0]))
        if not isinstance(data, dict) or not all(
                v is None or (isinstance(v, str) and 0 < len(v.strip()) <= 32)
                for v in data.values()):
            raise UserError(f"{Path(path).name}: is not a JSON object of "
                            '{"pattern": "SEQUENCE" (1-32 characters) or null}')
        rules += list(data.items())
    out = []
    for pattern, name in rules:
        try:
            out.append((re.compile(pattern, re.IGNORECASE), name))
        except (re.error, RecursionError) as e:  # RecursionError: groups nested too deep
            why = e if isinstance(e, re.error) else "it is nested too deep"
            raise UserError(f"{Path(path).name if path else 'sequence map'}: pattern "
                            f"{show(pattern)} is not a regular expression: {why}") from None
    return out


# ---------------------------------------------------------------- reading




def _dcmread(path: Path, rel: str, size: int, problems: list[Problem]) -> Any:
    """`pydicom.dcmread` of `path` once a deflated data set is known to inflate to at most
    MAX_FILE_BYTES; None with a problem otherwise (also for a file pydicom cannot read)."""
    import pydicom
    from pydicom.errors import InvalidDicomError

    inflated = inflated_bytes(path, MAX_FILE_BYTES)
    if inflated > MAX_FILE_BYTES:
        problems.append(Problem(rel, None, f"is a deflated data set of {size:,} bytes that "
                                f"inflates to more than the limit of {MAX_FILE_BYTES:,}"))
        return None
    try:
        ds = pydicom.dcmread(path)
        # pydicom parses sequence items and converts values on first access: parse them all
        # now, so a damaged nested item is this file's problem, not a traceback later
        for part in (getattr(ds, "file_meta", None), ds):
            if part is not None:
                part.walk(lambda _ds, _elem: None)
        return ds
    except InvalidDicomError:
        problems.append(Problem(rel, None, "is not a DICOM file (no DICM preamble)"))
    except Exception as e:  # truncated or damaged: pydicom raises many types
        problems.append(Problem(rel, None, f"is not a readable DICOM file: "
                                           f"{str(e).splitlines()[0][:200]}"))
    return None


def _files(path: Path, problems: list[Problem]) -> tuple[Path, list[Path]]:
    """The root the files are named from, and the files to read."""
    if path.is_file():
        from pydicom.fileset import FileSet

        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            problems.append(Problem(path.name, None, f"is {size:,} bytes, more than the limit "
                                                     f"of {MAX_FILE_BYTES:,}"))
            return path.parent, []
        ds = _dcmread(path, path.name, size, problems)
        if ds is None:
            return path.parent, []
        try:
            fs = FileSet(ds)
            files = sorted({Path(i.path) for i in fs})
        except Exception as e:  # pydicom raises many types on a damaged DICOMDIR
            problems.append(Problem(path.name, None, f"is not a readable DICOMDIR: "
                                                     f"{str(e).splitlines()[0][:200]}"))
            return path.parent, []
        if len(files) > MAX_FILES:
            problems.append(Problem(path.name, None, f"lists more than {MAX_FILES:,} files"))
            return path.parent, []
        pipes = [f for f in files if not f.is_file()]  # a pipe would keep the import waiting
        problems += [Problem(f.relative_to(path.parent).as_posix()
                             if f.is_relative_to(path.parent) else f.name, None,
                             "is not a regular file") for f in pipes]
        return path.parent, [] if pipes else files
    files = []
    for dirpath, dirnames, names in os.walk(
            path, onerror=lambda e: problems.append(unreadable(path, Path(e.filename), e))):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(n for n in names if not n.startswith(".")):
            f = Path(dirpath) / name
            if leaves(path, f):
                problems.append(Problem(f.relative_to(path).as_posix(), None,
                                        "is a symbolic link to a file outside the folder"))
            elif not f.is_file():  # a pipe would keep the import waiting for a writer
                problems.append(Problem(f.relative_to(path).as_posix(), None,
                                        "is not a regular file"))
            else:
                files.append(f)
            if len(files) > MAX_FILES:
                problems.append(Problem(path.name, None, f"holds more than {MAX_FILES:,} files"))
                return path, []
    return path, files


def _geometry(ds: Any) -> list[tuple[Any, Any, Any]]:
    """(ImagePositionPatient, ImageOrientationPatient, PixelSpacing) of each frame (None when
    a tag is missing): classic images carry them at the top level, enhanced multi-frame images
    in the shared and per-frame functional groups."""
    n = int(getattr(ds, "NumberOfFrames", 1) or 1)
    if "PerFrameFunctionalGroupsSequence" not in ds:
        return [(getattr(ds, "ImagePositionPatient", None),
                 getattr(ds, "ImageOrientationPatient", None),
                 getattr(ds, "PixelSpacing", None))] * (1 if n == 1 else n)
    shared = (ds.SharedFunctionalGroupsSequence[0]
              if "SharedFunctionalGroupsSequence" in ds and ds.SharedFunctionalGroupsSequence
              else None)

    def find(group: Any, seq: str, attr: str) -> Any:
        for g in (group, shared):
            if g is not None and seq in g and g[seq].value:
                value = getattr(g[seq].value[0], attr, None)
                if value is not None:
                    return value
        return None

    return [(find(f, "PlanePositionSequence", "ImagePositionPatient"),
             find(f, "PlaneOrientationSequence", "ImageOrientationPatient"),
             find(f, "PixelMeasuresSequence", "PixelSpacing"))
            for f in ds.PerFrameFunctionalGroupsSequence]














def read_study(path: Path, problems: list[Problem],
               rules: list[tuple[re.Pattern, str | None]] | None = None, *,
               allow_burned_in: bool = False
               ) -> tuple[list[_Series], list[str], set[str]]:
    """The image series, what was left out (non-image objects), the identifying attributes
    present; unreadable files become problems. A series is named by the user's `rules`, then
    the table (`db.sources.sequences.name_series`); the pixels of a series left out (a
    localizer, or named None) or held back (`held_back`, unless `allow_burned_in`) are not
    read. A Siemens mosaic's slices are its tiles (`mosaic`)."""
    root, files = _files(path, problems)
    series: dict[str, _Series] = {}
    left_out: dict[str, int] = {}
    identifiers: set[str] = set()
    studies: dict[str, str] = {}  # StudyInstanceUID -> the first image file of that study
    total = 0
    for f in files:
        rel = f.relative_to(root).as_posix() if f.is_relative_to(root) else f.name
        try:
            size = f.stat().st_size
        except OSError as e:
            problems.append(Problem(rel, None, f"cannot read: {e.strerror or e}"))
            continue
        total += size
        if size > MAX_FILE_BYTES or total > MAX_TOTAL_BYTES:
            problems.append(Problem(rel, None, f"is over the limit of {MAX_FILE_BYTES:,} bytes "
                                    f"a file or {MAX_TOTAL_BYTES:,} in all"))
            return [], [], identifiers
        ds = _dcmread(f, rel, size, problems)
        if ds is None:
            continue
        sop_class = str(getattr(getattr(ds, "file_meta", None), "MediaStorageSOPClassUID", ""))
        if sop_class == DICOMDIR_CLASS or "DirectoryRecordSequence" in ds:
            continue  # the DICOMDIR itself
        identifiers |= present(ds)
        if "PixelData" not in ds:
            kind = escape_unprintable(str(getattr(ds, "Modality", "") or "object"))
            left_out[f"{kind} without pixels"] = left_out.get(f"{kind} without pixels", 0) + 1
            continue
        if study := str(getattr(ds, "StudyInstanceUID", "") or ""):
            studies.setdefault(study, rel)
        uid = str(getattr(ds, "SeriesInstanceUID", "") or "")
        if not uid:
            problems.append(Problem(rel, None, "has no SeriesInstanceUID"))
            continue
        number = getattr(ds, "SeriesNumber", 0) or 0
        if not isinstance(number, int):  # pydicom keeps a malformed IS as its text
            problems.append(Problem(rel, None, "SeriesNumber is not a whole number"))
            continue
        if uid not in series:
            description = str(getattr(ds, "SeriesDescription", "") or "")
            series[uid] = _Series(uid, int(number), description, naming=name_series(
                description, rules or [], fallback=f"series {number}"))
        s = series[uid]
        s.files.append(f)
        image_type = [str(x).upper() for x in (getattr(ds, "ImageType", None) or [])]
        s.localizer |= "LOCALIZER" in image_type
        s.held_back = s.held_back or held_back(
            ds, sop_class or str(getattr(ds, "SOPClassUID", "")), image_type)
        if s.localizer or s.naming.name is None or (s.held_back and not allow_burned_in):
            continue  # left out, or refused whatever its pixels: they are not read
        if why := rescale_problem(ds) or no_decoder(ds):  # the series' problem, named once
            s.problems.append(f"{rel}: {why}")
            continue
        pixels = read_pixels(ds, rel)
        if isinstance(pixels, str):
            problems.append(Problem(rel, None, pixels))
            s.damaged = True
            continue
        geometry = _geometry(ds)
        if "MOSAIC" in image_type and len(pixels) == 1 and None not in geometry[0]:
            unpacked = mosaic(ds, pixels, *geometry[0])
            if isinstance(unpacked, str):
                s.problems.append(f"{rel}: {unpacked}")
                continue
            pixels, geometry = unpacked
        s.rows_cols.add(pixels.shape[1:])
        if pixels.size:
            s.span = max(s.span, float(pixels.max()) - float(pixels.min()))
        lossy = str(ds.file_meta.TransferSyntaxUID) in _LOSSY
        if len(geometry) != len(pixels):
            s.problems.append(f"{rel}: has {len(geometry)} per-frame functional groups for "
                              f"{len(pixels)} frames")
            continue
        for k, (ipp, iop, spacing) in enumerate(geometry):
            missing = [n for n, v in (("ImagePositionPatient", ipp),
                                      ("ImageOrientationPatient", iop),
                                      ("PixelSpacing", spacing)) if v is None]
            if missing:
                s.problems.append(f"{rel}: has no {', '.join(missing)} (the volume's geometry "
                                  "cannot be known)")
                break
            if why := bad_geometry(ipp, iop, spacing):
                s.problems.append(f"{rel}: {why} (the volume's geometry cannot be known)")
                break
            plane = pixels[k]
            s.frames.append(_Frame(np.asarray(ipp, float), np.asarray(iop, float),
                                   np.asarray(spacing, float),
                                   (int(plane[0, 0]), int(plane[0, -1]), int(plane[-1, 0])),
                                   lossy))
    first, *others = studies.values() or [""]
    problems += [Problem(other, None, f"belongs to another study than {first} "
                         "(StudyInstanceUID differs): one DICOM import is one study, one case")
                 for other in others]
    lines = [f"{n} {kind}" for kind, n in sorted(left_out.items())]
    return sorted(series.values(), key=lambda s: (s.number, s.uid)), lines, identifiers


def _check_series(s: _Series) -> list[str]:
    """Size and geometry problems of one series before conversion (dcm2niix decodes and
    assembles the whole volume: its size is capped like an image's, as float32 voxels)."""
    if s.problems:
        return s.problems[:1]
    out = []
    frames = s.frames
    if len(s.rows_cols) > 1:
        out.append("holds images of different sizes")
    (rows, cols), limit = max(s.rows_cols, default=(0, 0)), max_image_bytes()
    if decoded_bytes((rows, cols, len(frames)), 1, np.dtype(np.float32)) > limit:
        return [f"is {rows:,} x {cols:,} pixels x {len(frames):,} images: decoded as one volume, "
                f"more than the limit of {limit / 2**20:,.0f} MiB ({MAX_IMAGE_BYTES_ENV})"]
    iops = np.array([f.orientation for f in frames])
    if np.abs(iops - iops[0]).max() > 1e-4:
        out.append("mixes image orientations (ImageOrientationPatient differs between slices)")
        return out
    spacings = np.array([f.spacing for f in frames])
    if np.abs(spacings - spacings[0]).max() > 1e-4:
        out.append("mixes pixel spacings")
    if len(frames) < 2:
        out.append("has a single slice: not a volume")
        return out
    normal = np.cross(iops[0][:3], iops[0][3:])
    along = np.array([f.position @ normal for f in frames])
    levels = np.unique(np.round(along, 3))
    counts = [int(np.sum(np.isclose(along, v, atol=1e-3))) for v in levels]
    if len(set(counts)) > 1:
        out.append("has a different number of images at some slice positions")
    if len(levels) < 2:
        out.append("has all its images at one position: not a volume")
        return out
    steps = np.diff(levels)
    if not MIN_VOXEL_MM <= (step := float(np.median(steps))) <= MAX_VOXEL_MM:
        out.append(f"has its slices {step:g} mm apart, outside {MIN_VOXEL_MM:g}-"
                   f"{MAX_VOXEL_MM:g} mm (brain MRI; a unit mistake?)")
        return out
    if np.abs(steps - steps[0]).max() > max(1e-2, 0.01 * steps[0]):
        big = float(steps.max())
        out.append(f"has a gap between slices ({big:.2f} mm where the others are "
                   f"{float(np.median(steps)):.2f} mm apart)")
    return out


# ---------------------------------------------------------------- conversion


def _dcm2niix() -> str:
    """The dcm2niix binary; a UserError naming the extra if it or pydicom is not installed."""
    try:
        import dcm2niix
        import pydicom  # noqa: F401
    except ImportError:
        raise UserError("the DICOM import needs dcm2niix and pydicom: pip install "
                        "'neural-medbench-studio[dicom]'") from None
    return dcm2niix.bin


def _convert(s: _Series, work: Path, dest: Path) -> str | list[float]:
    """Convert `s` with dcm2niix and write it text-free to `dest`; why not, or the b-value of
    each volume (dcm2niix's .bval: every vendor's diffusion tags, read by dcm2niix; [] for a
    series without diffusion weighting)."""
    links = work / f"in-{s.number}-{len(list(work.iterdir()))}"
    out = links.with_name(links.name.replace("in-", "out-"))
    links.mkdir()
    out.mkdir()
    for k, f in enumerate(s.files):
        (links / f"{k:06d}").symlink_to(f.resolve())
    try:
        done = subprocess.run([_dcm2niix(), "-b", "n", "-z", "y", "-f", "series", "-i", "n",
                               "-m", "n", "-w", "1", "-v", "0", "-o", str(out), str(links)],
                              capture_output=True, timeout=1800, check=False)
    except subprocess.TimeoutExpired:
        return "dcm2niix did not finish within 30 minutes"
    made = sorted(out.glob("*.nii.gz"))
    if done.returncode != 0 or not made:
        return f"dcm2niix could not convert it (exit code {done.returncode})"
    if len(made) > 1:
        return (f"converts into {len(made)} volumes (several echoes, phase or derived images "
                "in one series are not supported)")
    try:
        save_text_free(made[0], dest)
    except UserError as e:
        return f"the converted volume cannot be read: {e}"
    if why := _check_geometry(s, dest):
        return why
    bval = made[0].with_name(made[0].name.removesuffix(".nii.gz") + ".bval")
    try:
        return [float(b) for b in bval.read_text().split()] if bval.is_file() else []
    except (OSError, ValueError):
        return []


def _check_geometry(s: _Series, volume: Path) -> str | None:
    """Does every slice sit where its DICOM tags say, with its corner pixels (in one of the
    volumes of a 4-D series; within LOSSY_TOLERANCE of the series' pixel range where its
    transfer syntax is lossy)? None if so."""
    import nibabel as nib

    img = nib.load(volume)
    inverse = np.linalg.inv(img.affine)
    data = np.asanyarray(img.dataobj.get_unscaled())
    if data.ndim == 3:
        data = data[..., np.newaxis]
    shape = np.array(data.shape[:3])
    # lossy pixels: pydicom's decoder and dcm2niix's may round differently
    tolerance = max(2.0, LOSSY_TOLERANCE * s.span)
    lps_to_ras = np.array([-1.0, -1.0, 1.0])

    def voxel(lps: np.ndarray) -> np.ndarray | None:
        ijk = (inverse @ np.append(lps * lps_to_ras, 1.0))[:3]
        near = np.round(ijk)
        if np.abs(ijk - near).max() > _TOL_VOXEL or (near < 0).any() or (near >= shape).any():
            return None
        return near.astype(int)

    for k, f in enumerate(s.frames):
        row_dir, col_dir = f.orientation[:3], f.orientation[3:]
        rows, cols = next(iter(s.rows_cols))
        points = (f.position, f.position + row_dir * f.spacing[1] * (cols - 1),
                  f.position + col_dir * f.spacing[0] * (rows - 1))
        at = [voxel(p) for p in points]
        if any(v is None for v in at):
            return (f"image {k + 1}: ImagePositionPatient/ImageOrientationPatient/PixelSpacing "
                    "do not match the converted volume's affine")
        # the volume it belongs to (of a 4-D series: diffusion directions, time points) is one
        # whose three voxels there hold its corner pixels
        values = np.stack([data[tuple(v)] for v in at]).astype(float)  # (3, volumes)
        off = np.abs(values - np.asarray(f.corners, float)[:, np.newaxis]).max(axis=0)
        if not (off <= (tolerance if f.lossy else 0)).any():
            return f"image {k + 1}: the converted volume's voxels differ from the DICOM pixels"
    return None


# ---------------------------------------------------------------- the import


def convert(path: Path, root: Path, info: CaseInfo, *, sequence_map: Path | None,
            allow_burned_in: bool, origin: dict[str, str], task_origin: list[str]
            ) -> tuple[list[str], list[str], list[str], list[str]]:
    """Write the study at `path` as a one-case bundle at `root`; (series, left out, dropped
    identifiers, series named by their own description). Raises BundleInvalid listing every
    problem. What pydicom warns of while reading is not shown: the problems name what matters,
    one line each."""
    _quiet_pydicom()
    return _convert_study(path, root, info, sequence_map=sequence_map,
                          allow_burned_in=allow_burned_in, origin=origin, task_origin=task_origin)


def _quiet_pydicom() -> None:
    """Ignore the warnings pydicom's own modules raise (odd values, padding, frame counts; it
    has no option that stops them all), process-wide, for good: this module is pydicom's only
    user. Not `warnings.catch_warnings`, which swaps the whole process's filter list and puts
    it back on exit: with Streamlit serving sessions on threads, one session's import would hide
    another's warnings, or restore a list without a filter another thread had just added.
    Adding the same filter again replaces it (no growth)."""
    warnings.filterwarnings("ignore", module=r"pydicom(\.|$)")
    # nibabel's DICOM package warns once, on import, that it is experimental: only its CSA
    # header reader is used (`csa_image_header`)
    warnings.filterwarnings("ignore", message="The DICOM readers are highly experimental",
                            category=UserWarning)


def _convert_study(path: Path, root: Path, info: CaseInfo, *, sequence_map: Path | None,
                   allow_burned_in: bool, origin: dict[str, str], task_origin: list[str]
                   ) -> tuple[list[str], list[str], list[str], list[str]]:
    rules = read_sequence_map(sequence_map)
    problems: list[Problem] = []
    series, left_out, identifiers = read_study(path, problems, rules,
                                               allow_burned_in=allow_burned_in)
    label = path.name
    chosen: list[tuple[_Series, str]] = []
    for s in series:
        if s.localizer or s.naming.name is None:
            why = "localizer" if s.localizer else s.naming.note
            left_out.append(f"{s.label}: {why} ({counted(len(s.files), 'file')})")
            continue
        name = s.naming.name
        # a damaged file is its own problem: the slices left would only show a false gap
        if s.held_back and not allow_burned_in:  # its pixels were not read
            msgs = [f"{s.held_back}: its pixels may show patient identifiers "
                    "(--allow-burned-in after checking them)"]
        else:
            msgs = [] if s.damaged else _check_series(s)
        problems += [Problem(label, None, f"{s.label}: {m}") for m in msgs]
        if not msgs:
            chosen.append((s, name))
    if not chosen and not problems:
        problems.append(Problem(label, None, "holds no image series to import"))
    if problems:
        raise BundleInvalid(label, problems)
    work = root.parent / "dicom-work"
    work.mkdir()
    cid = str(info.case["case_id"])
    folder = root / "cases" / cid
    folder.mkdir(parents=True)
    entries, shown, used, unconfirmed = [], [], {}, []
    for k, (s, name) in enumerate(chosen, start=1):
        file = f"series-{s.number}-{k}.nii.gz"  # SeriesNumber alone is not unique
        why = _convert(s, work, folder / file)
        if isinstance(why, str):
            problems.append(Problem(label, None, f"{s.label}: {why}"))
            continue
        import nibabel as nib

        shape = nib.load(folder / file).shape
        if len(shape) == 4 and shape[3] > 1 and why:  # several volumes with their b-values
            name = with_b_values(name, why)
        used[name] = used.get(name, 0) + 1
        sequence = name if used[name] == 1 else f"{name} ({used[name]})"
        shape = "x".join(map(str, shape))
        origin[f"cases/{cid}/{file}"] = f"{label} {s.label}"
        entries.append({"sequence": sequence, "file": file})
        shown.append(f"{sequence}: {shape}")
        if not s.naming.known:
            unconfirmed.append(f"{s.label} {show(sequence)}")
    if problems:
        raise BundleInvalid(label, problems)
    (root / "bundle.json").write_text(json.dumps(
        {"format": FORMAT, "name": f"DICOM import: {cid}"[:256],
         "description": "converted by nmb import --from dicom"}))
    (root / "tasks.jsonl").touch()
    write_case(root, info, entries, origin, task_origin)
    return shown, left_out, sorted(identifiers), unconfirmed


def import_dicom(s: Session, path: Path, *, case_info: Path, sequence_map: Path | None = None,
                 allow_burned_in: bool = False, allow_blank: bool = False, dry_run: bool = False,
                 actor: str | None = None, progress: Callable[[float, str], None] | None = None,
                 revise: bool = False) -> DicomSummary:
    """Convert the DICOM study at `path` (folder or DICOMDIR) into one case with the info of
    `case_info` and import it in one transaction of `s`; raises BundleInvalid listing every
    problem (a blank series among them unless `allow_blank`), the study unchanged."""
    path = Path(path)
    if not path.exists():
        raise UserError(f"{path.name}: no such file or folder")
    if case_info is None:
        raise UserError("--from dicom needs --case-info CASE.json (docs/bundle-format.md)")
    _dcm2niix()  # both libraries there, before any file is read
    problems: list[Problem] = []
    info = read_case_info(Path(case_info), problems)
    if info is None:
        raise BundleInvalid(Path(case_info).name, problems)
    origin: dict[str, str] = {}
    task_origin: list[str] = []
    with Workspace(SOURCE, engine=s.get_bind()) as ws:
        try:
            root = ws.path / SOURCE
            shown, left_out, identifiers, unconfirmed = convert(
                path, root, info, sequence_map=sequence_map, allow_burned_in=allow_burned_in,
                origin=origin, task_origin=task_origin)
        except BaseException:
            s.rollback()
            raise
        try:
            summary = import_bundle(s, root, dry_run=dry_run, actor=actor, progress=progress,
                                    workspace=ws, allow_blank=allow_blank, revise=revise)
        except BundleInvalid as e:
            raise BundleInvalid(path.name, mapped(e.problems, origin, task_origin)) from None
    return DicomSummary(source=SOURCE, imported=summary, series=shown, left_out=left_out,
                        dropped_identifiers=identifiers, unconfirmed=unconfirmed)
