"""The image store and the temp area under NMB_HOME, and the sweep of what killed imports left.

- `NMB_HOME/images/<sha256[:2]>/<sha256><suffix>`: images, content-addressed. An image is
  written under a temporary name next to its place, then renamed, so the store never holds a
  partial image under a real name.
- `NMB_HOME/tmp/<kind>-<random>/`: one workspace per running import (an extracted zip, an
  uploaded file, and `added.txt`, the store paths the import created, each listed before it
  is written). Nothing goes to the system temp folder.

Every workspace holds a shared `flock` on `NMB_HOME/tmp/.lock` for its whole life; the kernel
drops it when the process dies, even on SIGKILL. `sweep()` (at start: `db.engine.upgrade`;
before a workspace is made, so a long-running server catches up at its next import; after a
failed import) takes that lock exclusively without waiting. If it gets it, no import is
running, so every workspace left is a dead one: the images it added that no `Series` or
`Mask` row references are deleted (with their temporary names), then the workspace. If an import is
running, the sweep does nothing and the next one catches up. `NMB_HOME` belongs to one study
database: the references are checked in that database.
"""

import fcntl
import hashlib
import os
import shutil
import stat
import tempfile
from pathlib import Path, PurePosixPath
from types import TracebackType

from sqlalchemy.engine import Engine
from sqlmodel import Session

from db.engine import database_url, engine_for, get_engine, nmb_home, upgrade
from db.models import Mask, Series
from db.queries import fetch_in
from errors import UserError

TEMP_AREA = "tmp"
_LOCK = ".lock"
_ADDED = "added.txt"


def image_path(sha256: str, suffix: str) -> Path:
    """Where an image with this content lives, relative to NMB_HOME."""
    return Path("images") / sha256[:2] / f"{sha256}{suffix}"


def stored_path_problem(rel: str) -> str | None:
    """Why `rel`, an image path as the database stores it (`Series.path`, `Mask.path`), does
    not name a file of the image store: absolute, climbing out (`images/../../etc/hostname`)
    or outside `images/`; None when it is a store path. A database from outside (a restored
    backup) is untrusted: the viewer and `nmb restore` ask this before opening a path."""
    if (not isinstance(rel, str) or PurePosixPath(rel).is_absolute() or rel.startswith("~")
            or "\\" in rel or rel[1:2] == ":"):
        return "is an absolute path"
    parts = rel.split("/")
    if ".." in parts or "." in parts or "" in parts:
        return "climbs out of the study ('..', '.' or an empty part)"
    if parts[0] != "images" or len(parts) < 2:
        return "is not in the image store (images/)"
    return None


def stored_file_problem(rel: str, home: Path) -> str | None:
    """`stored_path_problem`, or, when the file exists, why it is not a regular file (a FIFO,
    a device, a folder or a link, which an open would block on, read or follow); None for a
    store path that is a regular file or is missing (a missing image is reported where it is
    read)."""
    if why := stored_path_problem(rel):
        return why
    try:
        mode = os.lstat(home / rel).st_mode
    except FileNotFoundError:
        return None
    except OSError as e:
        return f"cannot be read ({e.strerror or e})"
    return None if stat.S_ISREG(mode) else "is not a regular file (a FIFO, device, folder or link)"


def _partial(dest: Path, workspace: str) -> Path:
    """The temporary name of `dest` while the workspace `workspace` writes it."""
    return dest.with_name(f".{dest.name}.{workspace}.tmp")


def _lock(mode: int) -> int | None:
    """A descriptor of the temp area's lock held in `mode`, or None if it is not free (NB)."""
    area = nmb_home() / TEMP_AREA
    area.mkdir(exist_ok=True)
    fd = os.open(area / _LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, mode)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


class Workspace:
    """A private folder under NMB_HOME/tmp for one import; use as a context manager.

    `close()` removes it; when images were added and not `keep_images()`-ed (the import did
    not commit), it sweeps them (see the module docstring) with `engine`.
    """

    def __init__(self, kind: str = "import", *, engine: Engine | None = None) -> None:
        sweep(engine)
        self._fd = _lock(fcntl.LOCK_SH)  # waits while a sweep runs
        self.engine = engine
        self.home = nmb_home()
        try:
            self.path = Path(tempfile.mkdtemp(prefix=f"{kind}-", dir=self.home / TEMP_AREA))
        except BaseException:
            os.close(self._fd)
            raise
        self._added = 0

    def store_image(self, source: Path, sha256: str, suffix: str, *, name: str = "") -> bool:
        """Copy `source` (called `name` in messages) into the store; False when that content is
        already there.

        The copy is hashed as it is written and must match `sha256` (taken during validation:
        the bundle may not change in between).
        """
        dest = self.home / image_path(sha256, suffix)
        if dest.exists():
            return False
        with open(self.path / _ADDED, "a") as added:  # listed before it exists: never orphaned
            added.write(image_path(sha256, suffix).as_posix() + "\n")
        self._added += 1
        dest.parent.mkdir(parents=True, exist_ok=True)
        partial = _partial(dest, self.path.name)
        h = hashlib.sha256()
        try:
            with open(source, "rb") as src, open(partial, "wb") as out:
                while chunk := src.read(1 << 20):
                    h.update(chunk)
                    out.write(chunk)
            if h.hexdigest() != sha256:
                raise UserError(f"{name or source.name} changed while it was being imported; "
                                "import again")
            os.replace(partial, dest)
        finally:
            partial.unlink(missing_ok=True)
        return True

    def release_images(self, paths: list[str]) -> None:
        """Store paths (relative to NMB_HOME) whose rows this workspace's transaction deletes:
        listed like added images, so the sweep at `close()` (or after a crash, the next one)
        deletes those that no row references once the transaction has ended."""
        if not paths:
            return
        with open(self.path / _ADDED, "a") as added:
            added.writelines(p + "\n" for p in paths)
        self._added += len(paths)

    def keep_images(self) -> None:
        """The import committed: its images are referenced and stay."""
        (self.path / _ADDED).unlink(missing_ok=True)
        self._added = 0

    def close(self) -> None:
        if self._fd is None:
            return
        for p in self.path.iterdir():  # added.txt stays for the sweep while it lists images
            if p.is_dir():
                shutil.rmtree(p, ignore_errors=True)
            elif p.name != _ADDED or not self._added:
                p.unlink()
        if not self._added:
            self.path.rmdir()
        os.close(self._fd)  # releases the lock
        self._fd = None
        if self._added:
            sweep(self.engine)

    def __enter__(self) -> "Workspace":
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def _remove_dead(workspace: Path, home: Path, engine: Engine) -> None:
    """Delete the images a dead workspace added that no Series or Mask row references, then it."""
    added_file = workspace / _ADDED
    added = added_file.read_text().split() if added_file.is_file() else []
    if added:
        with Session(engine) as s:
            referenced = {*fetch_in(s, Series.path, added, Series.path),
                          *fetch_in(s, Mask.path, added, Mask.path)}
        for rel in set(added) - referenced:
            dest = home / rel
            dest.unlink(missing_ok=True)
            _partial(dest, workspace.name).unlink(missing_ok=True)
            if not any(dest.parent.iterdir()):
                dest.parent.rmdir()
    shutil.rmtree(workspace) if workspace.is_dir() else workspace.unlink()


def sweep(engine: Engine | None = None) -> int:
    """Remove what killed or failed imports left (module docstring); the number of workspaces
    removed, 0 as well when an import is running (nothing is touched then)."""
    area = nmb_home() / TEMP_AREA
    if not area.is_dir():
        return 0
    fd = _lock(fcntl.LOCK_EX | fcntl.LOCK_NB)
    if fd is None:
        return 0
    try:
        dead = [p for p in area.iterdir() if p.name != _LOCK]
        for workspace in dead:
            _remove_dead(workspace, area.parent, engine or get_engine())
        return len(dead)
    finally:
        os.close(fd)


def prepare_study(url: str | None = None) -> None:
    """What the app and the CLI do first: migrate the database to the newest revision
    (`db.engine.upgrade`), then sweep what killed imports left (a listing of an empty folder
    when there is nothing)."""
    url = url or database_url()
    upgrade(url)
    sweep(engine_for(url))
