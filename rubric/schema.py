"""The rubric file's schema (pydantic v2) and the `Rubric` object every consumer shares.

A rubric is data: criteria with anchored levels, the correct-diagnosis judgment, error
classes, the overall formula, the comment rule and the confidence scale. Its identity is
`Rubric.content_hash`: sha256 of a canonical JSON of the parsed file content (keys sorted,
no whitespace), so comments and formatting in the TOML do not change it.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

SUPPORTED_SCHEMA_VERSIONS = (1,)
KEY_PATTERN = r"^[a-z][a-z0-9_]*$"
SHORT_ANCHOR_MAX = 40  # characters: a label under a level button on the rater's form
# Characters that only markup needs: a short anchor is a plain label (the form still escapes it).
_MARKUP = re.compile(r"[`*_#\[\]<>\\|~$]")


class _Model(BaseModel):
    model_config = ConfigDict(
        extra="forbid", frozen=True, strict=True, str_strip_whitespace=True, populate_by_name=True
    )


class Scale(_Model):
    """The integer levels every criterion uses, inclusive."""

    min: int = Field(ge=0)
    max: int

    @model_validator(mode="after")
    def _ordered(self) -> Scale:
        if not self.min < self.max <= self.min + 10:
            raise ValueError(f"max: must be greater than min and at most min + 10, got {self.max}")
        return self

    @property
    def levels(self) -> list[int]:
        return list(range(self.min, self.max + 1))


class Family(_Model):
    """A task family (differential, lesion, rationale)."""

    key: str = Field(pattern=KEY_PATTERN, max_length=16)
    name: str = Field(min_length=1)
    description: str = Field(min_length=1)


class Level(_Model):
    """A task level (1 direct, 2 complex, 3 multi-turn) and how to score it."""

    level: int = Field(ge=1)
    name: str = Field(min_length=1)
    guidance: str = Field(min_length=1)


class Criterion(_Model):
    """One scored criterion: `anchors[i]` describes level `scale.min + i`.

    `short_anchors` (optional, for human raters only: the grader never reads them) gives each
    anchor a plain label of at most `SHORT_ANCHOR_MAX` characters, shown under its level.
    `families` lists the task families it applies to (None: all). `na_allowed` lets a
    rater mark it N/A (level None) in an applicable family, under `na_rule`.
    """

    key: str = Field(pattern=KEY_PATTERN, max_length=48)
    name: str = Field(min_length=1)
    description: str = Field(min_length=1)
    anchors: list[str]
    short_anchors: list[str] | None = None
    families: list[str] | None = None
    na_allowed: bool = False
    na_rule: str | None = None

    @model_validator(mode="after")
    def _na_rule(self) -> Criterion:
        if self.na_allowed and not self.na_rule:
            raise ValueError("na_rule: required when na_allowed is true")
        if not self.na_allowed and self.na_rule:
            raise ValueError("na_rule: only allowed when na_allowed is true")
        for i, text in enumerate(self.anchors):
            if not text or "\n" in text:
                raise ValueError(f"anchors[{i}]: must be one non-empty line")
        if self.short_anchors is not None:
            self._check_short_anchors(self.short_anchors)
        return self

    def _check_short_anchors(self, short: list[str]) -> None:
        if len(short) != len(self.anchors):
            raise ValueError(f"short_anchors: expected {len(self.anchors)}, one per anchor, got "
                             f"{len(short)} (criterion {self.key!r})")
        for i, text in enumerate(short):
            problem = None
            if not text or not text.isprintable():
                problem = "must be one non-empty line of printable text"
            elif len(text) > SHORT_ANCHOR_MAX:
                problem = f"at most {SHORT_ANCHOR_MAX} characters, got {len(text)}"
            elif markup := _MARKUP.search(text):
                problem = f"must be plain text, without the markup character {markup.group()!r}"
            if problem:
                shown = text if len(text) <= 60 else text[:57] + "..."
                raise ValueError(f"short_anchors[{i}]: {problem} (criterion {self.key!r}: "
                                 f"{shown!r})")

    def applies_to(self, family: str) -> bool:
        return self.families is None or family in self.families


class CorrectDiagnosis(_Model):
    """The binary judgment pass@k counts; `families` holds per-family clarifications."""

    name: str = Field(min_length=1)
    question: str = Field(min_length=1)
    definition: str = Field(min_length=1)
    families: dict[str, str] = Field(default_factory=dict)


class ErrorClass(_Model):
    key: str = Field(pattern=KEY_PATTERN, max_length=48)
    name: str = Field(min_length=1)
    definition: str = Field(min_length=1)
    example: str = Field(min_length=1)


class Overall(_Model):
    """overall = sum(w_c * (s_c - min) / (max - min)) / sum(w_c) over applicable, non-N/A c."""

    method: Literal["weighted_mean"]
    description: str = Field(min_length=1)
    weights: dict[str, float]


class CommentRule(_Model):
    required_when: Literal["any_error_tag", "always", "never"]
    prompt: str = Field(min_length=1)


class Confidence(_Model):
    min: int = Field(ge=0)
    max: int
    required: bool = False
    question: str = Field(min_length=1)
    labels: list[str]

    @model_validator(mode="after")
    def _labels(self) -> Confidence:
        if not self.min < self.max <= self.min + 10:
            raise ValueError(f"max: must be greater than min and at most min + 10, got {self.max}")
        expected = self.max - self.min + 1
        if len(self.labels) != expected:
            raise ValueError(
                f"labels: expected {expected} labels for scale {self.min}-{self.max}, "
                f"got {len(self.labels)}"
            )
        return self

    @property
    def levels(self) -> list[int]:
        return list(range(self.min, self.max + 1))


def _duplicates(keys: list[Any]) -> list[Any]:
    seen: set[Any] = set()
    return [k for k in keys if k in seen or seen.add(k)]


class Rubric(_Model):
    """A parsed, validated rubric. Build it with `rubric.load_rubric` or `rubric.loads_rubric`."""

    schema_version: int
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9._-]*$", max_length=64)
    version: str = Field(min_length=1, max_length=32)
    title: str = Field(min_length=1)
    description: str = Field(min_length=1)
    scale: Scale
    families: list[Family] = Field(min_length=1)
    levels: list[Level] = Field(default_factory=list)
    criteria: list[Criterion] = Field(min_length=1)
    correct_diagnosis: CorrectDiagnosis
    error_classes: list[ErrorClass] = Field(min_length=1)
    overall_formula: Overall = Field(alias="overall")
    comment: CommentRule
    confidence: Confidence

    _raw: dict[str, Any] | None = PrivateAttr(default=None)
    _source_text: str | None = PrivateAttr(default=None)
    _hash: str | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _consistent(self) -> Rubric:
        if self.schema_version not in SUPPORTED_SCHEMA_VERSIONS:
            raise ValueError(
                f"schema_version: unsupported version {self.schema_version} "
                f"(supported: {', '.join(map(str, SUPPORTED_SCHEMA_VERSIONS))})"
            )
        family_keys = [f.key for f in self.families]
        if dup := _duplicates(family_keys):
            raise ValueError(f"families: duplicate key {dup[0]!r}")
        if dup := _duplicates([lv.level for lv in self.levels]):
            raise ValueError(f"levels: duplicate level {dup[0]}")
        if dup := _duplicates([c.key for c in self.criteria]):
            raise ValueError(f"criteria: duplicate key {dup[0]!r}")
        expected = self.scale.max - self.scale.min + 1
        for i, c in enumerate(self.criteria):
            if len(c.anchors) != expected:
                raise ValueError(
                    f"criteria[{i}].anchors: expected {expected} anchors for scale "
                    f"{self.scale.min}-{self.scale.max}, got {len(c.anchors)}"
                )
            for fam in c.families or ():
                if fam not in family_keys:
                    raise ValueError(f"criteria[{i}].families: unknown family {fam!r}")
        for fam in family_keys:
            if not any(c.applies_to(fam) and not c.na_allowed for c in self.criteria):
                raise ValueError(
                    f"criteria: family {fam!r} needs at least one applicable criterion "
                    "that cannot be N/A"
                )
        for fam in self.correct_diagnosis.families:
            if fam not in family_keys:
                raise ValueError(f"correct_diagnosis.families: unknown family {fam!r}")
        if dup := _duplicates([e.key for e in self.error_classes]):
            raise ValueError(f"error_classes: duplicate key {dup[0]!r}")
        criterion_keys = [c.key for c in self.criteria]
        for key, weight in self.overall_formula.weights.items():
            if key not in criterion_keys:
                raise ValueError(f"overall.weights.{key}: unknown criterion")
            if not weight > 0:
                raise ValueError(f"overall.weights.{key}: must be positive, got {weight}")
        for key in criterion_keys:
            if key not in self.overall_formula.weights:
                raise ValueError(f"overall.weights: missing weight for criterion {key!r}")
        return self

    # --- identity ---------------------------------------------------------------------

    @property
    def content_hash(self) -> str:
        """sha256 (hex) of the canonical JSON of the parsed content; see `canonical_json`."""
        if self._hash is None:
            content = self._raw if self._raw is not None else self.model_dump(
                mode="json", exclude_unset=True, by_alias=True
            )
            self._hash = hashlib.sha256(canonical_json(content).encode()).hexdigest()
        return self._hash

    @property
    def source_text(self) -> str:
        """The raw TOML the rubric was loaded from (what the database stores)."""
        if self._source_text is None:
            raise ValueError(f"rubric {self.id} was not loaded from a file; it has no source text")
        return self._source_text

    # --- lookups ----------------------------------------------------------------------

    @property
    def family_keys(self) -> list[str]:
        return [f.key for f in self.families]

    @property
    def error_class_keys(self) -> list[str]:
        return [e.key for e in self.error_classes]

    def criterion(self, key: str) -> Criterion:
        for c in self.criteria:
            if c.key == key:
                return c
        raise KeyError(key)

    def family(self, key: str) -> Family:
        """The family `key`; an unknown family is a `UserError` naming it."""
        from errors import UserError

        for f in self.families:
            if f.key == key:
                return f
        raise UserError(
            f"family: unknown task family {key!r} for rubric {self.id} "
            f"(known: {', '.join(self.family_keys)})"
        )

    def applicable_criteria(self, family: str) -> list[Criterion]:
        """The criteria scored for a task of `family`, in rubric order."""
        self.family(family)
        return [c for c in self.criteria if c.applies_to(family)]


def canonical_json(content: Any) -> str:
    """Keys sorted, no insignificant whitespace, UTF-8 kept: the text `content_hash` hashes."""
    return json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
