"""The records of a bundle (docs/bundle-format.md) as pydantic models, and their problems as lines.

A model checks one JSON object (strict: no number read from a string, no bool taken for an
integer); `check_fields` turns every error into the one line a user reads, naming the field
and the value: `missing required field "title"`, `unknown field "scroes"`, `level 4 is not
1, 2 or 3`, `series[0].file 5 is not a string`. A field of the right type that is over its
limit in `db.text_limits.BUNDLE_FIELDS` is reported too ("ehr is 1,000,001 characters, more
than the limit of 1,000,000"). The parsed values stay as read: the models only check.
"""

import json
import math
import re
from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    WrapValidator,
)
from pydantic_core import PydanticCustomError

from db.models import FAMILIES, LEVELS
from db.text_limits import BUNDLE_FIELDS, describe_char, model_name_problem, too_long
from errors import escape_unprintable

FORMAT = "nmb-bundle/1"
PICTURE_PLANES = ("axial", "coronal", "sagittal", "none")
MAX_CAPTION = 500
#: `Response.sample` is an INTEGER column: 32 bits on PostgreSQL.
MAX_SAMPLE = 2**31 - 1
USAGE_COUNTS = ("prompt_tokens", "completion_tokens", "images")


def show(v: Any, limit: int = 60) -> str:
    """`v` as JSON, cut at `limit` characters; characters that are not printable (U+202E,
    U+2028, ...) escaped as JSON does control characters, so a problem stays one line."""
    text = json.dumps(v, ensure_ascii=False) if not isinstance(v, float) or math.isfinite(v) else str(v)
    return escape_unprintable(text if len(text) <= limit else text[: limit - 3] + "...")


# ---------------------------------------------------------------- field types


def _fail(why: str) -> None:
    raise PydanticCustomError("bundle", "{why}", {"why": why})


def rule(check: Callable[[Any], str | None]) -> AfterValidator:
    """A check after the type's: `check(value)` says what is wrong, or None."""
    def run(v: Any) -> Any:
        if (why := check(v)) is not None:
            _fail(why)
        return v

    return AfterValidator(run)


def _whole(why: str) -> WrapValidator:
    """Any error inside a list or object is one problem of the field: `why`."""
    def wrap(v: Any, handler: Callable[[Any], Any]) -> Any:
        try:
            return handler(v)
        except ValidationError:
            _fail(why)

    return WrapValidator(wrap)


def one_of(options: tuple) -> Any:
    """One of `options`, of their type (true is not 1): "is not 1, 2 or 3"."""
    label = (json.dumps(options[0]) if len(options) == 1
             else f"{', '.join(map(str, options[:-1]))} or {options[-1]}")

    def check(v: Any) -> Any:
        if type(v) is not type(options[0]) or v not in options:
            _fail(f"is not {label}")
        return v

    return Annotated[Literal[options], BeforeValidator(check)]


def _filled(max_len: int | None = None) -> Any:
    """Text that is not blank, of at most `max_len` characters."""
    return Annotated[str, rule(lambda v: "is empty" if not v.strip() else
                                f"is longer than {max_len} characters"
                                if max_len is not None and len(v) > max_len else None)]


def _usage(v: Any) -> str | None:
    """What answering cost: token and image counts (integers >= 0), `cost_usd` (>= 0)."""
    if not isinstance(v, dict) or not v:
        return "is not an object with prompt_tokens, completion_tokens, images or cost_usd"
    for key, x in v.items():
        number = isinstance(x, int | float) and not isinstance(x, bool)
        if key in USAGE_COUNTS and (not number or not isinstance(x, int) or x < 0):
            return f"has {key} {show(x)}, not an integer >= 0"
        if key == "cost_usd" and (not number or not math.isfinite(x) or x < 0):
            return f"has cost_usd {show(x)}, not a number >= 0"
        if key not in (*USAGE_COUNTS, "cost_usd"):
            return f"has unknown field {show(key)} (known: {', '.join(USAGE_COUNTS)}, cost_usd)"
    return None


Filled = _filled()
Identifier = Annotated[str, rule(
    lambda v: None if v and v == v.strip() and len(v) <= 128 and v.isprintable()
    else "is not a valid id (1-128 printable characters, no surrounding spaces)")]
BundleName = Annotated[_filled(256), rule(  # printed and shown: no line break, no ESC, ...
    lambda v: next((f"contains {describe_char(c)}" for c in v if not c.isprintable()), None))]
ModelName = Annotated[Any, rule(
    lambda v: None if (why := model_name_problem(v)) is None else f"is not a model name: {why}")]
Sample = Annotated[int, rule(
    lambda v: "is negative" if v < 0 else f"is larger than {MAX_SAMPLE}" if v > MAX_SAMPLE else None)]
Finite = Annotated[float, Field(allow_inf_nan=False)]  # JSON as Python reads it has NaN, 1e400
Scores = Annotated[dict[str, Finite], _whole("is not an object of finite numbers")]
Strings = Annotated[list[str], _whole("is not a list of strings")]
Stages = Annotated[Strings, rule(
    lambda v: "contains an empty string" if any(not x.strip() for x in v) else None)]
Marks = Annotated[list[bool], _whole("is not a list of true or false")]
Usage = Annotated[Any, rule(_usage)]


# ---------------------------------------------------------------- records


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class BundleMeta(Record):
    """bundle.json"""

    format: one_of((FORMAT,))
    name: BundleName
    description: str = None


class CaseRecord(Record):
    """cases/<case_id>/case.json (its lists' items are checked one by one)."""

    case_id: Identifier
    title: Filled
    ehr: str
    scores: Scores = None
    series: list[Any]
    ground_truth: dict[str, Any] = None  # absent: no reference answer yet (db.study.reference)
    key_slices: list[Any] = None  # db.bundle.key_slices
    hanging_protocol: dict[str, Any] = None  # db.bundle.key_slices: where the viewer opens
    masks: list[Any] = None
    patient: Identifier = None  # shared by the cases of one patient (opaque, never an identifier)


class SeriesEntry(Record):
    sequence: _filled(32)
    file: Filled
    plane: one_of(PICTURE_PLANES) = None
    caption: _filled(MAX_CAPTION) = None


class MaskEntry(Record):
    label: _filled(32)
    file: Filled
    series: _filled(32) = None


class GroundTruth(Record):
    final_diagnosis: Filled
    differential: Strings
    lesion: str = None
    reasoning: str = None


class TaskRecord(Record):
    """A line of tasks.jsonl."""

    task_id: Identifier
    case_id: Identifier
    family: one_of(FAMILIES)
    level: one_of(LEVELS)
    prompt: Filled
    stages: Stages = None
    show_masks: bool = None
    disconfirming: Marks = None
    practice: bool = None  # scored and answered, never counted (db.study.practice)


class ResponseRecord(Record):
    """A line of responses.jsonl."""

    response_id: Identifier
    task_id: Identifier
    model: ModelName
    sample: Sample
    text: str
    turns: Strings = None
    usage: Usage = None


# ---------------------------------------------------------------- problems

_WHY = {"string_type": "is not a string", "int_type": "is not an integer",
        "bool_type": "is not true or false", "list_type": "is not a list",
        "dict_type": "is not an object"}


def check_fields(obj: Any, model: type[Record], prefix: str = "") -> list[str]:
    """Every problem of one JSON object against `model`, one line each: unknown fields first,
    then the model's fields in order (missing, a bad value, over its limit)."""
    if not isinstance(obj, dict):
        return [f"{prefix.rstrip('.') or 'record'} must be a JSON object, got {show(obj)}"]
    try:
        model.model_validate(obj)
        errors = []
    except ValidationError as e:
        errors = e.errors(include_url=False)
    unknown, found = [], {}
    for e in errors:
        key, kind = e["loc"][0], e["type"]
        if kind == "extra_forbidden":
            unknown.append(f"unknown field {show(f'{prefix}{key}')}")
        elif kind == "missing":
            found[key] = f'missing required field "{prefix}{key}"'
        else:
            found.setdefault(key, f"{prefix}{key} {show(obj[key])} {_WHY.get(kind, e['msg'])}")
    for key in model.model_fields:
        if key in obj and key not in found and (why := over_limit(f"{prefix}{key}", obj[key])):
            found[key] = why
    return unknown + [found[k] for k in model.model_fields if k in found]


def over_limit(name: str, v: Any) -> str | None:
    """Why field `name` (its value `v` of the right type) is over its limit in
    `db.text_limits.BUNDLE_FIELDS`, or None: too many items, or too long a text or item."""
    limit = BUNDLE_FIELDS.get(re.sub(r"\[\d+\]", "[]", name))
    if limit is None:
        return None
    chars, items = limit
    if isinstance(v, str):
        return too_long(name, v, chars)
    if items is not None and len(v) > items:
        what = "entries" if isinstance(v, dict) else "items"
        return f"{name} has {len(v):,} {what}, more than the limit of {items:,}"
    for i, x in enumerate(v):  # the items of a list, the names of an object
        if why := too_long(f"a name in {name}" if isinstance(v, dict) else f"{name}[{i}]", x,
                           chars):
            return why
    return None
