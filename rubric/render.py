"""One rubric, three renderings: the rater's form spec, the grader's prompt, its output schema.

Nothing here restates a criterion: every text comes from the `Rubric` object, so the expert's
form and the LLM grader always read the same anchors.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from errors import UserError
from rubric.schema import Rubric
from rubric.scoring import validate_score

GRADER_FIELDS = ("justification", "criteria", "correct_diagnosis", "error_tags")


# --- rater's form ----------------------------------------------------------------------


@dataclass(frozen=True)
class FormCriterion:
    key: str
    name: str
    description: str
    anchors: list[tuple[int, str]]  # (level, anchor sentence), lowest level first
    na_allowed: bool
    na_rule: str | None


@dataclass(frozen=True)
class FormTag:
    key: str
    name: str
    definition: str  # hover help
    example: str


@dataclass(frozen=True)
class FormSpec:
    """What the Streamlit rubric form iterates over, for one task family."""

    rubric_id: str
    rubric_hash: str
    family: str
    family_name: str
    instructions: str  # the rubric's description: how to score
    criteria: list[FormCriterion]
    judgment_name: str
    judgment_question: str
    judgment_help: str  # definition plus the family's clarification
    tags: list[FormTag]
    comment_required_when: str  # "any_error_tag" | "always" | "never"
    comment_prompt: str
    confidence_question: str
    confidence: list[tuple[int, str]]  # (value, label)
    confidence_required: bool
    level_guidance: dict[int, str]  # task level -> how to score it


def _judgment_help(rubric: Rubric, family: str) -> str:
    note = rubric.correct_diagnosis.families.get(family)
    return f"{rubric.correct_diagnosis.definition} {note}" if note else (
        rubric.correct_diagnosis.definition
    )


def form_spec(rubric: Rubric, family: str) -> FormSpec:
    """The rater's form for a task of `family` (UserError if the family is unknown)."""
    fam = rubric.family(family)
    lo = rubric.scale.min
    return FormSpec(
        rubric_id=rubric.id,
        rubric_hash=rubric.content_hash,
        family=fam.key,
        family_name=fam.name,
        instructions=rubric.description,
        criteria=[
            FormCriterion(
                key=c.key,
                name=c.name,
                description=c.description,
                anchors=[(lo + i, text) for i, text in enumerate(c.anchors)],
                na_allowed=c.na_allowed,
                na_rule=c.na_rule,
            )
            for c in rubric.applicable_criteria(family)
        ],
        judgment_name=rubric.correct_diagnosis.name,
        judgment_question=rubric.correct_diagnosis.question,
        judgment_help=_judgment_help(rubric, family),
        tags=[FormTag(e.key, e.name, e.definition, e.example) for e in rubric.error_classes],
        comment_required_when=rubric.comment.required_when,
        comment_prompt=rubric.comment.prompt,
        confidence_question=rubric.confidence.question,
        confidence=list(zip(rubric.confidence.levels, rubric.confidence.labels, strict=True)),
        confidence_required=rubric.confidence.required,
        level_guidance={lv.level: f"{lv.name}: {lv.guidance}" for lv in rubric.levels},
    )


# --- grader's prompt -------------------------------------------------------------------


def grader_instructions(rubric: Rubric, family: str | None = None) -> str:
    """The grader's system prompt: criteria with anchors, the judgment, error classes, rules.

    With `family`, only that family's criteria are listed; without, every criterion with the
    families it applies to (the user message then names the task's family).
    """
    families = [rubric.family(family)] if family else list(rubric.families)
    criteria = rubric.applicable_criteria(family) if family else list(rubric.criteria)
    lo, hi = rubric.scale.min, rubric.scale.max
    names = {f.key: f.name for f in rubric.families}
    out: list[str] = [
        f"You are an expert neurologist grading a response to a clinical case task, using the "
        f"rubric \"{rubric.title}\" ({rubric.id}, version {rubric.version}).",
        "",
        rubric.description,
        "",
        "You receive the task, the case material (clinical record, test scores and, when "
        "provided, MRI images), the reference answer, and the response "
        "to grade. The response may come from a model or a human; do not guess which.",
        "",
        "## Task families",
    ]
    out += [f"- {f.key} ({f.name}): {f.description}" for f in families]
    if rubric.levels:
        out += ["", "## Task levels"]
        out += [f"- Level {lv.level} ({lv.name}): {lv.guidance}" for lv in rubric.levels]
    out += ["", f"## Criteria (integer levels {lo}-{hi})"]
    for c in criteria:
        applies = ", ".join(names[k] for k in c.families or ())
        out += ["", f"### {c.key}: {c.name}"]
        if not family and c.families is not None:
            out.append(f"Applies to: {applies}. For other families, give null.")
        out.append(c.description)
        out += [f"- {lo + i}: {text}" for i, text in enumerate(c.anchors)]
        if c.na_allowed:
            out.append(f"- null (N/A): {c.na_rule}")
    cd = rubric.correct_diagnosis
    out += ["", f"## correct_diagnosis: {cd.name}", f"{cd.question} {cd.definition}"]
    out += [
        f"- {names[k]}: {note}"
        for k, note in cd.families.items()
        if family is None or k == family
    ]
    out += ["", "## Error classes (tag every one that occurs; none if the response has no error)"]
    for e in rubric.error_classes:
        out += [f"- {e.key} ({e.name}): {e.definition} Example: {e.example}"]
    out += [
        "",
        "## Output",
        "Answer with one JSON object matching the given schema, fields in this order:",
        "- justification: first, a concise assessment that cites the specific findings and "
        "statements that decide each level, and describes each tagged error (what the "
        "response says versus what the images or record show).",
        f"- criteria: one integer level {lo}-{hi} per criterion, chosen by its anchors. Use "
        "null only where N/A is allowed or the criterion does not apply to the task's family.",
        "- correct_diagnosis: true or false, as defined above.",
        "- error_tags: the keys of the error classes present, or an empty list.",
        "Judge only against the case material and the reference answer. Do not reward "
        "length, hedging or confident tone.",
    ]
    return "\n".join(out)


# --- grader's output schema ------------------------------------------------------------


def _level_schema(rubric: Rubric, description: str, nullable: bool) -> dict[str, Any]:
    levels = {"type": "integer", "enum": rubric.scale.levels}
    if not nullable:
        return {**levels, "description": description}
    return {"anyOf": [levels, {"type": "null"}], "description": description}


def output_json_schema(rubric: Rubric, family: str | None = None) -> dict[str, Any]:
    """JSON Schema of the grader's answer, valid for OpenAI Structured Outputs strict mode.

    Every object lists all its properties in `required` and sets `additionalProperties:
    false`; levels are integer enums (strict mode has no minimum/maximum). With `family`,
    only its criteria appear, nullable where N/A is allowed; without, every criterion
    appears and those that do not apply to all families are nullable too.
    `justification` comes first so the model writes its reasoning before the levels.
    """
    criteria = rubric.applicable_criteria(family) if family else list(rubric.criteria)
    props: dict[str, Any] = {}
    for c in criteria:
        nullable = c.na_allowed or (family is None and c.families is not None)
        props[c.key] = _level_schema(rubric, c.name, nullable)
    tags = rubric.error_class_keys
    return {
        "type": "object",
        "properties": {
            "justification": {
                "type": "string",
                "description": "Concise assessment citing the findings behind each level and "
                "describing each tagged error.",
            },
            "criteria": {
                "type": "object",
                "properties": props,
                "required": list(props),
                "additionalProperties": False,
            },
            "correct_diagnosis": {
                "type": "boolean",
                "description": rubric.correct_diagnosis.question,
            },
            "error_tags": {
                "type": "array",
                "items": {"type": "string", "enum": tags},
                "description": "Error classes present in the response; empty if none.",
            },
        },
        "required": list(GRADER_FIELDS),
        "additionalProperties": False,
    }


def parse_grader_output(rubric: Rubric, data: Any, family: str) -> dict[str, Any]:
    """The grader's answer as a normalized score (the shape `validate_score` returns).

    The justification becomes the score's "comment"; confidence is None. Raises
    ValueError with a reason (the caller may re-ask the model).
    """
    rubric.family(family)  # an unknown family is the caller's mistake, not the model's
    if not isinstance(data, dict):
        raise ValueError(f"expected a JSON object, got {type(data).__name__}")
    missing = [k for k in GRADER_FIELDS if k not in data]
    if missing:
        raise ValueError(f"missing field(s): {', '.join(missing)}")
    extra = [k for k in data if k not in GRADER_FIELDS]
    if extra:
        raise ValueError(f"unexpected field(s): {', '.join(map(str, extra))}")
    justification = data["justification"]
    if not isinstance(justification, str) or not justification.strip():
        raise ValueError("justification: expected non-empty text")
    score = {
        "criteria": data["criteria"],
        "correct_diagnosis": data["correct_diagnosis"],
        "error_tags": data["error_tags"],
        "comment": justification,
        "confidence": None,
    }
    try:
        return validate_score(rubric, score, family=family, require_confidence=False)
    except UserError as exc:
        raise ValueError(str(exc)) from None
