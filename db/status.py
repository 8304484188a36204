"""Counts of what the study holds (`nmb status --json`)."""

from sqlalchemy import func
from sqlmodel import Session, SQLModel, select

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

COUNTED: dict[str, type[SQLModel]] = {
    "cases": Case,
    "series": Series,
    "tasks": Task,
    "responses": Response,
    "users": User,
    "expert_scores": ExpertScore,
    "grader_scores": GraderScore,
    "grader_failures": GraderFailure,
    "exam_attempts": ExamAttempt,
}


def counts(s: Session) -> dict[str, int]:
    out = {
        name: s.exec(select(func.count()).select_from(table)).one()
        for name, table in COUNTED.items()
    }
    out["expert_scores"] = s.exec(
        select(func.count()).select_from(ExpertScore).where(ExpertScore.status == "submitted")
    ).one()
    return out
