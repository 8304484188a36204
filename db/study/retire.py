"""Retire and restore: take a case, task, response, model, grader run or collection run out of
the study's future, with a reason, and bring it back.

A retired item leaves what is still to happen: exams not yet begun (`db.study.exams`), rater
queues' unscored assignments and new assignments (`db.raters`), grading (`grading.grader`),
collection (`collection.collect`) and the results' tables (`results.results`, which list what
is retired and why). Nothing recorded is deleted: scores, grades and answers on a retired item
stay in the database and in exports, marked in their column `retired`.

What each kind takes out: a case, its tasks and their responses; a task, its responses; a
model, all its responses; a collection run, the responses it collected; a grader run, the
grades it wrote (its responses stay). Every retire and restore is one row of `Retirement` and
one audit entry, in the caller's transaction.
"""

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import get_args

from sqlalchemy import or_
from sqlmodel import Session, select

from db.audit import record
from db.locks import take_turns
from db.models import (
    Case,
    CollectedResponse,
    CollectionRun,
    GraderRun,
    GraderScore,
    Response,
    RetiredKind,
    Retirement,
    Task,
    utcnow,
)
from db.text_limits import check_length
from errors import UserError, one_line

KINDS: tuple[str, ...] = get_args(RetiredKind)
REASON = 2000  # characters a reason may have
RETIRING = "study.retire"  # retiring and restoring take turns on it (db.locks)


@dataclass(frozen=True)
class Retired:
    """One item in force as retired, as lists and the results show it."""

    kind: str
    item_id: str
    reason: str
    actor: str | None
    at: datetime

    def text(self) -> str:
        return f"{self.kind} {self.item_id}: {self.reason} ({self.actor or 'unknown'}, " \
               f"{self.at:%Y-%m-%d})"


def _check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise UserError(f"kind {one_line(kind, 40)!r} is not one of {', '.join(KINDS)}")


def _check_reason(reason: str) -> str:
    reason = reason.strip()
    if not reason:
        raise UserError("--reason is empty: say why (it is shown with the results)")
    check_length("the reason", reason, REASON)
    return reason


def _exists(s: Session, kind: str, item_id: str) -> bool:
    if kind in ("grader-run", "collection-run"):
        if not item_id.isdigit() or len(item_id) > 10:
            return False
        table = GraderRun if kind == "grader-run" else CollectionRun
        return s.get(table, int(item_id)) is not None
    if kind == "model":
        return s.exec(select(Response.response_id).where(Response.model == item_id)).first() \
            is not None or s.exec(select(CollectionRun.id)
                                  .where(CollectionRun.model == item_id)).first() is not None
    table = {"case": Case, "task": Task, "response": Response}[kind]
    return s.get(table, item_id) is not None


def _in_force(s: Session, kind: str, item_id: str) -> Retirement | None:
    return s.exec(select(Retirement).where(Retirement.kind == kind,
                                           Retirement.item_id == item_id,
                                           Retirement.undone_at.is_(None))).first()


def retire(s: Session, *, kind: str, item_id: str, reason: str,
           actor: str | None = None) -> Retirement:
    """Retire the item (not committed). UserError, with nothing written, for an unknown kind
    or item, an empty reason, or an item retired already."""
    _check_kind(kind)
    reason = _check_reason(reason)
    take_turns(s, RETIRING)
    if not _exists(s, kind, item_id):
        raise UserError(f"no {kind} {one_line(item_id, 80)!r} in this study")
    if (done := _in_force(s, kind, item_id)) is not None:
        raise UserError(f"{kind} {item_id!r} is retired already ({done.reason}); "
                        "nmb unretire first to give another reason")
    row = Retirement(kind=kind, item_id=item_id, reason=reason, actor=actor)
    s.add(row)
    s.flush()
    record(s, "retire", actor=actor, kind=kind, item=item_id, reason=reason, retirement=row.id)
    return row


def unretire(s: Session, *, kind: str, item_id: str, reason: str,
             actor: str | None = None) -> Retirement:
    """Restore a retired item (not committed): its retirement row is kept, marked undone.
    UserError, with nothing written, when it is not retired."""
    _check_kind(kind)
    reason = _check_reason(reason)
    take_turns(s, RETIRING)
    row = _in_force(s, kind, item_id)
    if row is None:
        raise UserError(f"{kind} {one_line(item_id, 80)!r} is not retired")
    row.undone_at, row.undone_by, row.undo_reason = utcnow(), actor, reason
    s.add(row)
    record(s, "unretire", actor=actor, kind=kind, item=item_id, reason=reason, retirement=row.id)
    return row


def retired(s: Session, *, as_of: datetime | None = None) -> list[Retired]:
    """Every item retired now (or at the time `as_of`), oldest first."""
    query = select(Retirement).order_by(Retirement.at, Retirement.id)
    if as_of is None:
        query = query.where(Retirement.undone_at.is_(None))
    else:
        query = query.where(Retirement.at <= as_of, or_(Retirement.undone_at.is_(None),
                                                         Retirement.undone_at > as_of))
    rows = s.exec(query)
    return [Retired(r.kind, r.item_id, r.reason, r.actor, r.at) for r in rows]


def history(s: Session) -> list[Retirement]:
    """Every retirement ever recorded, restored ones too, newest first."""
    return list(s.exec(select(Retirement).order_by(Retirement.id.desc())))


def _ids(items: Iterable[Retired], kind: str) -> set[str]:
    return {r.item_id for r in items if r.kind == kind}


@dataclass(frozen=True)
class Out:
    """What the retired items take out, as sets of ids, for the places that leave them out."""

    tasks: frozenset[str]  # retired tasks and the tasks of retired cases
    responses: frozenset[str]  # every response taken out (by any kind)
    models: frozenset[str]
    grader_runs: frozenset[int]

    def __bool__(self) -> bool:
        return bool(self.tasks or self.responses or self.models or self.grader_runs)


def taken_out(s: Session, items: list[Retired] | None = None) -> Out:
    """The tasks, responses, models and grader runs the retired `items` (default: all in
    force) take out."""
    items = retired(s) if items is None else items
    if not items:
        return Out(frozenset(), frozenset(), frozenset(), frozenset())
    cases, models = _ids(items, "case"), _ids(items, "model")
    tasks = _ids(items, "task")
    if cases:
        tasks |= set(s.exec(select(Task.task_id).where(Task.case_id.in_(cases))))
    responses = _ids(items, "response")
    if tasks:
        responses |= set(s.exec(select(Response.response_id).where(Response.task_id.in_(tasks))))
    if models:
        responses |= set(s.exec(select(Response.response_id).where(Response.model.in_(models))))
    if runs := {int(i) for i in _ids(items, "collection-run")}:
        responses |= set(s.exec(select(CollectedResponse.response_id)
                                .where(CollectedResponse.run_id.in_(runs))))
    return Out(frozenset(tasks), frozenset(responses), frozenset(models),
               frozenset(int(i) for i in _ids(items, "grader-run")))


def retired_grades(s: Session, out: Out) -> set[int]:
    """The ids of the grader scores written by retired grader runs."""
    if not out.grader_runs:
        return set()
    return set(s.exec(select(GraderScore.id).where(GraderScore.run_id.in_(out.grader_runs))))


def check_task_ids(s: Session, task_ids: Iterable[str], what: str) -> None:
    """UserError naming the first retired task among `task_ids` (chosen by hand for `what`)."""
    tasks = taken_out(s).tasks
    if first := next((t for t in task_ids if t in tasks), None):
        raise UserError(f"{what}: task {first!r} is retired (nmb unretire, or leave it out)")


def check_model(s: Session, model: str) -> None:
    """UserError when the model is retired: nothing is collected for it."""
    if (row := _in_force(s, "model", model)) is not None:
        raise UserError(f"model {model!r} is retired ({row.reason}): nothing is collected for "
                        "it (nmb unretire model first)")
