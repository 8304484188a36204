"""Reference answers (a case's `ground_truth`): whether a case has one, which tasks lack one,
which scores used one, and what a judgment of a response is made against (`judged_against`).

A case may be imported without its reference answer (a published release keeps the answers
apart). Such a task can be sent to models and put in exams; grading it and scoring it by
experts need the answer, so those refuse with one line naming the tasks (`require_reference`).
"""

import hashlib
import json
from collections.abc import Iterable
from types import SimpleNamespace
from typing import Any

from sqlalchemy import func
from sqlmodel import Session, select

from db.models import Assignment, Case, ExpertScore, GraderScore, Response, Task
from db.queries import IN_CHUNK, chunks, fetch_in
from errors import UserError

# a response's text and turns, its case's answer, and a digest of the rest of its case record and
# task (`content_digest`: what a revision may change, db.study.revisions)
Against = tuple[str, list | None, dict | None, str]
HINT = "import the answers with nmb import FILE... --from neural-medbench --answers ANSWERS.json"
_SHOWN = 5  # task ids named in the message


def has_reference(ground_truth: Any) -> bool:
    """True when `ground_truth` holds a reference answer (a final diagnosis)."""
    return isinstance(ground_truth, dict) and bool(ground_truth.get("final_diagnosis"))


def missing_message(task_ids: list[str]) -> str:
    """One line naming the tasks without a reference answer (the first few, then a count)."""
    n = len(task_ids)
    shown = ", ".join(task_ids[:_SHOWN]) + (f", ... and {n - _SHOWN} more" if n > _SHOWN else "")
    verb = "task has" if n == 1 else "tasks have"
    return f"{n} {verb} no reference answer: {shown} ({HINT})"


def unanswered_tasks(s: Session, task_ids: Iterable[str]) -> list[str]:
    """The tasks among `task_ids` whose case has no reference answer, sorted."""
    tasks = list(fetch_in(s, Task.task_id, set(task_ids), Task.task_id, Task.case_id))
    answered = {c.case_id for c in fetch_in(s, Case.case_id, {cid for _, cid in tasks})
                if has_reference(c.ground_truth)}
    return sorted(tid for tid, cid in tasks if cid not in answered)


def require_reference(s: Session, *, task_ids: Iterable[str]) -> None:
    """Raise UserError when a task among `task_ids` has no reference answer."""
    if missing := unanswered_tasks(s, task_ids):
        raise UserError(missing_message(missing))


#: The fields of a case record and a task that `content_digest` covers: what a revision may
#: change (db.study.revisions.REVISABLE) but the reference answer, which `Against` holds apart.
CASE_FIELDS = ("title", "ehr", "scores", "key_slices", "patient")
TASK_FIELDS = ("family", "level", "prompt", "stages", "disconfirming", "show_masks")


def content_digest(case: Any, task: Any) -> str:
    """A digest of what a revision may change of a response's case record and task, but the
    reference answer: a judgment built on other content is stale. `case` and `task`: rows, or
    anything with their fields as attributes."""
    content = {"case": {f: getattr(case, f) for f in CASE_FIELDS},
               "task": {f: getattr(task, f) for f in TASK_FIELDS}}
    return hashlib.sha256(json.dumps(content, sort_keys=True, default=str).encode()).hexdigest()


def judged_against(s: Session, response_ids: list[str]) -> dict[str, Against]:
    """{response id: its text, turns, case's reference answer and `content_digest`}, what a
    grade or an expert score of it is made against, read with the responses', cases' and
    tasks' rows share-locked until the commit: a review, an import or a revision changing them
    waits for the judgment's write, or came first (and the judgment sees the change). Columns,
    not rows: a row the session holds already would be returned as it was first read."""
    case_cols = [getattr(Case, f) for f in CASE_FIELDS]
    task_cols = [getattr(Task, f) for f in TASK_FIELDS]
    rows = s.exec(select(Response.response_id, Response.text, Response.turns, Case.ground_truth,
                         *case_cols, *task_cols)
                  .join(Task, Task.task_id == Response.task_id)
                  .join(Case, Case.case_id == Task.case_id)
                  .where(Response.response_id.in_(response_ids))
                  .with_for_update(read=True, of=(Response, Case, Task))).all()
    out = {}
    for rid, text, turns, truth, *rest in rows:
        case = SimpleNamespace(**dict(zip(CASE_FIELDS, rest[:len(CASE_FIELDS)], strict=True)))
        task = SimpleNamespace(**dict(zip(TASK_FIELDS, rest[len(CASE_FIELDS):], strict=True)))
        out[rid] = (text, turns, truth, content_digest(case, task))
    return out


def require_reference_for_responses(s: Session, *, response_ids: Iterable[str]) -> None:
    """`require_reference` for the tasks of these responses."""
    tasks = set(fetch_in(s, Response.response_id, set(response_ids), Response.task_id))
    require_reference(s, task_ids=tasks)


def scores_using(s: Session, case_ids: Iterable[str]) -> dict[str, int]:
    """Per case among `case_ids`, how many scores (expert scores, drafts included: the rater saw
    the answer, and grader scores) were given with its reference answer in view."""
    ids = sorted(set(case_ids))
    out: dict[str, int] = {}
    expert = (select(Task.case_id, func.count(ExpertScore.id))
              .join(Response, Response.task_id == Task.task_id)
              .join(Assignment, Assignment.response_id == Response.response_id)
              .join(ExpertScore, ExpertScore.assignment_id == Assignment.id))
    grader = (select(Task.case_id, func.count(GraderScore.id))
              .join(Response, Response.task_id == Task.task_id)
              .join(GraderScore, GraderScore.response_id == Response.response_id))
    for query in (expert, grader):
        for chunk in chunks(ids, IN_CHUNK):
            for cid, n in s.exec(query.where(Task.case_id.in_(chunk)).group_by(Task.case_id)):
                out[cid] = out.get(cid, 0) + n
    return out
