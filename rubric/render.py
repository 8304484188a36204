"""One rubric, three renderings: the rater's form spec, the grader's prompt, its output schema.

Nothing here restates a criterion: every text comes from the `Rubric` object, so the expert's
form and the LLM grader always read the same anchors.

The grader's prompt is versioned (`PROMPTS`; a config names its version, and every version
stays byte-identical, so old cache keys and packages still rebuild): `nmb-grader-1` asks for
the rubric's score; `nmb-grader-2` also asks, on differential tasks, for the rank of the
reference diagnosis in the response's differential (`diagnosis_rank`) and, on multi-turn
tasks, for the leading answer and its correctness at every stage (`stages`). `Asked` is what
one request asks for beyond the score.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from errors import UserError
from rubric.grade import Grade
from rubric.schema import Rubric
from rubric.scoring import MissingFields, validate_score

GRADER_FIELDS = ("justification", "criteria", "correct_diagnosis", "error_tags")
PROMPT_V1, PROMPT_V2 = "nmb-grader-1", "nmb-grader-2"
PROMPTS = (PROMPT_V1, PROMPT_V2)
MAX_RANK = 10  # ranks beyond the tenth entry of a differential are reported as absent
MAX_JUSTIFICATION = 200_000  # characters: what the study stores of a model's answer (ANSWER)
RANKED_FAMILY = "differential"  # the family whose task asks for a ranked differential


@dataclass(frozen=True, order=True)
class Asked:
    """What one grading request asks for beyond the rubric's score: the rank of the reference
    diagnosis in the differential, and `stages` stage judgments (0: none)."""

    rank: bool = False
    stages: int = 0

    @classmethod
    def of(cls, version: str, family: str, n_stages: int) -> Asked:
        """What prompt `version` asks of a task of `family` with `n_stages` revealed stages."""
        if version not in PROMPTS:
            raise UserError(f"prompt_version {version!r} is not one of {', '.join(PROMPTS)}")
        if version == PROMPT_V1:
            return cls()
        return cls(rank=family == RANKED_FAMILY, stages=1 + n_stages if n_stages else 0)

    @property
    def extra(self) -> tuple[str, ...]:
        """The answer's fields beyond the score."""
        return (*(("diagnosis_rank",) if self.rank else ()), *(("stages",) if self.stages else ()))

    @property
    def fields(self) -> tuple[str, ...]:
        return (*GRADER_FIELDS, *self.extra)


NOT_ASKED = Asked()  # the score only (every task under nmb-grader-1)


# --- rater's form ----------------------------------------------------------------------


@dataclass(frozen=True)
class FormCriterion:
    key: str
    name: str
    description: str
    anchors: list[tuple[int, str]]  # (level, anchor sentence), lowest level first
    na_allowed: bool
    na_rule: str | None
    short_anchors: tuple[str, ...] = ()  # one label per anchor, same order; () when none


@dataclass(frozen=True)
class FormTag:
    key: str
    name: str
    definition: str
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
                short_anchors=tuple(c.short_anchors or ()),
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


def grader_instructions(rubric: Rubric, family: str | None = None,
                        asked: Asked = NOT_ASKED) -> str:
    """The grader's system prompt: criteria with anchors, the judgment, error classes, rules
    (and what `asked` adds: the differential rank, the stage judgments).

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
    ]
    if asked.rank:
        out.append(
            "- diagnosis_rank: the position of the reference diagnosis in the response's "
            "differential, in the order the response ranks it (1 = its leading diagnosis; a "
            f"recognised synonym counts), or null when it is not among the first {MAX_RANK} "
            "entries or the response gives no differential.")
    if asked.stages:
        out.append(
            f"- stages: for each of the {asked.stages} answers in order (the first answer, then "
            "the answer after each revealed stage): leading_diagnosis, the diagnosis (for a "
            "lesion task, the principal lesion) that answer commits to, in a few words; correct, "
            "whether it matches the reference answer, judged as correct_diagnosis but on that "
            "answer alone; and, from the second answer on, changed, whether its leading "
            "diagnosis differs in substance from the previous answer's (a synonym or added "
            "detail is no change).")
    out.append("Judge only against the case material and the reference answer. Do not reward "
               "length, hedging or confident tone.")
    return "\n".join(out)


# --- grader's output schema ------------------------------------------------------------


def _level_schema(rubric: Rubric, description: str, nullable: bool) -> dict[str, Any]:
    levels = {"type": "integer", "enum": rubric.scale.levels}
    if not nullable:
        return {**levels, "description": description}
    return {"anyOf": [levels, {"type": "null"}], "description": description}


def _stages_schema(n: int) -> dict[str, Any]:
    """One object per answer (`stage_1` .. `stage_n`): a fixed length without minItems, which
    strict mode does not accept."""
    def stage(k: int) -> dict[str, Any]:
        props: dict[str, Any] = {
            "leading_diagnosis": {"type": "string",
                                  "description": f"What answer {k} commits to, in a few words."},
            "correct": {"type": "boolean",
                        "description": f"Whether answer {k} matches the reference answer."}}
        if k > 1:
            props["changed"] = {"type": "boolean", "description": f"Whether answer {k}'s "
                                "leading diagnosis differs in substance from answer {k - 1}'s."}
        return {"type": "object", "properties": props, "required": list(props),
                "additionalProperties": False}

    props = {f"stage_{k}": stage(k) for k in range(1, n + 1)}
    return {"type": "object", "properties": props, "required": list(props),
            "additionalProperties": False,
            "description": "The leading answer at each stage, first answer first."}


def output_json_schema(rubric: Rubric, family: str | None = None,
                       asked: Asked = NOT_ASKED) -> dict[str, Any]:
    """JSON Schema of the grader's answer, valid for OpenAI Structured Outputs strict mode.

    Every object lists all its properties in `required` and sets `additionalProperties:
    false`; levels are integer enums (strict mode has no minimum/maximum). With `family`,
    only its criteria appear, nullable where N/A is allowed; without, every criterion
    appears and those that do not apply to all families are nullable too.
    `justification` comes first so the model writes its reasoning before the levels; `asked`
    adds `diagnosis_rank` (an integer enum 1..MAX_RANK or null) and `stages`.
    """
    criteria = rubric.applicable_criteria(family) if family else list(rubric.criteria)
    props: dict[str, Any] = {}
    for c in criteria:
        nullable = c.na_allowed or (family is None and c.families is not None)
        props[c.key] = _level_schema(rubric, c.name, nullable)
    tags = rubric.error_class_keys
    schema: dict[str, Any] = {
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
    }
    if asked.rank:
        schema["properties"]["diagnosis_rank"] = {
            "anyOf": [{"type": "integer", "enum": list(range(1, MAX_RANK + 1))},
                      {"type": "null"}],
            "description": "Position of the reference diagnosis in the response's differential "
                           "(1 = leading), or null when absent."}
    if asked.stages:
        schema["properties"]["stages"] = _stages_schema(asked.stages)
    return {**schema, "required": list(asked.fields), "additionalProperties": False}


def _rank(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_RANK:
        raise ValueError(f"diagnosis_rank: expected an integer 1-{MAX_RANK} or null, got {value!r}")
    return value


def _stages(value: Any, n: int) -> list[dict[str, Any]]:
    """The stage judgments as a list, first answer first: {leading_diagnosis, correct, changed}
    (changed is False for the first answer)."""
    keys = [f"stage_{k}" for k in range(1, n + 1)]
    if not isinstance(value, dict) or sorted(value) != sorted(keys):
        raise ValueError(f"stages: expected an object with {', '.join(keys)}")
    out = []
    for k, key in enumerate(keys, 1):
        stage = value[key]
        want = ("leading_diagnosis", "correct", *(("changed",) if k > 1 else ()))
        if not isinstance(stage, dict) or sorted(stage) != sorted(want):
            raise ValueError(f"stages.{key}: expected an object with {', '.join(want)}")
        leading = stage["leading_diagnosis"]
        if not isinstance(leading, str) or not leading.strip():
            raise ValueError(f"stages.{key}.leading_diagnosis: expected non-empty text")
        flags = {f: stage.get(f, False) for f in ("correct", "changed")}
        for f, v in flags.items():
            if not isinstance(v, bool):
                raise ValueError(f"stages.{key}.{f}: expected true or false, got {v!r}")
        out.append({"leading_diagnosis": leading.strip()[:200], **flags})
    return out


def parse_grader_output(rubric: Rubric, data: Any, family: str,
                        asked: Asked = NOT_ASKED) -> Grade:
    """The grader's answer as a `Grade`: checked as an expert's score is (`validate_score`:
    levels, error classes, the overall score), plus `diagnosis_rank` and `stages` when `asked`
    asks for them. Raises ValueError with a reason (the caller may re-ask the model).
    """
    rubric.family(family)  # an unknown family is the caller's mistake, not the model's
    if not isinstance(data, dict):
        raise ValueError(f"expected a JSON object, got {type(data).__name__}")
    missing = [k for k in asked.fields if k not in data]
    if missing:
        raise ValueError(f"missing field(s): {', '.join(missing)}")
    extra = [k for k in data if k not in asked.fields]
    if extra:
        raise ValueError(f"unexpected field(s): {', '.join(map(str, extra))}")
    justification = data["justification"]
    if not isinstance(justification, str) or not justification.strip():
        raise ValueError("justification: expected non-empty text")
    if len(justification) > MAX_JUSTIFICATION:
        raise ValueError(f"justification is {len(justification):,} characters, more than the "
                         f"limit of {MAX_JUSTIFICATION:,}")
    score = {
        "criteria": data["criteria"],
        "correct_diagnosis": data["correct_diagnosis"],
        "error_tags": data["error_tags"],
        "comment": justification,
        "confidence": None,
    }
    try:
        clean = validate_score(rubric, score, family=family, require_confidence=False)
    except MissingFields as exc:  # the grader answers in field keys, not in the form's words
        raise ValueError(f"missing: {', '.join(exc.fields)}") from None
    except UserError as exc:
        raise ValueError(str(exc)) from None
    return Grade(criteria=clean["criteria"], correct_diagnosis=clean["correct_diagnosis"],
                 error_tags=clean["error_tags"], justification=clean["comment"],  # stripped
                 overall=clean["overall"],
                 diagnosis_rank=_rank(data["diagnosis_rank"]) if asked.rank else None,
                 stages=_stages(data["stages"], asked.stages) if asked.stages else None)
