"""A write a person makes (a score, a draft, an exam answer, a login, an admin's change) waits
while the study database is busy instead of failing with "database is locked".

SQLite lets one writer in at a time. Every transaction of the study's engine begins with
`BEGIN IMMEDIATE` (db.engine), so none fails on a lock upgrade (a deferred transaction that
read and then writes gets SQLITE_BUSY at once, whatever the busy timeout:
https://www.sqlite.org/lang_transaction.html, https://www.sqlite.org/c3ref/busy_handler.html);
a writer waits in SQLite's busy handler, which polls (every 100 ms once it has waited a while)
and so lets one waiter lose to later ones again and again: under 16 writers at once, one in a
few hundred waited seconds while the median waited milliseconds. Here:

- the person writes of one process take turns at a lock of their own (SQLite only) before they
  ask SQLite for its lock, and a turn is handed over when the last ends (no polling), so they
  never compete with each other in the busy handler (a write called in a session that is in a
  transaction already, and so holds SQLite's lock, goes ahead without a turn);
- each attempt waits for SQLite's lock at most `ATTEMPT_SECONDS` (`db.engine.attempt_wait`; less
  when the engine's own wait or the time left is shorter); a
  busy or locked error, or on PostgreSQL a serialization failure or deadlock (SQLSTATE 40001,
  40P01: https://www.postgresql.org/docs/current/mvcc-serialization-failure-handling.html),
  rolls the transaction back and tries the whole write again after a jittered pause (doubling
  from `BACKOFF_SECONDS[0]` up to `BACKOFF_SECONDS[1]`, equal jitter), until
  `WRITE_DEADLINE_SECONDS` after the first attempt;
- then `StudyBusy`: one line saying what is kept; the transaction was rolled back whole, so
  nothing is half-written and what was stored before stays.

Use `person_write(kept)` on a function whose first argument is the session and which runs one
whole transaction (it commits, and nothing else is pending in the session when it is called),
or `retry_when_busy(s, write, kept=...)` for one transaction of a longer function. Inside
another person write (the same thread), a person write runs once: the outer one retries.
"""

import random
import sqlite3
import threading
import time
from _thread import LockType
from collections.abc import Callable
from functools import wraps
from typing import Concatenate, ParamSpec, TypeVar

from sqlalchemy.exc import DBAPIError
from sqlmodel import Session

from db import engine
from errors import UserError

WRITE_DEADLINE_SECONDS = 30.0  # a person's click waits at most this long for the database
ATTEMPT_SECONDS = 2.0  # SQLite's own wait for its lock in one attempt
BACKOFF_SECONDS = (0.005, 0.25)  # the first and the largest pause between attempts
SQLITE_BUSY, SQLITE_LOCKED = 5, 6  # primary result codes (https://www.sqlite.org/rescode.html)
RETRIED_SQLSTATES = {"40001", "40P01"}  # serialization_failure, deadlock_detected

# What a person is told is kept when their write could not get in (`StudyBusy`).
SCORE_KEPT = "your score is not submitted yet (the form keeps it, and your last saved draft)"
DRAFT_KEPT = "this change is not saved yet (the form keeps it)"
ANSWER_KEPT = "your answer is not recorded yet (the box keeps it)"
EXAM_DRAFT_KEPT = "your draft is not saved yet (the box keeps it)"
FINISH_KEPT = "the exam is not finished yet (your answers are kept)"
NOTHING_CHANGED = "nothing was changed"
LOGIN_KEPT = "you are not signed in yet"

P = ParamSpec("P")
T = TypeVar("T")


class StudyBusy(UserError):
    """A person's write could not get into the study database before its deadline; nothing
    of it was stored."""

    def __init__(self, kept: str) -> None:
        super().__init__(f"the study database is busy (another write is holding it): {kept}; "
                         "try again in a moment")


def is_busy(e: BaseException) -> bool:
    """Whether `e` (as SQLAlchemy raises it) says the database was busy or locked (SQLite), or
    that the transaction lost a serialization conflict or a deadlock (PostgreSQL): the same
    write, run again, may well succeed."""
    orig = e.orig if isinstance(e, DBAPIError) else None
    if isinstance(orig, sqlite3.OperationalError):
        code = getattr(orig, "sqlite_errorcode", None)  # the extended code: BUSY_SNAPSHOT, ...
        if code is not None:
            return code & 0xFF in (SQLITE_BUSY, SQLITE_LOCKED)
        return str(orig).startswith(("database is locked", "database is busy",
                                     "database table is locked"))
    return getattr(orig, "sqlstate", None) in RETRIED_SQLSTATES


_turns: dict[str, LockType] = {}
_turns_guard = threading.Lock()
_inside = threading.local()


def _turn(s: Session) -> LockType | None:
    """The lock the person writes of this process to this SQLite database take turns at (None
    on PostgreSQL, whose row locks let writes of different rows run together)."""
    bind = s.get_bind()
    if bind.dialect.name != "sqlite":
        return None
    with _turns_guard:
        return _turns.setdefault(str(bind.url), threading.Lock())


def retry_when_busy(s: Session, write: Callable[[], T], *, kept: str) -> T:
    """`write()`, one whole transaction of `s`, run again while the database is busy (rolled
    back between attempts) until `WRITE_DEADLINE_SECONDS`; then `StudyBusy(kept)`."""
    if getattr(_inside, "write", False):
        return write()
    deadline = time.monotonic() + WRITE_DEADLINE_SECONDS
    pause = BACKOFF_SECONDS[0]
    while True:
        # A session in a transaction already holds SQLite's lock (BEGIN IMMEDIATE): waiting for
        # a turn there would keep the writer that has the turn waiting for that lock.
        turn = None if s.in_transaction() else _turn(s)
        left = deadline - time.monotonic()
        if left <= 0 or (turn is not None and not turn.acquire(timeout=left)):
            raise StudyBusy(kept)
        _inside.write = True
        try:
            with engine.attempt_wait(min(ATTEMPT_SECONDS, engine.BUSY_TIMEOUT_MS / 1000,
                                         max(deadline - time.monotonic(), 0.001))):
                return write()
        except DBAPIError as e:
            if not is_busy(e):
                raise
            s.rollback()
        finally:
            _inside.write = False
            if turn is not None:
                turn.release()
        left = deadline - time.monotonic()
        if left <= 0:
            raise StudyBusy(kept)
        time.sleep(min(random.uniform(pause / 2, pause), left))
        pause = min(pause * 2, BACKOFF_SECONDS[1])


def person_write(kept: str) -> Callable[[Callable[Concatenate[Session, P], T]],
                                        Callable[Concatenate[Session, P], T]]:
    """Decorate a write of one whole transaction, `fn(session, ...)`, so that it is retried
    while the database is busy (`retry_when_busy`); `kept`: what the person is told is kept
    when it cannot get in."""
    def decorate(fn: Callable[Concatenate[Session, P], T]) -> Callable[Concatenate[Session, P], T]:
        @wraps(fn)
        def write(s: Session, *args: P.args, **kwargs: P.kwargs) -> T:
            return retry_when_busy(s, lambda: fn(s, *args, **kwargs), kept=kept)
        return write
    return decorate
