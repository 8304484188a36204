"""Query helpers shared by the data layer."""

from collections.abc import Iterable, Iterator
from typing import Any

from sqlmodel import Session, col, select

IN_CHUNK = 900  # ids per IN (...) query, below SQLite's old 999-parameter limit


def chunks(items: list, n: int) -> Iterator[list]:
    for i in range(0, len(items), n):
        yield items[i:i + n]


def fetch_in(s: Session, key: Any, keys: Iterable[Any], *columns: Any) -> list:
    """Rows whose `key` column is in `keys`: whole table rows, or only `columns` when given.

    Read in chunked IN queries, so any number of keys works on SQLite too.
    """
    query = select(*columns) if columns else select(key.class_)
    out: list = []
    for chunk in chunks(sorted(set(keys)), IN_CHUNK):
        out += s.exec(query.where(col(key).in_(chunk))).all()
    return out
