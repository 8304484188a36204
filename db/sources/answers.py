"""An answer as read from a harness file, before it is matched to a task, and the capped reading
that every reader of such files shares.
"""

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from db.bundle.importer import Problem
from db.bundle.validate import (
    MAX_TEXT_FILE_BYTES,
)
from errors import escape_unprintable, one_line, read_at_most

#: A response file larger than this is refused before it is read.
MAX_FILE_BYTES = MAX_TEXT_FILE_BYTES
@dataclass
class Answer:
    """One answer read from a harness file, before it is matched to a task."""

    where: str  # "preds.xlsx row 3", "batch.jsonl:4"
    keys: dict[str, Any]  # every field a task-key rule may read: {"index": 3, "question": ...}
    default_key: str  # the field the default rule reads
    native_key: str = ""  # the format's own key, which a map rule looks up (default_key if "")
    model: str | None = None
    text: str | None = None  # None with `failure`
    usage: dict[str, int] | None = None
    failure: str | None = None  # a Batch error line: recorded as a failure
    variant: str | None = None  # the lm-eval filter whose line it was read from
    positional: bool = False  # the default key is a position (index, doc_id, line), no task id
    repeat: bool = False  # an lm-eval line without a filter name repeating a document's answers


Reader = Callable[[Path, list[Problem]], list[Answer]]
def shown(text: str) -> str:
    """A name from a file (a filter's), safe to print on one line."""
    return escape_unprintable(one_line(text, 60))


def row_of(a: Answer) -> int:
    """The row or line number at the end of `a.where`."""
    return number(a.where)


def number(where: str) -> int:
    """The row or line number at the end of `where` ("preds.tsv row 3", "batch.jsonl:4")."""
    digits = re.findall(r"\d+", where)
    return int(digits[-1]) if digits else 0


def cap(path: Path, problems: list[Problem], limit: int | None = None) -> bool:
    """False (a problem said) when `path` cannot be read or is over `limit` (MAX_FILE_BYTES)."""
    limit = MAX_FILE_BYTES if limit is None else limit
    try:
        size = path.stat().st_size
    except OSError as e:
        problems.append(Problem(path.name, None, f"cannot read: {e.strerror or e}"))
        return False
    if size > limit:
        problems.append(Problem(path.name, None, f"is {size:,} bytes, more than the limit of "
                                                 f"{limit:,}"))
        return False
    return True


def read_capped(path: Path, problems: list[Problem]) -> bytes | None:
    """The bytes of `path`, read at most up to MAX_FILE_BYTES (a device or a pipe reports no
    size); None (a problem said) when it holds more or cannot be read."""
    try:
        data = read_at_most(path, MAX_FILE_BYTES)
    except OSError as e:
        problems.append(Problem(path.name, None, f"cannot read: {e.strerror or e}"))
        return None
    if data is None:
        problems.append(Problem(path.name, None, f"is more than the limit of "
                                                 f"{MAX_FILE_BYTES:,} bytes"))
    return data
