"""Writers that must take turns: a named lock held until the transaction ends, or a row lock
on what a query reads (`for_update`, `for_share`).

PostgreSQL: a transaction-scoped advisory lock (`pg_advisory_xact_lock`), keyed by the name's
sha256, so a second writer waits at this call and then reads what the first committed.
SQLite: nothing to do, every transaction of the study's engine begins with `BEGIN IMMEDIATE`
(db.engine), which already lets one writer in at a time.
"""

import hashlib

from sqlalchemy import Select, text
from sqlmodel import Session


def lock_key(name: str) -> int:
    """The advisory lock key of `name` (signed 64 bits)."""
    return int.from_bytes(hashlib.sha256(f"nmb.{name}".encode()).digest()[:8], "big", signed=True)


def take_turns(s: Session, name: str) -> None:
    """Until the session's transaction ends, no other transaction passes `take_turns(name)`.
    Call it before reading what the write is decided on."""
    if s.get_bind().dialect.name == "postgresql":
        s.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": lock_key(name)})


def for_update(query: Select) -> Select:
    """`query` with its rows locked until the commit (PostgreSQL; SQLite's writes already take
    turns) and read as stored now, not as the session last saw them."""
    return query.with_for_update().execution_options(populate_existing=True)


def for_share(query: Select) -> Select:
    """`query` with its rows share-locked until the commit (PostgreSQL: a writer of them waits,
    and one being committed is waited for) and read as stored now."""
    return query.with_for_update(read=True).execution_options(populate_existing=True)
