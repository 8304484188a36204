"""Writing a run, grader run or collection run alike: opened recording the process that owns it,
its finished items committed in groups, ended "finished" or "interrupted".

A run records its owner (host, pid, the pid's start time and boot) in its opening audit entry
("grader.run", "collect.run"). A killed process cannot end its run itself, so every run, when it
opens, marks "interrupted" the runs of either kind still "running" whose process is gone (never
a live process's, nor another host's, nor one without a recorded owner). A run stopped by Ctrl-C,
an error or a page's rerun ends itself "interrupted" (`RunWriter.ending`); the CLI turns SIGTERM
into Ctrl-C, so a terminated `nmb grade` or `nmb collect` does too.
"""

from __future__ import annotations

import contextlib
import os
import socket
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Generic, TypeVar

from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, select, update

from db.audit import record
from db.models import AuditLog, CollectionRun, GraderRun, utcnow
from llm.call import periodically

Run = GraderRun | CollectionRun
RUNNING, INTERRUPTED, FINISHED = "running", "interrupted", "finished"
AUDIT: dict[type, str] = {GraderRun: "grader.run", CollectionRun: "collect.run"}
E = TypeVar("E")


# ---------------------------------------------------------------- who owns a run


def process_start(pid: int) -> str | None:
    """The boot and the start time of process `pid` (Linux /proc), so that a pid reused by a
    later process is not mistaken for it; None when it is gone (or a zombie) or /proc is absent."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        state, *rest = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return None if state in ("Z", "X") else f"{boot}:{rest[18]}"  # field 22: starttime


def owner() -> dict:
    """This process, as a run records it (in its opening audit entry)."""
    return {"host": socket.gethostname(), "pid": os.getpid(),
            "pid_start": process_start(os.getpid())}


def gone(owner: dict) -> bool:
    """True when the process `owner` names has ended. Only a process of this host can be
    seen: a run owned elsewhere is never judged gone from here."""
    pid = owner.get("pid")
    if owner.get("host") != socket.gethostname() or not isinstance(pid, int) or pid < 1:
        return False
    if owner.get("pid_start") is not None:
        return process_start(pid) != owner["pid_start"]
    try:  # no /proc where the run started: the pid alone
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, another user's
        return False
    return False


def mark_abandoned(s: Session, table: type[Run], *, actor: str | None = None) -> list[int]:
    """Mark "interrupted" the runs of `table` still "running" whose process is gone (killed, or
    its machine rebooted), in the session's transaction; runs of live processes, of other hosts
    and without a recorded owner are left alone. Returns the ids marked."""
    running = s.exec(select(table.id).where(table.status == RUNNING)).all()
    if not running:
        return []
    action = AUDIT[table]
    starts = s.exec(select(AuditLog.detail).where(
        AuditLog.action == action, AuditLog.detail["run"].as_integer().in_(running))).all()
    marked = []
    for started in starts:
        if gone(started):
            done = s.exec(update(table)
                          .where(table.id == started["run"], table.status == RUNNING)
                          .values(status=INTERRUPTED, finished_at=utcnow()))
            if done.rowcount:  # not already marked by a run starting at the same time
                record(s, f"{action}.interrupted", actor=actor, run=started["run"],
                       reason="its process is gone", **{k: started[k] for k in ("host", "pid")})
                marked.append(started["run"])
    return marked


def sweep(s: Session, *, actor: str | None = None) -> dict[str, list[int]]:
    """`mark_abandoned` for grader and collection runs, committed; {audit action: ids marked}."""
    marked = {AUDIT[table]: mark_abandoned(s, table, actor=actor) for table in AUDIT}
    s.commit()
    return marked


def open_run(s: Session, run: Run, *, actor: str | None, **detail: Any) -> None:
    """Mark the abandoned runs, then store `run` ("running") with its audit entry naming this
    process as its owner, and commit."""
    sweep(s, actor=actor)
    s.add(run)
    s.flush()
    record(s, AUDIT[type(run)], actor=actor, run=run.id, **detail, **owner())
    s.commit()


# ---------------------------------------------------------------- what a run stores


class RunWriter(Generic[E]):
    """Stores a run's entries in groups, committed every `COMMIT_EVERY` seconds (by `flush`
    while requests are out, when an entry comes in once that long has passed, and at the end,
    on Ctrl-C too): an interrupted run keeps what it finished, and a hard kill loses at most
    that much work, which a re-run does again (from its cache where it was saved).

    `write(group)` adds the group's rows to the session, uncommitted, and returns what they add
    to the run's counters; it keeps no state of its own: on a unique-key clash (another run
    stored some of these meanwhile) the group is rolled back and written again one entry at a
    time, keeping the other run's rows. `totals`: the run's counters and their start values,
    set on the run at every commit.
    """

    COMMIT_EVERY = 0.25

    def __init__(self, s: Session, run: Run, write: Callable[[list[E]], Mapping[str, Any]],
                 totals: dict[str, Any], progress: Callable[[int, int], None] | None = None):
        self.s, self.run, self._write, self.progress = s, run, write, progress
        self.totals = dict(totals)
        self.unknown: set[str] = set()  # counters no longer known (`make_unknown`)
        self.pending: list[E] = []
        self.ended: dict[str, Any] = {}  # status and finished_at, once the run ends
        self.done = 0  # items finished, for `progress`
        self.last_commit = time.monotonic()

    def count(self, **amounts: Any) -> None:
        """Add to the counters what does not wait for storage (the tokens and cost of a request
        sent); a None amount adds nothing (a counter starting at None stays None until then),
        nor does any amount to a counter made `unknown`."""
        for name, value in amounts.items():
            if value is not None and name not in self.unknown:
                self.totals[name] = (self.totals[name] or 0) + value

    def make_unknown(self, name: str) -> None:
        """The counter `name` is unknown from now on (None): a part of it was not measured,
        e.g. the cost of a request whose price the table does not hold."""
        self.unknown.add(name)
        self.totals[name] = None

    def add(self, entry: E, *, item: bool = True) -> None:
        """Queue `entry` for the next commit, made now if one is due; `item`: the entry
        finishes one of the run's items (counted for `progress`)."""
        self.pending.append(entry)
        self.done += item
        if time.monotonic() - self.last_commit >= self.COMMIT_EVERY:
            self.commit()
        if item and self.progress:
            self.progress(self.done, self.run.n_items)

    def flush(self) -> None:
        """Commit what finished, if anything did (also while nothing else finishes: a slow
        last request must not hold earlier results uncommitted)."""
        if self.pending:
            self.commit()
        else:  # nothing unsaved as of now: no commit is due for another COMMIT_EVERY
            self.last_commit = time.monotonic()

    async def flushing(self, work: Awaitable) -> None:
        """Await `work` while `flush` runs every `COMMIT_EVERY` seconds."""
        await periodically(self.flush, self.COMMIT_EVERY, work)

    def commit(self) -> None:
        group, self.pending = self.pending, []
        if not self._try(group):
            for one in group:
                self._try([one])
            self._save({})
        self.last_commit = time.monotonic()

    @contextlib.contextmanager
    def ending(self) -> Iterator[None]:
        """The run ends "finished" when the block completes, else "interrupted" (Ctrl-C,
        SIGTERM, a page's rerun, an error), with what finished committed either way."""
        status = INTERRUPTED
        try:
            yield
            status = FINISHED
        finally:
            self.ended = {"status": status, "finished_at": utcnow()}
            self.commit()

    def _try(self, group: list[E]) -> bool:
        """Write and commit `group`; on a unique-key clash, roll back and report False."""
        try:
            self._save(self._write(group) if group else {})
            return True
        except IntegrityError:
            self.s.rollback()
            return False

    def _save(self, added: Mapping[str, Any]) -> None:
        """Commit the session with the counters plus `added` (and how it ended) set on the run;
        they count from then on (not if the commit fails: a rollback resets the run's fields)."""
        totals = dict(self.totals)
        for name, value in added.items():
            totals[name] = (totals[name] or 0) + value
        for name, value in {**totals, **self.ended}.items():
            setattr(self.run, name, value)
        self.s.add(self.run)
        self.s.commit()
        self.totals = totals
