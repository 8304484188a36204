"""Open a bundle given as a folder or as a `.zip` of that folder (checked, then extracted).

Every entry is checked from the central directory before anything is written: names (no
absolute path, no `..`, no symbolic link, no file twice, no file and folder of the same name)
and sizes (the total, its ratio to the archive's size, the free disk space). While extracting,
`zipfile` never yields more than an entry's declared size and checks its CRC, so a lying
header stops the extraction with an error instead of filling the disk.
"""

import lzma
import shutil
import stat
import zipfile
import zlib
from pathlib import Path, PurePosixPath

from db.bundle.errors import BundleInvalid, Problem

#: Refuse a zip whose entries would unpack to more than this (a zip bomb, or a mistake).
MAX_UNZIPPED_BYTES = 64 * 2**30
#: Refuse a zip that unpacks to more than this many times its own size (a zip bomb: deflate
#: reaches ~1000x on zeros; MRI data, even uncompressed, stays far below 100x) ...
MAX_RATIO = 100
#: ... once it unpacks to more than this (small archives may compress better, harmlessly).
RATIO_FROM_BYTES = 64 * 2**20
_IGNORED = ("__MACOSX",)
# What zipfile and its decompressors raise on damaged or unsupported entries.
_EXTRACT_ERRORS = (zipfile.BadZipFile, RuntimeError, OSError, EOFError, ValueError, zlib.error,
                   lzma.LZMAError)


def _parts(info: zipfile.ZipInfo) -> tuple[str, ...]:
    return PurePosixPath(info.filename.replace("\\", "/")).parts


def _unsafe_reason(info: zipfile.ZipInfo) -> str | None:
    name = info.filename.replace("\\", "/")
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        return "zip entry has an absolute path"
    if ".." in _parts(info):
        return "zip entry path contains '..'"
    if stat.S_ISLNK(info.external_attr >> 16):
        return "zip entry is a symbolic link"
    if not _parts(info):
        return "zip entry has an empty name"
    return None


def _layout_problems(infos: list[zipfile.ZipInfo]) -> list[Problem]:
    """A file listed twice, or a file and a folder with the same path."""
    problems = []
    files: dict[tuple[str, ...], str] = {}
    folders: set[tuple[str, ...]] = set()
    for info in infos:
        parts = _parts(info)
        folders.update(parts[:k] for k in range(1, len(parts)))
        if info.is_dir():
            folders.add(parts)
        elif parts in files:
            problems.append(Problem(info.filename, None, "the zip holds this file twice"))
        else:
            files[parts] = info.filename
    problems += [Problem(files[p], None, "the zip holds a file and a folder of this name")
                 for p in files if p in folders]
    return problems


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
    label = path.name
    try:
        zf = zipfile.ZipFile(path)
    except _EXTRACT_ERRORS as e:
        raise BundleInvalid(label, [Problem(label, None, f"not a readable zip file: {e}")]) from None
    with zf:
        infos = [i for i in zf.infolist() if i.filename.split("/", 1)[0] not in _IGNORED]
        problems = [Problem(i.filename, None, r) for i in infos if (r := _unsafe_reason(i))]
        problems = problems or _layout_problems(infos)
        problems = problems or _size_problems(path, infos, dest, max_bytes)
        if problems:
            raise BundleInvalid(label, problems)
        for info in infos:
            target = dest.joinpath(*_parts(info))
            try:
                if info.is_dir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(info) as src, open(target, "xb") as out:
                    shutil.copyfileobj(src, out, 1 << 20)
            except _EXTRACT_ERRORS as e:
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
