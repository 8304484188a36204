"""Read a package zip into memory under its caps (`db.zip_guard`): the directory bounded and
every member checked from it before anything is inflated, then each member streamed; memory is
bounded by `max_total_bytes` plus one member, whatever the file claims."""

from __future__ import annotations

from dataclasses import dataclass
from typing import BinaryIO

from db import zip_guard
from errors import UserError, one_line


@dataclass(frozen=True)
class Caps(zip_guard.Caps):
    """A package's caps: the guard's (stored or deflated members only; decoders of other methods
    can take unbounded memory), and the sum of the members' declared sizes."""

    max_total_bytes: int = 0


def read_members(fh: BinaryIO, size: int, caps: Caps) -> dict[str, bytes]:
    """Every member of the zip open as `fh` (`size` bytes), checked then read under `caps`.
    Refusals are `UserError` without the file's name (the caller adds it)."""
    with zip_guard.open_zip(fh, size, caps) as zf:
        try:
            infos = zf.infolist()
            if problems := zip_guard.problems(infos, caps):
                name, why = problems[0]
                raise UserError(f"{one_line(repr(name[:80]), 90)} {why}" if name else why)
            if sum(i.file_size for i in infos) > caps.max_total_bytes:
                raise UserError(f"its members inflate to more than {caps.max_total_bytes} bytes")
            return {info.filename: b"".join(zip_guard.chunks(zf, info)) for info in infos}
        except zip_guard.READ_ERRORS as e:
            raise UserError(f"not a readable zip ({type(e).__name__})") from None
