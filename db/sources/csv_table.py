"""A small CSV table from outside (model cards, breadth scores), read with caps and checked
column by column: every refusal is one `UserError` line naming the file, the line and the field.

The file is read at most to `MAX_BYTES`, decoded as UTF-8 (a spreadsheet's byte-order mark is
allowed), and holds at most `MAX_ROWS` rows; its header names the required columns, and every
other column must be one of the optional ones (a misspelt column is refused, not ignored).
"""

from __future__ import annotations

import csv
import io
import math
import re
from datetime import date
from pathlib import Path

from errors import UserError, escape_unprintable, not_a_file, one_line, read_at_most

MAX_BYTES = 4 * 2**20  # a thousand models x twenty benchmarks is well under 1 MB
MAX_ROWS = 20_000
MAX_CELL = 1_000  # characters of any one cell


def shown(value: str) -> str:
    """A value quoted for a one-line message: escaped, cut to a readable length."""
    return one_line(escape_unprintable(repr(value)), 60)


class Rows:
    """The rows of one CSV file as (line number, {column: stripped text}), the header checked."""

    def __init__(self, path: Path, required: tuple[str, ...], optional: tuple[str, ...]) -> None:
        self.path = path
        self.name = one_line(escape_unprintable(str(path)), 200)
        if not path.is_file():
            raise UserError(f"{self.name}: {not_a_file(path)}")
        try:
            data = read_at_most(path, MAX_BYTES)
        except OSError as e:
            raise UserError(f"{self.name}: cannot read ({e.strerror or e})") from None
        if data is None:
            raise UserError(f"{self.name}: more than the {MAX_BYTES // 2**20} MiB allowed")
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as e:
            raise UserError(f"{self.name}: not UTF-8 text (byte 0x{data[e.start]:02x} at offset "
                            f"{e.start})") from None
        reader = csv.reader(io.StringIO(text, newline=""))
        try:
            header = [h.strip() for h in next(reader, [])]
        except csv.Error as e:
            raise UserError(f"{self.name}: line 1: {e}") from None
        missing = [c for c in required if c not in header]
        if missing:
            raise UserError(f"{self.name}: line 1: no column {missing[0]!r} (columns: "
                            f"{', '.join(required)}; optional: {', '.join(optional)})")
        unknown = [h for h in header if h not in required + optional]
        if unknown:
            raise UserError(f"{self.name}: line 1: column {shown(unknown[0])} is not one of "
                            f"{', '.join(required + optional)}")
        if len(set(header)) != len(header):
            raise UserError(f"{self.name}: line 1: a column is named twice")
        self.header = header
        self.rows: list[tuple[int, dict[str, str]]] = []
        try:
            for cells in reader:
                line = reader.line_num
                if not any(c.strip() for c in cells):
                    continue
                if len(cells) != len(header):
                    raise UserError(f"{self.name}: line {line}: {len(cells)} fields, the header "
                                    f"has {len(header)}")
                if len(self.rows) == MAX_ROWS:
                    raise UserError(f"{self.name}: more than {MAX_ROWS:,} rows")
                row = dict(zip(header, (c.strip() for c in cells), strict=True))
                for column, value in row.items():
                    if len(value) > MAX_CELL:
                        raise UserError(f"{self.name}: line {line}: field {column!r} is longer "
                                        f"than {MAX_CELL} characters")
                self.rows.append((line, row))
        except csv.Error as e:
            raise UserError(f"{self.name}: line {reader.line_num}: {e}") from None
        if not self.rows:
            raise UserError(f"{self.name}: no rows below the header")

    def refuse(self, line: int, column: str, why: str) -> UserError:
        return UserError(f"{self.name}: line {line}: field {column!r} {why}")


# ---------------------------------------------------------------- values (CLI and CSV alike)


DATE = re.compile(r"\d{4}-\d{2}(-\d{2})?")


def parse_date(text: str, *, month_end: bool = False) -> date:
    """An ISO date YYYY-MM-DD, or a month YYYY-MM read as its first day (`month_end`: its last,
    for a training cutoff: data up to the month's end may have been seen). ValueError else."""
    if not DATE.fullmatch(text):
        raise ValueError(f"{shown(text)} is not a date YYYY-MM-DD or a month YYYY-MM")
    if len(text) == 10:
        return date.fromisoformat(text)
    year, month = int(text[:4]), int(text[5:7])
    first = date(year, month, 1)  # ValueError for month 13
    if not month_end:
        return first
    nxt = date(year + month // 12, month % 12 + 1, 1)
    return date.fromordinal(nxt.toordinal() - 1)


YES, NO = {"yes", "true", "1", "y"}, {"no", "false", "0", "n"}


def parse_yes_no(text: str) -> bool:
    low = text.lower()
    if low in YES:
        return True
    if low in NO:
        return False
    raise ValueError(f"{shown(text)} is not yes or no")


def parse_number(text: str, *, least: float, most: float) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{shown(text)} is not a number") from None
    if not (math.isfinite(value) and least <= value <= most):
        raise ValueError(f"{shown(text)} is not a number from {least:g} to {most:g}")
    return value
