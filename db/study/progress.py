"""How far each rater and exam taker is, and an estimate of the time left (the admin's view:
counts and times only, never what anyone wrote or scored).

A rater's items are their assignments, done when submitted; the time per item is their active
scoring time (`ExpertScore.active_seconds`) over the items submitted. An exam taker's items are
the tasks of the exam, done when every stage is answered; the time per task is the time they
took over their recorded stage answers (`StageAnswer.seconds`) over the tasks answered. The time
left is the items left times the person's own time per item (none before their first item is
done): a plain extrapolation, as a reader study's coordinator makes it.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import func
from sqlmodel import Session, select

from db.models import Exam, ExamAttempt, StageAnswer, User
from db.raters.assignments import rater_progress
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

    @property
    def minutes_left(self) -> float | None:
        """The estimate of the time left, in minutes (0 when done; None: no time per item)."""
        if self.done >= self.total:
            return 0.0
        if self.seconds_per_item is None:
            return None
        return round((self.total - self.done) * self.seconds_per_item / 60, 1)


def people_progress(s: Session) -> list[Progress]:
    """Every rater's scoring, then every exam taker's attempt (exams and takers by name)."""
    out = [Progress(p.rater, "expert", "scoring", p.submitted, p.assigned,
                    p.active_minutes * 60 / p.submitted if p.submitted else None)
           for p in rater_progress(s)]
    times = {(exam, name): float(secs) for exam, name, secs in s.exec(
        select(Exam.name, User.name, func.sum(StageAnswer.seconds))
        .join(ExamAttempt, ExamAttempt.exam_id == Exam.id)
        .join(User, User.id == ExamAttempt.user_id)
        .join(StageAnswer, StageAnswer.attempt_id == ExamAttempt.id)
        .group_by(Exam.name, User.name))}
    for exam in exam_list(s):
        for t in exam.takers:
            total = t.total - t.elsewhere  # tasks asked of this taker here
            spent = times.get((exam.name, t.name))
            out.append(Progress(t.name, t.role, exam.name, t.answered, total,
                                spent / t.answered if t.answered and spent else None))
    return out
