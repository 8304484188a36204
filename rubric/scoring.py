"""Validation of submitted scores and the overall formula: the data layer's guard.

A score is a dict:

    {"criteria": {criterion_key: level | None},  # every criterion applicable to the family
     "correct_diagnosis": bool,
     "error_tags": [error_class_key, ...],       # optional, default []
     "comment": str,                              # optional, default ""
     "confidence": int | None}                    # optional, default None

`None` as a level means N/A and is accepted only for criteria with `na_allowed`; keys of
criteria that do not apply to the family may be absent or None (they are dropped). An
"overall" key in the input is ignored and recomputed, so a normalized score validates again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from errors import UserError

if TYPE_CHECKING:
    from rubric.schema import Rubric

SCORE_FIELDS = ("criteria", "correct_diagnosis", "error_tags", "comment", "confidence", "overall")


class MissingFields(UserError):
    """Every field a rater still has to answer, each in the rubric's own words.

    `fields` maps a form field ("criteria.<key>", "correct_diagnosis", "comment",
    "confidence") to its message, in form order, so the form can show each next to its field.
    """

    def __init__(self, fields: dict[str, str]) -> None:
        self.fields = fields
        super().__init__("Still to answer: " + "; ".join(fields.values()))


def missing_fields(
    rubric: Rubric, score: dict[str, Any], *, family: str, require_confidence: bool | None = None
) -> dict[str, str]:
    """The unanswered fields of `score` (see `MissingFields`); wrong values are not checked."""
    out: dict[str, str] = {}
    criteria = score.get("criteria")
    if isinstance(criteria, dict):
        for c in rubric.applicable_criteria(family):
            if c.key not in criteria:
                out[f"criteria.{c.key}"] = f"“{c.name}”: choose a level" + (
                    " or N/A" if c.na_allowed else "")
    if score.get("correct_diagnosis") is None:
        out["correct_diagnosis"] = f"“{rubric.correct_diagnosis.question}”: answer Yes or No"
    tags = score.get("error_tags") or []
    comment = score.get("comment") or ""
    rule = rubric.comment.required_when
    if isinstance(comment, str) and not comment.strip() and (
            rule == "always" or (rule == "any_error_tag" and tags)):
        why = "always required" if rule == "always" else "required when an error class is chosen"
        out["comment"] = f"“{rubric.comment.prompt}”: {why}"
    conf = rubric.confidence
    required = conf.required if require_confidence is None else require_confidence
    if score.get("confidence") is None and required:
        out["confidence"] = f"“{conf.question}”: choose {conf.min}-{conf.max}"
    return out


def check_criteria(
    rubric: Rubric, criteria: Any, family: str
) -> dict[str, int | None]:
    """Levels of the criteria applicable to `family`, in rubric order; UserError otherwise."""
    applicable = rubric.applicable_criteria(family)
    if not isinstance(criteria, dict):
        raise UserError(f"criteria: expected a mapping of criterion to level, got {criteria!r}")
    known = {c.key for c in rubric.criteria}
    applicable_keys = {c.key for c in applicable}
    for key, value in criteria.items():
        if key not in known:
            raise UserError(f"criteria.{key}: unknown criterion for rubric {rubric.id}")
        if key not in applicable_keys and value is not None:
            raise UserError(
                f"criteria.{key}: not applicable to family {family!r}; leave it out or null "
                f"(got {value!r})"
            )
    scale = rubric.scale
    out: dict[str, int | None] = {}
    for c in applicable:
        if c.key not in criteria:
            raise UserError(f"criteria.{c.key}: missing (required for family {family!r})")
        value = criteria[c.key]
        if value is None:
            if not c.na_allowed:
                raise UserError(
                    f"criteria.{c.key}: N/A is not allowed for {c.name}; "
                    f"choose a level {scale.min}-{scale.max}"
                )
        elif isinstance(value, bool) or not isinstance(value, int):
            raise UserError(
                f"criteria.{c.key}: expected an integer level {scale.min}-{scale.max}, "
                f"got {value!r}"
            )
        elif not scale.min <= value <= scale.max:
            raise UserError(
                f"criteria.{c.key}: level {value} is outside the scale {scale.min}-{scale.max}"
            )
        out[c.key] = value
    return out


def overall(rubric: Rubric, criteria: dict[str, int | None], family: str) -> float:
    """Weighted mean of rescaled levels, in 0-1.

    overall = sum_c w_c * (s_c - min) / (max - min) / sum_c w_c, over the criteria that apply
    to `family` and are not N/A; weights from `[overall].weights` (neurology-v1: all 1).
    """
    levels = check_criteria(rubric, criteria, family)
    weights = rubric.overall_formula.weights
    lo, hi = rubric.scale.min, rubric.scale.max
    num = den = 0.0
    for key, level in levels.items():
        if level is None:
            continue
        num += weights[key] * (level - lo) / (hi - lo)
        den += weights[key]
    # den > 0: the schema requires a non-N/A criterion for every family.
    return num / den


def validate_score(
    rubric: Rubric, score: Any, *, family: str, require_confidence: bool | None = None
) -> dict[str, Any]:
    """The normalized score with "overall", or UserError naming the field and the value.

    Normalized: criteria in rubric order (applicable ones only), error tags de-duplicated in
    rubric order, comment stripped. `require_confidence` overrides the rubric's
    `confidence.required` (the grader reports no confidence).
    """
    if not isinstance(score, dict):
        raise UserError(f"score: expected a mapping, got {type(score).__name__}")
    for key in score:
        if key not in SCORE_FIELDS:
            raise UserError(f"score.{key}: unknown field (expected {', '.join(SCORE_FIELDS)})")
    if "criteria" not in score:
        raise UserError("criteria: missing")
    if missing := missing_fields(rubric, score, family=family,
                                 require_confidence=require_confidence):
        raise MissingFields(missing)
    criteria = check_criteria(rubric, score["criteria"], family)

    correct = score["correct_diagnosis"]  # present: missing_fields checked
    if not isinstance(correct, bool):
        raise UserError(f"correct_diagnosis: expected true or false, got {correct!r}")

    tags = score.get("error_tags") or []
    if not isinstance(tags, list | tuple):
        raise UserError(f"error_tags: expected a list of error classes, got {tags!r}")
    known = rubric.error_class_keys
    for i, tag in enumerate(tags):
        if tag not in known:
            raise UserError(
                f"error_tags[{i}]: unknown error class {tag!r} (known: {', '.join(known)})"
            )
    error_tags = [k for k in known if k in tags]

    comment = score.get("comment") or ""
    if not isinstance(comment, str):
        raise UserError(f"comment: expected text, got {comment!r}")
    comment = comment.strip()

    confidence = score.get("confidence")
    conf = rubric.confidence
    if confidence is None:  # allowed: a required one is in missing_fields
        pass
    elif isinstance(confidence, bool) or not isinstance(confidence, int):
        raise UserError(f"confidence: expected an integer {conf.min}-{conf.max}, got {confidence!r}")
    elif not conf.min <= confidence <= conf.max:
        raise UserError(f"confidence: {confidence} is outside the scale {conf.min}-{conf.max}")

    return {
        "criteria": criteria,
        "correct_diagnosis": correct,
        "error_tags": error_tags,
        "comment": comment,
        "confidence": confidence,
        "overall": overall(rubric, criteria, family),
    }
