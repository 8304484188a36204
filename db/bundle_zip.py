"""Open a bundle given as a folder or as a `.zip` of that folder (extracted safely)."""

import shutil
import stat
import tempfile
import zipfile
from pathlib import Path, PurePosixPath

from db.bundle_errors import BundleInvalid, Problem

#: Refuse a zip whose entries would unpack to more than this (a zip bomb, or a mistake).
MAX_UNZIPPED_BYTES = 64 * 2**30
_IGNORED = ("__MACOSX",)


def _unsafe_reason(info: zipfile.ZipInfo) -> str | None:
    name = info.filename.replace("\\", "/")
    parts = PurePosixPath(name).parts
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        return "zip entry has an absolute path"
    if ".." in parts:
        return "zip entry path contains '..'"
    if stat.S_ISLNK(info.external_attr >> 16):
        return "zip entry is a symbolic link"
    return None


def extract_zip(path: Path, dest: Path, *, max_bytes: int = MAX_UNZIPPED_BYTES) -> None:
    """Extract `path` into `dest`, refusing unsafe entry names and archives that unpack too big.

    Every entry is checked before anything is written. Entry sizes come from the central
    directory; `zipfile` never yields more than the declared size and checks each CRC.
    """
    label = path.name
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as e:
        raise BundleInvalid(label, [Problem(label, None, f"not a readable zip file: {e}")]) from None
    with zf:
        infos = zf.infolist()
        problems = [Problem(i.filename, None, r) for i in infos if (r := _unsafe_reason(i))]
        total = sum(i.file_size for i in infos)
        if total > max_bytes:
            problems.append(Problem(label, None, f"unzips to {total:,} bytes, more than the "
                                                 f"limit of {max_bytes:,} (zip bomb?)"))
        elif total > shutil.disk_usage(dest).free:
            problems.append(Problem(label, None, f"unzips to {total:,} bytes, more than the "
                                                 f"free disk space in {dest}"))
        if problems:
            raise BundleInvalid(label, problems)
        for info in infos:
            if info.filename.split("/", 1)[0] in _IGNORED:
                continue
            target = dest / info.filename.replace("\\", "/")
            if info.is_dir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                with zf.open(info) as src, open(target, "wb") as out:
                    shutil.copyfileobj(src, out, 1 << 20)
            except (zipfile.BadZipFile, RuntimeError, OSError, EOFError) as e:
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


class OpenedBundle:
    """Context manager: the bundle's root folder; a zip is extracted to a temporary folder."""

    def __init__(self, path: Path, *, max_unzipped_bytes: int = MAX_UNZIPPED_BYTES) -> None:
        self.path = Path(path)
        self.max_bytes = max_unzipped_bytes
        self._tmp: tempfile.TemporaryDirectory | None = None

    def __enter__(self) -> Path:
        p = self.path
        if p.is_dir():
            return bundle_root(p)
        if not p.exists():
            raise BundleInvalid(p.name, [Problem(str(p), None, "no such file or folder")])
        if p.suffix.lower() != ".zip":
            raise BundleInvalid(p.name, [Problem(str(p), None, "a bundle is a folder or a .zip")])
        self._tmp = tempfile.TemporaryDirectory(prefix="nmb-bundle-")
        try:
            extract_zip(p, Path(self._tmp.name), max_bytes=self.max_bytes)
        except BaseException:
            self.close()
            raise
        return bundle_root(Path(self._tmp.name))

    def close(self) -> None:
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __exit__(self, *exc: object) -> None:
        self.close()
