"""A file a user named, written whole or not at all: first to a new name beside it, then
renamed over it."""

from __future__ import annotations

import os
import secrets
from pathlib import Path


def new_partial(out: Path, mode: int = 0o666) -> Path:
    """A new empty file beside `out` (`.OUT.RANDOM.partial`, `mode` less the umask) to write
    and then `os.replace` over `out`.

    Created exclusively (O_EXCL), so it is never a link another user planted in a shared folder
    such as /tmp (opening a planted name would write through it), and never the file of another
    writer of the same `out` (two freezes, exports or backups to one path at once). Raises
    OSError (no folder, no permission)."""
    while True:
        partial = out.with_name(f".{out.name}.{secrets.token_hex(6)}.partial")
        try:
            os.close(os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode))
        except FileExistsError:
            continue
        return partial


def write_file(path: Path, data: bytes | str) -> Path:
    """Write `data` (str: UTF-8) to `path` whole or not at all, through a `new_partial`
    renamed over it: a link planted at `path` is replaced, never written through. Raises
    OSError."""
    partial = new_partial(path)
    try:
        partial.write_bytes(data.encode() if isinstance(data, str) else data)
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)
    return path
