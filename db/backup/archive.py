"""The backup file: a tar archive of the database dump, the image store and the frozen packages,
with `manifest.json` last (the sha256 and size of every other member).

Writing hashes each member as it is copied in; an image's content must match the sha256 in its
store name. The file is written under a temporary name beside the destination (a new file,
never through a link; mode 0600: it holds password hashes) and renamed when complete, so a
killed backup never leaves a file under the name asked for.

Reading treats the file as untrusted. Before a byte is extracted, every header is read (plain
tar, or gzip-compressed tar): only regular files (no link, folder, device or sparse file), each
name one a backup holds (no absolute path, no `..`, no name twice), at most `MAX_MEMBERS` of
them, their declared sizes summing to at most `MAX_BACKUP_BYTES`, to at most `MAX_RATIO` times
the file's size (checked at each header, before its data is decompressed to reach the next
one) and to less than the free disk space; extended headers (pax, GNU long names) of at most
`MAX_HEADER_BYTES`, since tarfile reads one whole into memory; a manifest of at most
`MAX_MANIFEST_BYTES`, and of no more than its members need, that lists exactly the other
members with their sizes.
Then each member is extracted under the folder given (tarfile yields exactly the declared size
or fails on a truncated file) and hashed; one hash that differs refuses the whole file.
"""

import hashlib
import io
import json
import os
import re
import shutil
import tarfile
import time
import zlib
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Annotated, BinaryIO, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError, field_validator

from db.files import new_partial
from errors import UserError, one_line

FORMAT = "nmb-backup/1"
MANIFEST = "manifest.json"
DATABASE_MEMBER = {"sqlite": "database/study.sqlite", "postgresql": "database/study.pgdump"}
#: Refuse a backup whose members add up to more than this (1 TiB).
MAX_BACKUP_BYTES = 2**40
MAX_MEMBERS = 1_000_000
MAX_MANIFEST_BYTES = 256 * 2**20
#: A manifest holds its header and a line per member: at most this much, and this per member
#: (JSON of small objects takes about 20 times its size in memory).
MANIFEST_HEADER_BYTES, MANIFEST_MEMBER_BYTES = 16 * 2**10, 512
#: Once it unpacks to more than RATIO_FROM_BYTES, a compressed file may unpack to at most this
#: many times its size (a gzip bomb; a backup's images are compressed already).
MAX_RATIO = 100
RATIO_FROM_BYTES = 64 * 2**20
#: A pax or GNU long-name header (a backup's names are at most 300 characters).
MAX_HEADER_BYTES = 64 * 2**10
_EXTENDED = (tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK, tarfile.XHDTYPE, tarfile.XGLTYPE,
             tarfile.SOLARIS_XHDTYPE)
_CHUNK = 1 << 20
_IMAGE = re.compile(r"images/([0-9a-f]{2})/(\1[0-9a-f]{62})(\.[a-z]{2,4}){0,2}")
_PACKAGE = re.compile(r"packages/[A-Za-z0-9][A-Za-z0-9._-]{0,127}\.zip")
_READ_ERRORS = (tarfile.TarError, OSError, EOFError, zlib.error)


def member_problem(name: str) -> str | None:
    """Why `name` cannot be a member of a backup, or None."""
    if name.startswith("/") or "\\" in name or re.match(r"[A-Za-z]:", name):
        return "has an absolute path"
    parts = name.split("/")
    if ".." in parts or "." in parts or "" in parts:
        return "has an unsafe path ('..', '.' or an empty part)"
    if (name == MANIFEST or name in DATABASE_MEMBER.values() or _IMAGE.fullmatch(name)
            or _PACKAGE.fullmatch(name)):
        return None
    return "is not a file a backup holds"


class Member(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(max_length=300)
    size: int = Field(ge=0)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")

    @field_validator("name")
    @classmethod
    def _a_backup_member(cls, name: str) -> str:
        if why := member_problem(name):
            raise ValueError(f"{name!r} {why}")
        return name


CountName = Annotated[str, StringConstraints(pattern=r"^[a-z_]{1,40}$")]


class Manifest(BaseModel):
    """What `manifest.json` says: the format, the database's kind and Alembic revision, the
    code's newest revision when it was made, the study's counts (`nmb status`), every member.
    Every field that is printed is constrained to plain text."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format: Literal["nmb-backup/1"]
    created_at: datetime
    database: Literal["sqlite", "postgresql"]
    revision: str = Field(pattern=r"^\d{4}$")
    code_revision: str = Field(pattern=r"^\d{4}$")
    counts: dict[CountName, Annotated[int, Field(ge=0)]] = Field(max_length=50)
    members: list[Member] = Field(max_length=MAX_MEMBERS)


def _image_sha256(name: str) -> str | None:
    found = _IMAGE.fullmatch(name)
    return found.group(2) if found else None


def _copy_hashed(src: BinaryIO, out: BinaryIO) -> str:
    h = hashlib.sha256()
    while chunk := src.read(_CHUNK):
        h.update(chunk)
        out.write(chunk)
    return h.hexdigest()


class _Hashing:
    """A reader that hashes what is read through it (tarfile.addfile reads exactly `size`)."""

    def __init__(self, f: BinaryIO) -> None:
        self.f, self.h = f, hashlib.sha256()

    def read(self, n: int = -1) -> bytes:
        data = self.f.read(n)
        self.h.update(data)
        return data


def check_destination(out: Path) -> None:
    """Refuse to write a backup over a file, or into a folder that is not there."""
    if out.exists():
        raise UserError(f"{out} exists: a backup never overwrites a file; choose another name")
    if not out.parent.is_dir():
        raise UserError(f"cannot write {out}: no folder {out.parent}")


def write_backup(out: Path, members: Iterable[tuple[str, Path]], header: dict) -> Manifest:
    """Write `out`: each (name, file) of `members`, then the manifest (`header` + members).
    Refuses an `out` that exists; removes the partial file on any failure."""
    check_destination(out)
    try:
        partial = new_partial(out, 0o600)
    except OSError as e:
        raise UserError(f"cannot write {out}: {e.strerror}") from None
    listed = []
    try:
        with open(partial, "wb") as raw:
            with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tf:
                for name, source in members:
                    listed.append(_add(tf, name, source))
                manifest = Manifest(**header, members=listed)
                data = manifest.model_dump_json(indent=1).encode()
                info = tarfile.TarInfo(MANIFEST)
                info.size, info.mode, info.mtime = len(data), 0o600, int(time.time())
                tf.addfile(info, io.BytesIO(data))
            raw.flush()
            os.fsync(raw.fileno())
        os.replace(partial, out)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return manifest


def _add(tf: tarfile.TarFile, name: str, source: Path) -> Member:
    try:
        with open(source, "rb") as f:
            st = os.fstat(f.fileno())
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = st.st_size, 0o600, int(st.st_mtime)
            reader = _Hashing(f)
            tf.addfile(info, reader)
    except OSError as e:
        raise UserError(f"cannot back up {name}: {e.strerror or e}; nothing was written") from None
    digest = reader.h.hexdigest()
    if (expected := _image_sha256(name)) and digest != expected:
        raise UserError(f"{name} does not match the sha256 of its name: the image store is "
                        "damaged; nothing was written")
    return Member(name=name, size=info.size, sha256=digest)


class _Header(tarfile.TarInfo):
    """A header whose extended header is capped and whose sparse map is never read: tarfile
    reads either whole into memory, whatever the length the file declares."""

    def _proc_member(self, tf: tarfile.TarFile) -> tarfile.TarInfo:
        if self.type == tarfile.GNUTYPE_SPARSE:
            raise tarfile.SubsequentHeaderError(f"member {self.name!r} is a sparse file")
        if self.type in _EXTENDED and self.size > MAX_HEADER_BYTES:
            raise tarfile.SubsequentHeaderError(f"an extended header of {self.size:,} bytes, "
                                                f"more than {MAX_HEADER_BYTES:,}")
        return super()._proc_member(tf)

    def _proc_gnusparse_10(self, next: tarfile.TarInfo, pax_headers: dict,
                           tf: tarfile.TarFile) -> None:
        raise tarfile.SubsequentHeaderError("a member is a sparse file")


def _open(path: Path) -> tarfile.TarFile:
    try:
        with open(path, "rb") as f:
            gzipped = f.read(2) == b"\x1f\x8b"
        return tarfile.open(path, mode="r:gz" if gzipped else "r:", tarinfo=_Header)
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except _READ_ERRORS as e:
        raise UserError(f"{path.name}: not a backup file (not a tar archive: {e})") from None


def _scan(tf: tarfile.TarFile, path: Path) -> dict[str, tarfile.TarInfo]:
    """Every header, checked (module docstring); {name: header}."""
    label, size = path.name, max(1, path.stat().st_size)
    found: dict[str, tarfile.TarInfo] = {}
    total = 0
    try:
        while (m := tf.next()) is not None:
            if not m.isreg() or m.sparse is not None:
                kind = ("a link" if m.issym() or m.islnk() else "a sparse file" if m.isreg()
                        else "not a regular file")
                raise UserError(f"{label}: member {m.name!r} is {kind}")
            if why := member_problem(m.name):
                raise UserError(f"{label}: member {m.name!r} {why}")
            if m.name in found:
                raise UserError(f"{label}: member {m.name!r} is there twice")
            found[m.name] = m
            total += m.size
            if len(found) > MAX_MEMBERS or total > MAX_BACKUP_BYTES:
                raise UserError(f"{label}: more than {MAX_MEMBERS:,} members or "
                                f"{MAX_BACKUP_BYTES:,} bytes")
            if total > RATIO_FROM_BYTES and total > MAX_RATIO * size:
                raise UserError(f"{label}: unpacks to {total:,} bytes, more than {MAX_RATIO}x "
                                "its size")
    except _READ_ERRORS as e:
        raise UserError(f"{label}: damaged or truncated ({e})") from None
    return found


def _manifest(tf: tarfile.TarFile, found: dict[str, tarfile.TarInfo], label: str) -> Manifest:
    info = found.pop(MANIFEST, None)
    if info is None:
        raise UserError(f"{label}: no {MANIFEST} (not a backup, or truncated)")
    limit = min(MAX_MANIFEST_BYTES, MANIFEST_HEADER_BYTES + MANIFEST_MEMBER_BYTES * len(found))
    if info.size > limit:
        raise UserError(f"{label}: {MANIFEST} is {info.size:,} bytes, more than {limit:,} (for "
                        f"{len(found):,} members)")
    try:
        data = tf.extractfile(info).read()
        return Manifest.model_validate(json.loads(data))
    except _READ_ERRORS as e:
        raise UserError(f"{label}: damaged or truncated ({e})") from None
    except RecursionError:
        raise UserError(f"{label}: {MANIFEST} is not a backup manifest (nested too deeply)") from None
    except (ValueError, ValidationError) as e:
        if isinstance(e, ValidationError):
            first = e.errors()[0]
            where = ".".join(str(p) if str(p).isprintable() else repr(p) for p in first["loc"])
            e = one_line(f"{where or MANIFEST}: {first['msg']}", 200)
        raise UserError(f"{label}: {MANIFEST} is not a backup manifest ({e})") from None


def _check_listing(label: str, manifest: Manifest, found: dict[str, tarfile.TarInfo],
                   dest: Path) -> None:
    listed = {m.name: m for m in manifest.members}
    if len(listed) != len(manifest.members):
        raise UserError(f"{label}: {MANIFEST} lists a member twice")
    if missing := sorted(listed.keys() - found.keys()):
        raise UserError(f"{label}: member {missing[0]} is missing (truncated?)"
                        + (f" and {len(missing) - 1} more" if len(missing) > 1 else ""))
    if extra := sorted(found.keys() - listed.keys()):
        raise UserError(f"{label}: member {extra[0]} is not in {MANIFEST}")
    if DATABASE_MEMBER[manifest.database] not in listed:
        raise UserError(f"{label}: no database ({DATABASE_MEMBER[manifest.database]})")
    for name, m in listed.items():
        if found[name].size != m.size:
            raise UserError(f"{label}: member {name} has {found[name].size:,} bytes, "
                            f"{MANIFEST} says {m.size:,} (damaged)")
    total = sum(m.size for m in manifest.members)
    if total > shutil.disk_usage(dest).free:
        raise UserError(f"{label}: unpacks to {total:,} bytes, more than the free disk space "
                        f"in {dest}")


def read_backup(path: Path, dest: Path) -> Manifest:
    """Check the backup at `path` and extract its members under the new folder `dest` (the
    caller removes it), each hashed against the manifest; the manifest."""
    label = path.name
    with _open(path) as tf:
        found = _scan(tf, path)
        manifest = _manifest(tf, found, label)
        dest.mkdir()
        _check_listing(label, manifest, found, dest)
        for m in sorted(manifest.members, key=lambda m: found[m.name].offset):  # file order
            target = dest.joinpath(*m.name.split("/"))
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                with tf.extractfile(found[m.name]) as src, open(target, "xb") as out:
                    digest = _copy_hashed(src, out)
            except _READ_ERRORS as e:
                raise UserError(f"{label}: damaged or truncated at {m.name} ({e})") from None
            if digest != m.sha256 or _image_sha256(m.name) not in (None, digest):
                raise UserError(f"{label}: member {m.name} does not match its sha256 (damaged "
                                "or changed)")
    return manifest
