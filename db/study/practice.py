"""Practice items: a task the bundle flags `"practice": true`, on which raters and exam takers
learn the tool before their real queue. It comes first in a rater's queue
(`db.raters.scoring.queue`) and in an exam (`db.study.exams.offered_task_ids`), labelled
`LABEL`, and is scored, graded and answered as any other item; it is never counted.

`not_counted` is what every counting path leaves out: what the retired items take out
(`db.study.retire.taken_out`) and the practice tasks with their responses. The results (every
table, the leaderboard and the site: `results.results.load`), benchmark versions, the
calibration subset and its reports, the agreement export and /admin's progress read it; row
exports keep practice rows, marked in their column `practice` (as `retired` and `stale` are
marked), and `results.recompute` leaves them out. `nmb collect` does not send a practice task
to models unless it is named with `--tasks` (a model's answer to it would count nowhere).

Whether a task is practice is fixed at import: `nmb import --revise` refuses to change it
(db.study.revisions.REVISABLE), since turning a scored practice item into a counted one (or
back) would move judgments made while learning the tool into the results (or out of them);
retire the task instead, and import a new one.
"""

from collections.abc import Iterable
from dataclasses import replace

from sqlmodel import Session, select

from db.models import Response, Task
from db.queries import fetch_in
from db.study.retire import Out, Retired, taken_out

LABEL = "Practice (not counted)"  # how /score and /exam name a practice item


def practice_tasks(s: Session) -> frozenset[str]:
    """The ids of the practice tasks."""
    return frozenset(s.exec(select(Task.task_id).where(Task.practice.is_(True))))


def practice_responses(s: Session, tasks: Iterable[str] | None = None) -> frozenset[str]:
    """The ids of the responses to the practice tasks (`tasks`: those ids, read once)."""
    tasks = practice_tasks(s) if tasks is None else tasks
    return frozenset(fetch_in(s, Response.task_id, set(tasks), Response.response_id))


def not_counted(s: Session, items: list[Retired] | None = None) -> Out:
    """What no count includes: what the retired `items` (default: all in force) take out, and
    the practice tasks with their responses."""
    out = taken_out(s, items)
    tasks = practice_tasks(s)
    if not tasks:
        return out
    return replace(out, tasks=out.tasks | tasks,
                   responses=out.responses | practice_responses(s, tasks))
