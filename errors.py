"""The one exception type for user mistakes, and the helpers refusals are made with.

The CLI turns a `UserError` into one line on stderr and exit code 2; a page shows it
with `st.error`. Programming errors are never wrapped: they keep their traceback.
"""

import json
from pathlib import Path


class UserError(Exception):
    """A mistake the user can fix: bad argument, missing file, invalid data, wrong state."""


def escape_unprintable(text: str) -> str:
    """`text` with every character that is not printable (a line break, an escape sequence's
    ESC, U+202E, ...) escaped as JSON escapes control characters (`\\u001b`): text from outside
    cannot start a line of its own, colour a terminal or turn text around where it is printed."""
    return "".join(c if c.isprintable() else json.dumps(c)[1:-1] if ord(c) < 0x10000
                   else f"\\U{ord(c):08x}" for c in text)


def one_line(text: str, limit: int) -> str:
    """`text` on one line (whitespace runs become one space), cut to `limit` with "..."."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def read_at_most(path: Path, limit: int) -> bytes | None:
    """The bytes of the file at `path` if it holds at most `limit`, else None; never reads more
    than `limit` + 1 bytes, so the cap holds where the size a file reports does not (a pipe, a
    device such as /dev/zero, a file of /proc: size 0). Raises `OSError` as `open` does."""
    with open(path, "rb") as f:
        data = f.read(limit + 1)
    return data if len(data) <= limit else None


def not_permitted(e: PermissionError) -> UserError | None:
    """The one line for a file or folder the account may not read or write (`e.filename`);
    None where `e` names no file (then it is not the user's to fix)."""
    if e.filename is None:
        return None
    return UserError(f"{one_line(str(e.filename), 200)}: {e.strerror}")


def not_a_file(path: Path, missing: str = "no such file") -> str:
    """Why `path`, which is not a regular file, cannot be read as one: `missing`, or that it is
    a folder, or something else (a device, a pipe)."""
    if path.is_dir():
        return "is a folder, not a file"
    return "is not a regular file" if path.exists() else missing


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """`n` and `noun` agreeing in number: "1 case", "2 cases", "0 cases" (`plural` where adding
    an "s" is wrong: `counted(n, "series", "series")`)."""
    return f"{n} {noun}" if n == 1 else f"{n} {plural or noun + 's'}"
