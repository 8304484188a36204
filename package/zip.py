"""Read a package zip under caps: members named, counted and sized from the central directory
before anything is inflated, then streamed under the same caps (headers can lie).

A zip is untrusted input. Before a byte of any member is inflated:

- the end-of-central-directory record is read from the file's tail: more than `max_members`
  entries, a central directory larger than `max_directory_bytes`, or zip64 (which a package
  never needs) is refused, so that `zipfile` parses a bounded directory;
- every entry is named as a member a package may hold (no name twice), stored or deflated
  (other methods, whose decoders can take unbounded memory, are refused), not encrypted, each
  declared size within its member's cap and their sum within `max_total_bytes`.

Then each member is streamed in chunks: `zipfile` never returns more than the declared size and
checks the CRC-32 at the end; a member that ends before its declared size is refused too. So
memory is bounded by `max_total_bytes` plus one member, whatever the file claims.
"""

from __future__ import annotations

import struct
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from typing import BinaryIO

from errors import UserError

_END = b"PK\x05\x06"  # end of central directory record
_END64_LOCATOR = b"PK\x06\x07"
_END_SIZE, _LOCATOR_SIZE, _MAX_COMMENT = 22, 20, 65535
_CHUNK = 1 << 20


@dataclass(frozen=True)
class Caps:
    """How much a zip may hold. `member_cap(name)`: the byte cap of a member, or None when
    the name is not one a package may hold."""

    member_cap: Callable[[str], int | None]
    max_members: int
    max_total_bytes: int
    max_directory_bytes: int


def _directory_record(fh: BinaryIO, size: int) -> tuple[int, int]:
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
        raise UserError("a zip64 archive (a package never needs zip64)")
    if disk or cd_disk or on_disk != entries:
        raise UserError("a multi-disk zip")
    return entries, cd_size


def _check_directory(infos: list[zipfile.ZipInfo], caps: Caps) -> None:
    """Every entry, from the central directory alone: name, method, encryption, sizes."""
    if len(infos) > caps.max_members:
        raise UserError(f"holds {len(infos)} members, more than {caps.max_members}")
    seen: set[str] = set()
    total = 0
    for info in infos:
        name = info.filename
        if name in seen:
            raise UserError("a member name occurs twice")
        seen.add(name)
        cap = caps.member_cap(name)
        if cap is None:
            raise UserError(f"member {name[:80]!r} is not part of a package")
        if info.flag_bits & 0x1:
            raise UserError(f"{name} is encrypted")
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise UserError(f"{name} uses compression method {info.compress_type} "
                            "(a package is stored or deflated)")
        if info.file_size > cap:
            raise UserError(f"{name} is larger than {cap} bytes")
        total += info.file_size
        if total > caps.max_total_bytes:
            raise UserError(f"its members inflate to more than {caps.max_total_bytes} bytes")


def _read(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    """One member, streamed: never more than its declared size, CRC-32 checked at its end."""
    chunks, got = [], 0
    try:
        with zf.open(info) as fh:
            while chunk := fh.read(min(_CHUNK, info.file_size - got + 1)):
                got += len(chunk)
                if got > info.file_size:  # zipfile stops at the declared size: a second guard
                    raise UserError(f"{info.filename} inflates beyond its declared size")
                chunks.append(chunk)
    except zipfile.BadZipFile as e:
        what = "fails its CRC-32 check" if "CRC" in str(e) else f"is damaged ({e})"
        raise UserError(f"{info.filename} {what}") from None
    if got != info.file_size:
        raise UserError(f"{info.filename} ends before its declared size")
    return b"".join(chunks)


def read_members(fh: BinaryIO, size: int, caps: Caps) -> dict[str, bytes]:
    """Every member of the zip open as `fh` (`size` bytes), checked then read under `caps`.
    Refusals are `UserError` without the file's name (the caller adds it)."""
    entries, cd_size = _directory_record(fh, size)
    if entries > caps.max_members:
        raise UserError(f"holds {entries} members, more than {caps.max_members}")
    if cd_size > caps.max_directory_bytes:
        raise UserError(f"its central directory is larger than {caps.max_directory_bytes} bytes")
    fh.seek(0)
    try:
        with zipfile.ZipFile(fh) as zf:
            infos = zf.infolist()
            _check_directory(infos, caps)
            return {info.filename: _read(zf, info) for info in infos}
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, EOFError,
            ValueError, OSError) as e:
        raise UserError(f"not a readable zip ({type(e).__name__})") from None
