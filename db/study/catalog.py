"""The admin's case browser: every case, task and response as a row, and a text search.

Admins see everything here, model names and exam takers included; nothing else calls these
functions (raters get `db.raters.scoring`'s blinded items). A response row carries an excerpt of its
text, not the whole text, so a study with thousands of responses stays a light table.
"""

from collections.abc import Sequence
from dataclasses import astuple, dataclass
from typing import TypeVar

from sqlalchemy import func
from sqlmodel import Session, col, select

from db.models import Case, Response, ResponseFlag, Series, Task, User
from db.study.reference import has_reference

EXCERPT_CHARS = 160


@dataclass(frozen=True)
class CaseRow:
    case_id: str
    title: str
    bundle: str
    series: int
    tasks: int
    responses: int
    answer: bool = True  # has a reference answer (db.study.reference)


@dataclass(frozen=True)
class TaskRow:
    task_id: str
    case_id: str
    family: str
    level: int
    stages: int
    responses: int
    prompt: str


@dataclass(frozen=True)
class ResponseRow:
    response_id: str
    blind_code: str
    task_id: str
    case_id: str
    source: str  # "model", "physician" or "student"
    author: str  # the model, or the person's account name
    sample: int
    held: bool  # names a model and waits for an admin's review (db.raters.response_flags)
    excerpt: str


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """`text` on one line, cut to `limit` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit - 1] + "…"


def _per(s: Session, key, query=None) -> dict[str, int]:
    """Row counts grouped by `key` (of `query`'s rows, or of `key`'s table)."""
    query = select(key, func.count()) if query is None else query
    return dict(s.exec(query.group_by(key)).all())


def case_rows(s: Session) -> list[CaseRow]:
    """Every case with its bundle, its numbers of series, tasks and responses, and whether it
    has a reference answer."""
    series = _per(s, Series.case_id)
    tasks = _per(s, Task.case_id)
    responses = _per(s, Task.case_id, select(Task.case_id, func.count())
                     .join(Response, col(Response.task_id) == Task.task_id))
    return [CaseRow(c.case_id, c.title, c.bundle, series.get(c.case_id, 0),
                    tasks.get(c.case_id, 0), responses.get(c.case_id, 0),
                    has_reference(c.ground_truth))
            for c in s.exec(select(Case).order_by(Case.case_id))]


def task_rows(s: Session) -> list[TaskRow]:
    """Every task with its number of stages and of responses."""
    responses = _per(s, Response.task_id)
    return [TaskRow(t.task_id, t.case_id, t.family, t.level, len(t.stages or []),
                    responses.get(t.task_id, 0), excerpt(t.prompt))
            for t in s.exec(select(Task).order_by(Task.case_id, Task.task_id))]


def response_rows(s: Session) -> list[ResponseRow]:
    """Every response with its author (model or account) and whether it is held for review."""
    rows = s.exec(
        select(Response, Task.case_id, User.name, ResponseFlag.response_id)
        .join(Task, col(Task.task_id) == Response.task_id)
        .outerjoin(User, col(User.id) == Response.user_id)
        .outerjoin(ResponseFlag, (col(ResponseFlag.response_id) == Response.response_id)
                   & col(ResponseFlag.reviewed_at).is_(None))
        .order_by(Task.case_id, Response.task_id, Response.source, Response.model,
                  User.name, Response.sample))
    return [ResponseRow(r.response_id, r.blind_code, r.task_id, case_id, r.source,
                        r.model or person or "", r.sample, held is not None, excerpt(r.text))
            for r, case_id, person, held in rows]


@dataclass(frozen=True)
class ResponseDetail:
    """One response in full, with its task: what `ui.response_view` shows."""

    family: str
    level: int
    prompt: str
    stages: list[str]
    answers: list[str]  # the text, then one turn per later stage


def response_detail(s: Session, *, response_id: str) -> ResponseDetail:
    r, task = s.exec(select(Response, Task).join(Task, col(Task.task_id) == Response.task_id)
                     .where(Response.response_id == response_id)).one()
    return ResponseDetail(task.family, task.level, task.prompt, list(task.stages or []),
                          [r.text, *(r.turns or [])])


Row = TypeVar("Row", CaseRow, TaskRow, ResponseRow)


def search(rows: Sequence[Row], query: str) -> list[Row]:
    """The rows holding every word of `query` in some field (case-insensitive); all rows for
    a blank query. Fields are matched as shown, so "c1" also finds "c10"."""
    words = query.casefold().split()
    return [r for r in rows
            if all(w in " ".join(map(str, astuple(r))).casefold() for w in words)]
