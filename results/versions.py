"""The results of a benchmark version (db.study.versions): its tasks as they were when it was
tagged, so a later revision of a task's family, level or stages does not move what the
version's tables stand on."""

from dataclasses import replace
from datetime import datetime

from sqlmodel import Session

from db.study.revisions import tasks_at
from results.judgments import Judged, Judgment, marks


def as_tagged(s: Session, data, at: datetime):
    """`data` (results.results.StudyData) with each task revised after `at` as it was at `at`."""
    old = tasks_at(s, data.tasks, at)
    if not old:
        return data

    def retask(j: Judgment | None) -> Judgment | None:
        t = old.get(j.task_id) if j else None
        return j if t is None else replace(j, family=t.family, level=t.level,
                                           disconfirming=marks(t))

    data.tasks = [old.get(t.task_id, t) for t in data.tasks]
    data.judged = [Judged(retask(j.grader), retask(j.experts), j.expert_tie) for j in data.judged]
    data.answers = [replace(a, task=old.get(a.task.task_id, a.task)) for a in data.answers]
    return data


