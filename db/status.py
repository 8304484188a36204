"""Counts of what the study holds (`nmb status --json`)."""

from sqlalchemy import func
from sqlmodel import Session, select

from db.models import (
    Case,
    ExamAttempt,
    ExpertScore,
    GraderFailure,
    GraderScore,
    Response,
    Series,
    Task,
    User,
)


def _count(table, *where):
    return select(func.count()).select_from(table).where(*where)


COUNTS = {
    "cases": _count(Case),
    "series": _count(Series),
    "tasks": _count(Task),
    "responses": _count(Response),
    "users": _count(User),
    "expert_scores": _count(ExpertScore, ExpertScore.status == "submitted"),  # drafts not counted
    "grader_scores": _count(GraderScore),
    "grader_failures": _count(GraderFailure),
    "exam_attempts": _count(ExamAttempt),
}


def counts(s: Session) -> dict[str, int]:
    return {name: s.exec(query).one() for name, query in COUNTS.items()}
