"""Versions of the benchmark: `nmb version tag NAME` records the tasks active now (not retired,
not practice: db.study.practice),
each at the revision in force (db.study.revisions); the results, the leaderboard and the site
can then be produced per version (`--version NAME`), as the published leaderboard's 1.0 and 2.0.
A version is never changed; a later tag is a new version."""

import re

from sqlmodel import Session, select

from db.audit import record
from db.locks import take_turns
from db.models import BenchmarkVersion, Task
from db.study.practice import not_counted
from db.text_limits import check_length
from errors import UserError, one_line

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
NOTE = 2000  # characters a note may have


def tag(s: Session, *, name: str, note: str = "", actor: str | None = None) -> BenchmarkVersion:
    """Record version `name` (not committed): the study's active tasks now. UserError, with
    nothing written, for a malformed or taken name, or a study without active tasks."""
    if not NAME.fullmatch(name):
        raise UserError(f"version name {one_line(name, 70)!r}: letters, digits, '.', '_' and '-' "
                        "only, up to 64, starting with a letter or digit (e.g. 1.0)")
    check_length("the note", note, NOTE)
    take_turns(s, "study.version")
    if s.exec(select(BenchmarkVersion).where(BenchmarkVersion.name == name)).first():
        raise UserError(f"version {name} exists already; a version is never changed: tag "
                        "another name")
    out = not_counted(s).tasks
    tasks = sorted(t for t in s.exec(select(Task.task_id)) if t not in out)
    if not tasks:
        raise UserError("the study has no active task to tag")
    row = BenchmarkVersion(name=name, note=note.strip(), task_ids=tasks, actor=actor)
    s.add(row)
    s.flush()
    record(s, "version.tag", actor=actor, version=name, tasks=len(tasks))
    return row


def versions(s: Session) -> list[BenchmarkVersion]:
    """Every version, oldest first."""
    return list(s.exec(select(BenchmarkVersion).order_by(BenchmarkVersion.at,
                                                         BenchmarkVersion.id)))


def get_version(s: Session, name: str) -> BenchmarkVersion:
    """The version named `name`; UserError naming the versions there are otherwise."""
    row = s.exec(select(BenchmarkVersion).where(BenchmarkVersion.name == name)).first()
    if row is None:
        there = ", ".join(v.name for v in versions(s)) or "none yet: nmb version tag NAME"
        raise UserError(f"no benchmark version {one_line(name, 70)!r} (versions: {there})")
    return row
