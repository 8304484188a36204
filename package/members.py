"""The JSON members of a frozen grader package (`package.freeze`, `package.verify`) as pydantic models.

`checked` validates one member (or one JSONL line) strictly and turns every error into one
line naming the member and the field ("manifest.json has unknown field 'note'",
"tasks.jsonl line 3 case lacks 'ehr'", "manifest.json canary.drift_limits.overall_mad_max:
input should be less than or equal to 0.5"), the first ten on the one line of the refusal.
What a field means (hashes, the seal, the report agreeing with the manifest) is checked by
`package.verify.verify` afterwards.
"""

from datetime import datetime
from typing import Annotated, Any, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from db import text_limits as limit
from db.bundle.records import Finite, one_of
from errors import UserError

HEX64 = r"^[0-9a-f]{64}$"
MAX_SHOWN = 10  # problems on the one line of a refusal (a hostile member may have thousands)
MAX_NAME = 40  # characters of a key a refusal echoes


def _text(most: int) -> Any:
    """Text of at most `most` characters: the study's limit for the field (`db.text_limits`),
    so that rebuilding a request costs what it did in the study."""
    return Annotated[str, Field(max_length=most)]


def _texts(most: int, items: int) -> Any:
    return Annotated[list[_text(most)], Field(max_length=items)]


def _zoned(v: str) -> str:
    """An ISO 8601 time with its zone."""
    try:
        when = datetime.fromisoformat(v)
    except ValueError:
        when = None
    if when is None or when.tzinfo is None:
        raise ValueError("is not an ISO 8601 time with its zone")
    return v


class Member(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


M = TypeVar("M", bound=Member)


class Config(Member):
    """Every field of the grader config, as frozen (the fields `config_hash` covers, and it)."""

    config_hash: str
    name: str
    model: str
    base_url: str | None
    temperature: Finite
    seed: int | None
    max_tokens: int
    prompt_version: str
    rubric_hash: str
    vision: bool


class RubricRef(Member):
    id: str
    version: str
    hash: str


class ReportRef(Member):
    id: int
    part: str
    protocol_id: int
    protocol_sha256: str
    data_sha256: str
    passed: bool
    gate: dict[str, Any]


class Look(Member):
    config_id: int
    passed: bool
    revoked: bool
    suspended: one_of((True,)) = None  # (a Literal[True] takes 1 and 1.0)


class DriftLimits(Member):
    criteria_agreement_min: Annotated[float, Field(ge=0.5, le=1.0)]
    overall_mad_max: Annotated[float, Field(ge=0.0, le=0.5)]


MAX_CANARY_ITEMS = 500  # each is rebuilt by verify and sent by canary


class CanaryInfo(Member):
    items: Annotated[int, Field(ge=1, le=MAX_CANARY_ITEMS)]
    seed: int
    drift_limits: DriftLimits


class Manifest(Member):
    format: str
    created_at: Annotated[str, AfterValidator(_zoned)]
    tool_version: Annotated[str, Field(pattern=r"^[0-9A-Za-z][0-9A-Za-z.+!_-]{0,63}$")]  # PEP 440
    config: Config
    rubric: RubricRef
    report: ReportRef
    # the validation's terms (`calibration.terms.ValidationTerms.to_json`), which verify
    # recomputes from protocol.json; absent in packages frozen before they were recorded
    validation_terms: dict[str, Any] | None = None
    heldout_looks: Annotated[list[Look], Field(min_length=1)]  # every held-out look
    canary: CanaryInfo
    sha256: dict[str, str]


class Seal(Member):
    manifest_sha256: str


class Protocol(Member):
    id: int
    sha256: str
    content: dict[str, Any]


class ReportHead(Member):
    """What verify reads of report.json besides `Report.from_json`'s fields."""

    model_config = ConfigDict(extra="allow")
    id: int
    protocol_hash: str
    data_hash: str
    passed: bool
    validates: bool
    gate: list[Any]


class Reference(Member):
    """What the grader's prompt reads of a case's reference answer (`reference_fields`)."""

    model_config = ConfigDict(extra="allow", strict=True)
    final_diagnosis: Annotated[str, Field(min_length=1, max_length=limit.TITLE)]
    differential: _texts(limit.TITLE, limit.DIFFERENTIAL) = []
    lesion: _text(limit.PROMPT) | None = None
    reasoning: _text(limit.PROMPT) | None = None


class CaseRow(Member):
    case_id: str
    title: _text(limit.TITLE)
    ehr: _text(limit.RECORD)
    scores: Annotated[dict[_text(limit.SCORE_NAME), Finite], Field(max_length=limit.SCORES)] | None
    ground_truth: Reference


class TaskRow(Member):
    """A line of tasks.jsonl: a task and what the grader reads of its case."""

    task_id: str
    case_id: str
    family: str
    level: int
    prompt: _text(limit.PROMPT)
    stages: _texts(limit.PROMPT, limit.STAGES) | None
    case: CaseRow


class Frozen(Member):
    criteria: dict[str, int | None]
    correct_diagnosis: bool
    error_tags: list[str]
    overall: Finite


class CanaryRow(Member):
    response_id: str
    task_id: str
    text: _text(limit.ANSWER)
    turns: _texts(limit.ANSWER, limit.STAGES) | None
    request_hash: str
    frozen: Frozen
    model_returned: str | None
    system_fingerprint: str | None


class Shown(Member):
    caption: _text(limit.TITLE)
    sha256: Annotated[str, Field(pattern=HEX64)]


class CaseImages(Member):
    """A line of images.jsonl: a case's key slices as the grader saw them, in order."""

    case_id: str
    images: list[Shown]


def _key(name: Any) -> str:
    """A key as echoed: cut at MAX_NAME characters, quoted and escaped by repr."""
    return repr(str(name)[:MAX_NAME])


def _at(where: str, loc: tuple) -> str:
    """"manifest.json canary.drift_limits", "tasks.jsonl line 3 case", "images.jsonl line 2
    images[0]", "manifest.json sha256.'a key of a dict'"."""
    dotted = "".join(f"[{p}]" if isinstance(p, int) else
                     f".{p if p.isidentifier() and len(p) <= MAX_NAME else _key(p)}"
                     for p in loc).lstrip(".")
    return f"{where} {dotted}" if dotted else where


def _problem(where: str, error: dict[str, Any]) -> str:
    loc, kind = error["loc"], error["type"]
    if kind == "extra_forbidden":
        return f"{_at(where, loc[:-1])} has unknown field {_key(loc[-1])}"
    if kind == "missing":
        return f"{_at(where, loc[:-1])} lacks {loc[-1]!r}"
    if kind in ("model_type", "dict_type"):
        return f"{_at(where, loc)} must be a JSON object"
    message = error["msg"].removeprefix("Value error, ")
    return f"{_at(where, loc)}: {message[0].lower()}{message[1:]}"


def checked(path: Any, where: str, value: Any, model: type[M]) -> M:
    """`value` as `model`, or a UserError naming `path` and every problem on one line."""
    try:
        return model.model_validate(value)
    except ValidationError as e:
        errors = e.errors(include_url=False)
        more = f"; and {len(errors) - MAX_SHOWN} more" if len(errors) > MAX_SHOWN else ""
        problems = "; ".join(_problem(where, x) for x in errors[:MAX_SHOWN])
        raise UserError(f"{path}: {problems}{more}") from None
