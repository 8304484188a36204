"""One guard for every zip the study reads: bundles and uploaded folders (`db.bundle.zip`,
extracted to disk) and grader packages (`package.zip`, read into memory).

A zip is untrusted input. Before a byte of any entry is inflated:

- the end-of-central-directory record is read from the file's tail: more than `max_members`
  entries, a central directory larger than `max_directory_bytes`, zip64 (unless allowed) or a
  multi-disk archive is refused, so that `zipfile` parses a bounded directory;
- every entry is checked from the central directory (`problems`): a safe relative name (no
  absolute path, no `..`, no symbolic link), no name twice, no file and folder of one name, not
  encrypted, a compression method of `methods`, its declared size within its cap.

Then each entry is streamed in chunks (`chunks`): `zipfile` never returns more than the
declared size and checks the CRC-32 at the end; an entry that ends before its declared size is
refused too. Refusals are `UserError`s without the file's name (the caller adds it).
"""

from __future__ import annotations

import lzma
import stat
import struct
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import BinaryIO

from errors import UserError

_END = b"PK\x05\x06"  # end of central directory record
_END64_LOCATOR = b"PK\x06\x07"
_END_SIZE, _LOCATOR_SIZE, _MAX_COMMENT = 22, 20, 65535
_CHUNK = 1 << 20
#: What zipfile and its decompressors raise on damaged or unsupported entries.
READ_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, RuntimeError,
               EOFError, ValueError, OSError, zlib.error, lzma.LZMAError)


@dataclass(frozen=True)
class Caps:
    """How much a zip may hold. `member_cap(name)`: an entry's byte cap, or None when no entry
    of that name may be in the zip; `methods`: the compression methods allowed."""

    max_members: int
    max_directory_bytes: int
    member_cap: Callable[[str], int | None]
    methods: frozenset[int] = frozenset({zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED})
    zip64: bool = False


def parts(info: zipfile.ZipInfo) -> tuple[str, ...]:
    """An entry's path, split (a backslash is a separator too)."""
    return PurePosixPath(info.filename.replace("\\", "/")).parts


def open_zip(fh: BinaryIO, size: int, caps: Caps) -> zipfile.ZipFile:
    """The zip open as `fh` (`size` bytes), its directory bounded by `caps` before `zipfile`
    parses it."""
    entries, cd_size = _directory_record(fh, size, caps)
    if entries > caps.max_members:
        raise UserError(f"holds {entries} members, more than {caps.max_members}")
    if cd_size > caps.max_directory_bytes:
        raise UserError(f"its central directory is larger than {caps.max_directory_bytes} bytes")
    fh.seek(0)
    try:
        return zipfile.ZipFile(fh)
    except READ_ERRORS as e:
        raise UserError(f"not a readable zip ({type(e).__name__})") from None


def _directory_record(fh: BinaryIO, size: int, caps: Caps) -> tuple[int, int]:
    """(entries, central directory bytes) from the end record, located as `zipfile` does (the
    last 22 bytes when there is no comment, else the last signature in the tail)."""
    tail_len = min(size, _END_SIZE + _MAX_COMMENT + _LOCATOR_SIZE)
    fh.seek(size - tail_len)
    tail = fh.read(tail_len)
    pos = len(tail) - _END_SIZE
    if not (pos >= 0 and tail[pos:pos + 4] == _END and tail[-2:] == b"\0\0"):
        pos = tail.rfind(_END)
    if pos < 0 or len(tail) - pos < _END_SIZE:
        raise UserError("not a zip file (no end of central directory)")
    _, disk, cd_disk, on_disk, entries, cd_size, _, _ = struct.unpack(
        "<4s4H2LH", tail[pos:pos + _END_SIZE])
    if pos >= _LOCATOR_SIZE and tail[pos - _LOCATOR_SIZE:pos - _LOCATOR_SIZE + 4] == _END64_LOCATOR:
        if not caps.zip64:
            raise UserError("a zip64 archive (a package never needs zip64)")
        return 0, 0  # counted from the parsed directory instead
    if disk or cd_disk or on_disk != entries:
        raise UserError("a multi-disk zip")
    return entries, cd_size


def _name_problem(info: zipfile.ZipInfo) -> str | None:
    name = info.filename.replace("\\", "/")
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        return "zip entry has an absolute path"
    if ".." in parts(info):
        return "zip entry path contains '..'"
    if stat.S_ISLNK(info.external_attr >> 16):
        return "zip entry is a symbolic link"
    if not parts(info):
        return "zip entry has an empty name"
    return None


def problems(infos: list[zipfile.ZipInfo], caps: Caps) -> list[tuple[str, str]]:
    """(entry name, what is wrong) for every entry that may not be read, from the directory
    alone: its name, a name twice or a file and a folder of one name, encryption, method, size.
    The first problem of each entry only."""
    found: list[tuple[str, str]] = []
    files: dict[tuple[str, ...], str] = {}
    folders: set[tuple[str, ...]] = set()
    if len(infos) > caps.max_members:
        return [("", f"holds {len(infos)} members, more than {caps.max_members}")]
    for info in infos:
        name, path = info.filename, parts(info)
        cap = caps.member_cap(name)
        why = (_name_problem(info)
               or ("the zip holds this file twice" if path in files and not info.is_dir() else None)
               or ("is not part of a package" if cap is None else None)
               or ("is encrypted" if info.flag_bits & 0x1 else None)
               or (f"uses compression method {info.compress_type}"
                   if info.compress_type not in caps.methods else None)
               or (f"is larger than {cap} bytes" if cap is not None and info.file_size > cap
                   else None))
        if why:
            found.append((name, why))
            continue
        folders.update(path[:k] for k in range(1, len(path)))
        if info.is_dir():
            folders.add(path)
        else:
            files[path] = name
    found += [(files[p], "the zip holds a file and a folder of this name")
              for p in files if p in folders]
    return found


def chunks(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> Iterator[bytes]:
    """One entry, streamed: never more than its declared size, CRC-32 checked at its end."""
    got = 0
    try:
        with zf.open(info) as fh:
            while chunk := fh.read(min(_CHUNK, info.file_size - got + 1)):
                got += len(chunk)
                if got > info.file_size:  # zipfile stops at the declared size: a second guard
                    raise UserError(f"{info.filename} inflates beyond its declared size")
                yield chunk
    except zipfile.BadZipFile as e:
        what = "fails its CRC-32 check" if "CRC" in str(e) else f"is damaged ({e})"
        raise UserError(f"{info.filename} {what}") from None
    if got != info.file_size:
        raise UserError(f"{info.filename} ends before its declared size")
