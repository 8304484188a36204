"""Revisions: a corrected case record or task, imported with `--revise`, replaces the study's
row and keeps what it replaced; what was made against the earlier content is stale.

A revision is a row of `Revision` (the fields changed, their old and new values), written in
the import's transaction with an audit entry. What counts at a moment T (now, or the moment a
benchmark version was tagged, `db.study.versions`) is what was made against the content in force
at T:
- a response (a model's, or an exam answer) counts when it was made after the last revision
  before T that changed what it was shown (`SHOWN`), and before the next one;
- a grade or an expert score counts when its response counts and it was made after the last
  revision of any field before T (a new reference answer changes what it is judged against),
  and before the next one.
Everything else is stale: kept, exported, and counted apart by the results. `nmb grade
--items stale` grades the stale grades' responses again.
"""

import bisect
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import func
from sqlmodel import Session, select

from db.audit import record
from db.models import Assignment, Case, ExpertScore, GraderScore, Response, Revision, Task, utcnow
from db.queries import IN_CHUNK, chunks
from db.study.reference import CASE_FIELDS, TASK_FIELDS
from errors import counted, one_line

#: The fields of a case record and a task that a model or an exam taker is shown; a revision
#: of another field (the reference answer, the family, the level, ...) changes only how answers
#: are judged.
SHOWN = {"case": frozenset({"title", "ehr", "scores", "key_slices"}),
         "task": frozenset({"prompt", "stages"})}
#: The fields a revision may change (images are content-addressed: a case with other images
#: is retired and imported under a new id).
REVISABLE = {"case": frozenset({*CASE_FIELDS, "ground_truth"}), "task": frozenset(TASK_FIELDS)}
_SHOWN_CHARS = 60  # of each value in a field-by-field difference


@dataclass(frozen=True)
class Change:
    """One item's revision, planned: the fields that differ, their old and new values."""

    kind: str
    item_id: str
    old: dict[str, Any]
    new: dict[str, Any]

    @property
    def fields(self) -> list[str]:
        return sorted(self.new)

    @property
    def shown(self) -> bool:
        return bool(SHOWN[self.kind] & set(self.new))

    def lines(self) -> list[str]:
        """Field by field: `case c1 ehr: 'old...' -> 'new...'`, each value on one short line."""
        def text(v: Any) -> str:
            return one_line(repr(v), _SHOWN_CHARS)
        return [f"{self.kind} {self.item_id} {f}: {text(self.old.get(f))} -> {text(self.new[f])}"
                for f in self.fields]


def write(s: Session, changes: Iterable[Change], *, bundle: str, actor: str | None) -> int:
    """Apply the changes to the study's rows and record each as a `Revision` (numbered after
    the item's last) with an audit entry, in the caller's transaction. Returns how many."""
    changes = list(changes)
    if not changes:
        return 0
    last = dict(((k, i), n) for k, i, n in s.exec(
        select(Revision.kind, Revision.item_id, func.max(Revision.number))
        .where(Revision.item_id.in_({c.item_id for c in changes}))
        .group_by(Revision.kind, Revision.item_id)))
    now = utcnow()
    for c in changes:
        table = Case if c.kind == "case" else Task
        row = s.get(table, c.item_id)
        for f, v in c.new.items():
            setattr(row, f, v)
        s.add(row)
        number = last.get((c.kind, c.item_id), 1) + 1
        s.add(Revision(kind=c.kind, item_id=c.item_id, number=number, fields=c.fields,
                       old=c.old, new=c.new, shown=c.shown, bundle=bundle, actor=actor, at=now))
        record(s, "revise", actor=actor, kind=c.kind, item=c.item_id, revision=number,
               fields=c.fields, bundle=bundle)
    s.flush()
    return len(changes)


@dataclass
class Windows:
    """Per task, the moments its content changed (its own revisions and its case's), for
    judging what counts at the moment `at` (None: now)."""

    at: datetime | None = None
    judged: dict[str, list[datetime]] = field(default_factory=dict)  # any revision
    shown: dict[str, list[datetime]] = field(default_factory=dict)  # revisions of SHOWN fields

    @staticmethod
    def _in(times: list[datetime] | None, when: datetime | None, at: datetime | None) -> bool:
        if not times:
            return True
        if when is None:
            return False
        i = len(times) if at is None else bisect.bisect_right(times, at)
        start = times[i - 1] if i else None
        end = times[i] if i < len(times) else None
        return (start is None or when >= start) and (end is None or when < end)

    def response_counts(self, task_id: str, made: datetime | None) -> bool:
        """Whether a response to the task made at `made` answered the content in force."""
        return self._in(self.shown.get(task_id), made and _aware(made), self.at)

    def judgment_counts(self, task_id: str, made: datetime | None) -> bool:
        """Whether a grade or an expert score of a response to the task, made at `made`, was
        made against the content in force (its response's own standing aside)."""
        return self._in(self.judged.get(task_id), made and _aware(made), self.at)

    def __bool__(self) -> bool:
        return bool(self.judged)


def _aware(t: datetime) -> datetime:
    """SQLite returns naive datetimes for what was stored in UTC."""
    return t if t.tzinfo else t.replace(tzinfo=UTC)


def windows(s: Session, *, at: datetime | None = None) -> Windows:
    """The revision moments of every revised task (directly or through its case)."""
    out = Windows(at=at and _aware(at))
    rows = s.exec(select(Revision.kind, Revision.item_id, Revision.at, Revision.shown)).all()
    if not rows:
        return out
    by_case: dict[str, list[str]] = {}
    case_ids = {i for k, i, _, _ in rows if k == "case"}
    if case_ids:
        for tid, cid in s.exec(select(Task.task_id, Task.case_id)
                               .where(Task.case_id.in_(case_ids))):
            by_case.setdefault(cid, []).append(tid)
    for kind, item, when, shown in rows:
        for tid in (by_case.get(item, []) if kind == "case" else [item]):
            out.judged.setdefault(tid, []).append(_aware(when))
            if shown:
                out.shown.setdefault(tid, []).append(_aware(when))
    for d in (out.judged, out.shown):
        for times in d.values():
            times.sort()
    return out


@dataclass(frozen=True)
class Stale:
    """What was made against other content than the content in force (module docstring):
    responses; grades of the config, and submitted expert scores, of the other responses."""

    responses: frozenset[str] = frozenset()
    grades: frozenset[str] = frozenset()  # the ids of the responses whose grade is stale
    expert_scores: frozenset[int] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.responses or self.grades or self.expert_scores)

    def text(self) -> str:
        """One line for the results' notes."""
        return (f"{counted(len(self.responses), 'response')}, {counted(len(self.grades), 'grade')}"
                f" and {counted(len(self.expert_scores), 'expert score')} were made against an "
                "earlier revision of their case or task (or a later one than the version's): "
                "stale, not counted (nmb grade --items stale grades the stale grades' "
                "responses again)")


def stale(s: Session, w: Windows, *, config_id: int | None = None) -> Stale:
    """What is stale under the windows `w`; grades of `config_id` only (None: no grades)."""
    if not w:
        return Stale()
    made: dict[str, tuple[str, datetime]] = {}  # response id -> task, made at
    for chunk in chunks(sorted(w.judged), IN_CHUNK):
        for rid, tid, at in s.exec(select(Response.response_id, Response.task_id,
                                          Response.created_at).where(Response.task_id.in_(chunk))):
            made[rid] = (tid, at)
    responses = {rid for rid, (tid, at) in made.items() if not w.response_counts(tid, at)}
    fresh = sorted(set(made) - responses)
    grades: set[str] = set()
    scores: set[int] = set()
    for chunk in chunks(fresh, IN_CHUNK):
        if config_id is not None:
            grades |= {rid for rid, at in s.exec(
                select(GraderScore.response_id, GraderScore.created_at)
                .where(GraderScore.config_id == config_id, GraderScore.response_id.in_(chunk)))
                if not w.judgment_counts(made[rid][0], at)}
        scores |= {sid for sid, rid, at in s.exec(
            select(ExpertScore.id, Assignment.response_id, ExpertScore.submitted_at)
            .join(Assignment, Assignment.id == ExpertScore.assignment_id)
            .where(ExpertScore.status == "submitted", Assignment.response_id.in_(chunk)))
            if not w.judgment_counts(made[rid][0], at)}
    return Stale(frozenset(responses), frozenset(grades), frozenset(scores))


def tasks_at(s: Session, tasks: Iterable[Task], at: datetime) -> dict[str, Task]:
    """The tasks among `tasks` revised after `at`, as they were at `at`: copies of their rows
    with the old values of the later revisions put back, newest first."""
    later: dict[str, list[Revision]] = {}
    for r in s.exec(select(Revision).where(Revision.kind == "task", Revision.at > at)
                    .order_by(Revision.number.desc())):
        later.setdefault(r.item_id, []).append(r)
    out = {}
    for task in tasks:
        if task.task_id in later:
            values = task.model_dump()
            for r in later[task.task_id]:
                values.update(r.old)
            out[task.task_id] = Task(**values)
    return out


def history(s: Session, kind: str, item_id: str) -> list[Revision]:
    """The item's revisions, oldest first."""
    return list(s.exec(select(Revision).where(Revision.kind == kind, Revision.item_id == item_id)
                       .order_by(Revision.number)))
