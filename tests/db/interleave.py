"""Forcing an interleaving of concurrent writers, without timing: a lock held here makes them
queue at a known point, and the release lets them go.

On PostgreSQL a row lock (`SELECT ... FOR UPDATE` in a transaction of its own) stops every
writer of that row, and those that lock it, after what they read before; `waiters` counts the
sessions that wait on a lock (from `pg_stat_activity`). On SQLite every write transaction
starts with `BEGIN IMMEDIATE` (db.engine), so writers are serialised whole and holding the
write lock only queues them at their first statement (there is no count of waiters).
"""

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from sqlalchemy import text
from sqlmodel import Session

from db.engine import engine_for


def is_postgres(url: str) -> bool:
    return url.startswith("postgresql")


@contextmanager
def holding(url: str, lock_sql: str, **params) -> Iterator[None]:
    """Hold `lock_sql` (PostgreSQL: e.g. a `SELECT ... FOR UPDATE`; SQLite: the write lock)
    until the block ends."""
    with engine_for(url).connect() as conn:
        if is_postgres(url):
            conn.execute(text(lock_sql), params)
        else:
            conn.exec_driver_sql("SELECT 1")  # the engine's BEGIN IMMEDIATE
        try:
            yield
        finally:
            conn.rollback()


def waiters(url: str) -> int:
    """Sessions of this database waiting on a lock (PostgreSQL), each asked in its own
    transaction (pg_stat_activity is a snapshot per transaction)."""
    with engine_for(url).connect() as conn:
        return conn.execute(text(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
            "AND datname = current_database()")).scalar_one()


def until_waiting(url: str, n: int, finished: Callable[[], int]) -> None:
    """On PostgreSQL, return once `n` sessions wait on a lock, less those already `finished`
    (a writer that did not need the lock ends instead of waiting); at once on SQLite."""
    if not is_postgres(url):
        return
    while waiters(url) < n - finished():
        threading.Event().wait(0.02)


def run_threads(*targets: Callable[[], object]) -> list[threading.Thread]:
    threads = [threading.Thread(target=t) for t in targets]
    for t in threads:
        t.start()
    return threads


def against(url: str, first: Session, second: Callable[[Session], object],
            finish: Callable[[Session], object] = Session.commit) -> object:
    """Run `second` on a session of its own, in a thread, while `first` holds its uncommitted
    write; once `second` waits on it (PostgreSQL; at once on SQLite, where its first write
    queues), `finish` `first` (commit it) and close it. Returns what `second` returned, or
    the exception it raised."""
    outcome: list[object] = []

    def run() -> None:
        with Session(engine_for(url), expire_on_commit=False) as s:
            try:
                outcome.append(second(s))
            except Exception as e:  # noqa: BLE001 - the test reads it
                outcome.append(e)

    (worker,) = run_threads(run)
    until_waiting(url, 1, lambda: len(outcome))
    try:
        finish(first)
    finally:
        first.close()
    worker.join()
    return outcome[0]


def released_together(url: str, lock_sql: str, *writes: Callable[[Session], object]
                      ) -> list[object]:
    """Start each write on a session of its own (it is committed after) while `lock_sql` is
    held, release them together once all wait (PostgreSQL), and return what each returned or
    raised, in the order they ended."""
    outcome: list[object] = []

    def running(write: Callable[[Session], object]) -> None:
        with Session(engine_for(url)) as s:
            try:
                done = write(s)
                s.commit()
                outcome.append(done)
            except Exception as e:  # noqa: BLE001 - the test reads it
                outcome.append(e)

    with holding(url, lock_sql):
        threads = run_threads(*(lambda w=w: running(w) for w in writes))
        until_waiting(url, len(writes), lambda: len(outcome))
    for t in threads:
        t.join()
    return outcome


def one_after_another(url: str, lock_sql: str, first: Callable[[], object],
                      second: Callable[[], object]) -> None:
    """While `lock_sql` is held, start `first`, then, once it waits at the lock (PostgreSQL;
    it has read what it decides on), `second`; release both once `second` waits too (or has
    ended: nothing stopped it), and wait for both to end."""
    ended: list[object] = []

    def run(work: Callable[[], object]) -> None:
        try:
            work()
        finally:
            ended.append(work)

    with holding(url, lock_sql):
        (one,) = run_threads(lambda: run(first))
        until_waiting(url, 1, lambda: len(ended))
        (two,) = run_threads(lambda: run(second))
        until_waiting(url, 2, lambda: len(ended))
    one.join()
    two.join()
