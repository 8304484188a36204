"""Open a bundle given as a folder or as a `.zip` of that folder (checked, then extracted).

The zip is checked by `db.zip_guard` before anything is written (a bounded central directory;
every entry's name, method and size: no absolute path, no `..`, no symbolic link, no file
twice, no file and folder of the same name), then as a whole here (the total, its ratio to the
archive's size, the free disk space). While extracting, no entry yields more than its declared
size and its CRC is checked, so a lying header stops the extraction with an error instead of
filling the disk.
"""

import shutil
import zipfile
from pathlib import Path

from db import zip_guard
from db.bundle.errors import BundleInvalid, Problem
from errors import UserError

#: Refuse a zip whose entries would unpack to more than this (a zip bomb, or a mistake).
MAX_UNZIPPED_BYTES = 64 * 2**30
#: Refuse a zip that unpacks to more than this many times its own size (a zip bomb: deflate
#: reaches ~1000x on zeros; MRI data, even uncompressed, stays far below 100x) ...
MAX_RATIO = 100
#: ... once it unpacks to more than this (small archives may compress better, harmlessly).
RATIO_FROM_BYTES = 64 * 2**20
#: Entries of one zip (a DICOM study of 20,000 files fits), and its central directory's bytes.
MAX_ENTRIES = 100_000
MAX_DIRECTORY_BYTES = 64 * 2**20
_IGNORED = ("__MACOSX",)


def _caps() -> zip_guard.Caps:
    """Any entry name the guard allows; sizes are checked in all (`_size_problems`)."""
    return zip_guard.Caps(max_members=MAX_ENTRIES, max_directory_bytes=MAX_DIRECTORY_BYTES,
                          member_cap=lambda _name: MAX_UNZIPPED_BYTES, zip64=True,
                          methods=frozenset({zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED,
                                             zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA}))


def _size_problems(path: Path, infos: list[zipfile.ZipInfo], dest: Path,
                   max_bytes: int) -> list[Problem]:
    label = path.name
    total = sum(i.file_size for i in infos)
    archive = max(1, path.stat().st_size)
    if total > max_bytes:
        why = f"more than the limit of {max_bytes:,} (zip bomb?)"
    elif total > RATIO_FROM_BYTES and total > MAX_RATIO * archive:
        why = f"{total // archive:,} times its size, more than {MAX_RATIO}x (zip bomb?)"
    elif total > shutil.disk_usage(dest).free:
        why = f"more than the free disk space in {dest}"
    else:
        return []
    return [Problem(label, None, f"unzips to {total:,} bytes, {why}")]


def extract_zip(path: Path, dest: Path, *, max_bytes: int = MAX_UNZIPPED_BYTES) -> None:
    """Extract `path` into `dest` after checking every entry (see the module docstring)."""
    label, caps = path.name, _caps()
    with open(path, "rb") as fh:
        try:
            zf = zip_guard.open_zip(fh, path.stat().st_size, caps)
        except UserError as e:
            raise BundleInvalid(label, [Problem(label, None, f"not a readable zip file: {e}")]
                                ) from None
        with zf:
            infos = [i for i in zf.infolist() if i.filename.split("/", 1)[0] not in _IGNORED]
            problems = [Problem(name or label, None, why)
                        for name, why in zip_guard.problems(infos, caps)]
            problems = problems or _size_problems(path, infos, dest, max_bytes)
            if problems:
                raise BundleInvalid(label, problems)
            for info in infos:
                _extract(zf, info, dest.joinpath(*zip_guard.parts(info)), label)


def _extract(zf: zipfile.ZipFile, info: zipfile.ZipInfo, target: Path, label: str) -> None:
    try:
        if info.is_dir():
            target.mkdir(parents=True, exist_ok=True)
            return
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "xb") as out:
            for chunk in zip_guard.chunks(zf, info):
                out.write(chunk)
    except (UserError, *zip_guard.READ_ERRORS) as e:
        msg = f"cannot extract from {label}: {e}"
        raise BundleInvalid(label, [Problem(info.filename, None, msg)]) from None


def bundle_root(folder: Path) -> Path:
    """The folder holding `bundle.json`: `folder` itself or its single sub-folder (zip of a folder)."""
    if (folder / "bundle.json").exists():
        return folder
    subs = [p for p in folder.iterdir()
            if p.is_dir() and p.name not in _IGNORED and not p.name.startswith(".")]
    if len(subs) == 1 and (subs[0] / "bundle.json").exists():
        return subs[0]
    return folder


def open_bundle(path: Path, scratch: Path, *, max_unzipped_bytes: int = MAX_UNZIPPED_BYTES
                ) -> Path:
    """The root folder of the bundle at `path`; a zip is extracted into the new folder `scratch`
    (the caller removes it)."""
    p = Path(path)
    if p.is_dir():
        return bundle_root(p)
    if not p.exists():
        raise BundleInvalid(p.name, [Problem(str(p), None, "no such file or folder")])
    if p.suffix.lower() != ".zip":
        hint = (" (a Neural-MedBench release file? nmb import FILE... --from neural-medbench)"
                if p.suffix.lower() == ".json" else "")
        raise BundleInvalid(p.name, [Problem(str(p), None,
                                             f"a bundle is a folder or a .zip{hint}")])
    scratch.mkdir()
    extract_zip(p, scratch, max_bytes=max_unzipped_bytes)
    return bundle_root(scratch)
