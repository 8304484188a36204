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


def count_query(table, *where):
    """SELECT count(*) FROM table WHERE ..."""
    return select(func.count()).select_from(table).where(*where)


COUNTS = {
    "cases": count_query(Case),
    "series": count_query(Series),
    "tasks": count_query(Task),
    "responses": count_query(Response),
    "users": count_query(User),
    "expert_scores": count_query(ExpertScore, ExpertScore.status == "submitted"),  # drafts not counted
    "grader_scores": count_query(GraderScore),
    "grader_failures": count_query(GraderFailure),
    "exam_attempts": count_query(ExamAttempt),
}


def counts(s: Session) -> dict[str, int]:
    return {name: s.exec(query).one() for name, query in COUNTS.items()}
