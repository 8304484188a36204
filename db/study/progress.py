"""How far each rater and exam taker is, and an estimate of the time left (the admin's view:
counts and times only, never what anyone wrote or scored).

A rater's items are their assignments, done when submitted; the time per item is their active
scoring time (`ExpertScore.active_seconds`) over the items submitted. An exam taker's items are
the tasks of the exam, done when every stage is answered; the time per task is the time they
took over their recorded stage answers (`StageAnswer.seconds`) over the tasks answered. The time
left is the items left times the person's own time per item (none before their first item is
done): a plain extrapolation, as a reader study's coordinator makes it.

Practice items (db.study.practice) are counted apart (`practice_done` of `practice_total`):
they are not in done, total, the time per item (learning the tool is slower) nor the time left.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import func
from sqlmodel import Session, select

from db.models import Assignment, Exam, ExamAttempt, ExpertScore, Response, StageAnswer, Task, User
from db.study.exams import exam_list


@dataclass(frozen=True)
class Progress:
    """One person's progress: `what` is "scoring" or the exam's name."""

    person: str
    role: str
    what: str
    done: int
    total: int
    seconds_per_item: float | None  # None: nothing done yet
    practice_done: int = 0  # practice items, apart from the above
    practice_total: int = 0

    @property
    def minutes_left(self) -> float | None:
        """The estimate of the time left, in minutes (0 when done; None: no time per item)."""
        if self.done >= self.total:
            return 0.0
        if self.seconds_per_item is None:
            return None
        return round((self.total - self.done) * self.seconds_per_item / 60, 1)


def _rater_rows(s: Session) -> dict[tuple[str, bool], tuple[int, int, float]]:
    """{(rater, practice): (assigned, submitted, active seconds)}."""
    rows = s.exec(
        select(User.name, Task.practice, func.count(Assignment.id),
               func.count(ExpertScore.submitted_at),
               func.coalesce(func.sum(ExpertScore.active_seconds), 0.0))
        .join(Assignment, Assignment.rater_id == User.id)
        .join(Response, Response.response_id == Assignment.response_id)
        .join(Task, Task.task_id == Response.task_id)
        .join(ExpertScore, ExpertScore.assignment_id == Assignment.id, isouter=True)
        .group_by(User.name, Task.practice))
    return {(name, bool(practice)): (n, sub, float(secs))
            for name, practice, n, sub, secs in rows}


def people_progress(s: Session) -> list[Progress]:
    """Every rater's scoring, then every exam taker's attempt (exams and takers by name)."""
    rows = _rater_rows(s)
    out = []
    for rater in sorted({name for name, _ in rows}):
        n, sub, secs = rows.get((rater, False), (0, 0, 0.0))
        pn, psub, _ = rows.get((rater, True), (0, 0, 0.0))
        out.append(Progress(rater, "expert", "scoring", sub, n, secs / sub if sub else None,
                            psub, pn))
    times = {(exam, name): float(secs) for exam, name, secs in s.exec(
        select(Exam.name, User.name, func.sum(StageAnswer.seconds))
        .join(ExamAttempt, ExamAttempt.exam_id == Exam.id)
        .join(User, User.id == ExamAttempt.user_id)
        .join(StageAnswer, StageAnswer.attempt_id == ExamAttempt.id)
        .join(Task, Task.task_id == StageAnswer.task_id)
        .where(Task.practice.is_(False))
        .group_by(Exam.name, User.name))}
    for exam in exam_list(s):
        for t in exam.takers:
            total = t.total - t.elsewhere - t.practice  # counted tasks asked of this taker here
            done = t.answered - t.practice_answered
            spent = times.get((exam.name, t.name))
            out.append(Progress(t.name, t.role, exam.name, done, total,
                                spent / done if done and spent else None,
                                t.practice_answered, t.practice))
    return out
