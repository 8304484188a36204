"""Rubrics as data: schema, bundled rubrics, validation of scores, rendering.

    from rubric import load_rubric
    from rubric.scoring import validate_score
    r = load_rubric("neurology-v1")
    r.content_hash, r.applicable_criteria("lesion"), validate_score(r, score, family="lesion")

Rendering for the rater's form and the LLM grader lives in `rubric.render`.
"""

from rubric.loader import DEFAULT_RUBRIC, bundled_rubrics, load_rubric, loads_rubric
from rubric.schema import (
    CommentRule,
    Confidence,
    CorrectDiagnosis,
    Criterion,
    ErrorClass,
    Family,
    Level,
    Overall,
    Rubric,
    Scale,
    canonical_json,
)

__all__ = [
    "DEFAULT_RUBRIC",
    "CommentRule",
    "Confidence",
    "CorrectDiagnosis",
    "Criterion",
    "ErrorClass",
    "Family",
    "Level",
    "Overall",
    "Rubric",
    "Scale",
    "bundled_rubrics",
    "canonical_json",
    "load_rubric",
    "loads_rubric",
]
