"""A file a user named, written whole or not at all: first to a new name beside it, then
renamed over it."""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path

from errors import UserError


def new_partial(out: Path, mode: int = 0o666) -> Path:
    """A new empty file beside `out` (`.OUT.RANDOM.partial`, `mode` less the umask) to write
    and then `os.replace` over `out`.

    Created exclusively (O_EXCL), so it is never a link another user planted in a shared folder
    such as /tmp (opening a planted name would write through it), and never the file of another
    writer of the same `out` (two freezes, exports or backups to one path at once).

    UserError when `out` exists and is not a regular file: renamed over, a link (planted, or
    /dev/stdout), a device or a pipe would be replaced, for every user of the machine when
    run as root. OSError otherwise (no folder, no permission)."""
    try:
        if not stat.S_ISREG(os.lstat(out).st_mode):
            raise UserError(f"cannot write {out}: it is not a regular file (a link, folder, "
                            "device or pipe); remove it or give another name")
    except FileNotFoundError:
        pass
    while True:
        partial = out.with_name(f".{out.name}.{secrets.token_hex(6)}.partial")
        try:
            os.close(os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode))
        except FileExistsError:
            continue
        return partial


def writable(out: Path) -> None:
    """Check, before any work is done, that `out` can be written: a `new_partial` is made and
    removed. UserError or OSError as for `new_partial`."""
    new_partial(out).unlink()


@contextlib.contextmanager
def replacing(out: Path) -> Iterator[Path]:
    """A `new_partial` of `out` to write in the block, renamed over `out` when the block ends
    without an error and removed in any case. UserError or OSError as for `new_partial`."""
    partial = new_partial(out)
    try:
        yield partial
        os.replace(partial, out)
    finally:
        partial.unlink(missing_ok=True)


def write_file(path: Path, data: bytes | str) -> Path:
    """Write `data` (str: UTF-8) to `path` whole or not at all (`replacing`): never through a
    link, which is refused (`new_partial`). Raises OSError."""
    with replacing(path) as partial:
        partial.write_bytes(data.encode() if isinstance(data, str) else data)
    return path
