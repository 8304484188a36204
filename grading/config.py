"""Grader configurations: everything that shapes a grading request, hashed and immutable.

A config file is TOML with the fields of `GraderSettings` (`rubric` names a bundled rubric
or a rubric file; without it, the rubric the study's experts score with:
`db.rubrics.rubric_in_force`). The hash covers every field except the display name, so a changed
field is a new config; a config used by a run is never edited in place.
"""

import hashlib
import re
import tomllib
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from sqlmodel import Session, select

from db.audit import record
from db.locks import take_turns
from db.models import GraderConfig
from db.rubrics import ensure_rubric, rubric_in_force
from db.text_limits import model_name_problem
from errors import UserError, one_line, read_at_most
from rubric.render import PROMPT_V2, PROMPTS
from rubric.schema import canonical_json

PROMPT_VERSION = PROMPT_V2  # rubric.render.PROMPTS: add a version whenever the prompt changes
DEFAULT_MODEL = "gpt-4o-2024-08-06"
_DATED = re.compile(r"\d{4}-\d{2}-\d{2}$")


@dataclass(frozen=True)
class GraderSettings:
    model: str = DEFAULT_MODEL
    base_url: str | None = None
    temperature: float = 0.0
    seed: int | None = 0
    max_tokens: int = 1200
    prompt_version: str = PROMPT_VERSION
    rubric: str | None = None  # None: the rubric the study's experts score with
    vision: bool = False
    name: str = ""

    def __post_init__(self) -> None:
        if why := model_name_problem(self.model):
            raise UserError(f"grader model {self.model!r} {why} (a model name is 1-128 "
                            "printable characters, no surrounding blanks)")
        if self.name and (why := model_name_problem(self.name)):  # shown wherever configs are
            raise UserError(f"grader config name {self.name!r} {why} (1-128 printable "
                            "characters, no surrounding blanks)")


def _shown(value: object) -> str:
    return one_line(repr(value), 60)


def is_dated_snapshot(model: str) -> bool:
    """True for a pinned snapshot such as `gpt-4o-2024-08-06`; an alias may change under you."""
    return bool(_DATED.search(model))


MAX_CONFIG_BYTES = 64 * 2**10
_KINDS = {"temperature": ("a number", int | float), "seed": ("an integer", int),
          "max_tokens": ("an integer", int), "vision": ("true or false", bool)}
_TEXT = ("text", str)  # the other fields


def _is_kind(key: str, value: object) -> bool:
    """Is `value` of the field's type (TOML's true is no number)?"""
    kind = _KINDS.get(key, _TEXT)[1]
    return isinstance(value, kind) and (kind is bool or not isinstance(value, bool))


def _read_config(path: Path) -> dict:
    """The TOML table of a config file, at most `MAX_CONFIG_BYTES` of UTF-8."""
    try:
        raw = read_at_most(path, MAX_CONFIG_BYTES)
    except OSError as e:
        raise UserError(f"cannot read grader config {path}: {e.strerror}") from None
    if raw is None:
        raise UserError(f"{path}: is larger than {MAX_CONFIG_BYTES:,} bytes (a grader config)")
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise UserError(f"{path}: is not UTF-8 text") from None
    except tomllib.TOMLDecodeError as e:
        raise UserError(f"{path}: not valid TOML: {one_line(str(e), 200)}") from None
    except RecursionError:
        raise UserError(f"{path}: not valid TOML: nested too deeply") from None


def load_settings(path: Path | None = None, *, model: str | None = None,
                  base_url: str | None = None) -> GraderSettings:
    """Settings from a TOML file (or the defaults), with `--model` / `--base-url` applied."""
    data: dict = {}
    if path is not None:
        data = _read_config(path)
        known = {f.name: f.type for f in fields(GraderSettings)}
        for key, value in data.items():
            if key not in known:
                raise UserError(f"{path}: unknown field {_shown(key)} (known: {', '.join(known)})")
            if key == "model" and (why := model_name_problem(value)):
                raise UserError(f"{path}: model {_shown(value)} {why}")
            if not _is_kind(key, value):
                raise UserError(f"{path}: {key} must be {_KINDS.get(key, _TEXT)[0]}, got "
                                f"{_shown(value)}")
            if key == "prompt_version" and value not in PROMPTS:
                raise UserError(f"{path}: prompt_version {_shown(value)} is not one of "
                                f"{', '.join(PROMPTS)}")
    if model is not None:
        if not model.strip():
            raise UserError(f"--model {model!r}: give a model name, or leave --model out for "
                            f"the config's (default {DEFAULT_MODEL})")
        data["model"] = model
    if base_url is not None:
        if not base_url.strip():
            raise UserError(f"--base-url {base_url!r}: give a URL, or leave --base-url out for "
                            "the official API")
        data["base_url"] = base_url
    return GraderSettings(**data)


def config_hash(settings: GraderSettings, rubric_hash: str) -> str:
    content = {k: v for k, v in asdict(settings).items() if k not in ("name", "rubric")}
    content["rubric_hash"] = rubric_hash
    return hashlib.sha256(canonical_json(content).encode()).hexdigest()


IDENTITY_FIELDS = ("model", "temperature", "max_tokens", "prompt_version", "rubric_hash", "vision")


def grader_identity(config: GraderConfig) -> str:
    """sha256 of what makes a config a different grader: the model, the prompt version, the
    rubric and the sampling parameters but the seed (`IDENTITY_FIELDS`). Configs that differ
    only in their seed, display name or endpoint (`base_url`: where the same model is served)
    are the same grader, so they share one held-out look (`calibration.calibrate`)."""
    content = {k: getattr(config, k) for k in IDENTITY_FIELDS}
    return hashlib.sha256(canonical_json(content).encode()).hexdigest()


def store_config(s: Session, settings: GraderSettings, *, actor: str | None = None) -> GraderConfig:
    """The config row for these settings, added if new (an existing row is never changed; two
    sessions adding it at once take turns: the second finds the first's)."""
    rubric = (ensure_rubric(s, settings.rubric, actor=actor) if settings.rubric
              else rubric_in_force(s, actor=actor))
    digest = config_hash(settings, rubric.content_hash)
    q = select(GraderConfig).where(GraderConfig.config_hash == digest)
    row = s.exec(q).first()
    if row is None:
        take_turns(s, "grader.config")
        row = s.exec(q).first()
    if row is None:
        row = GraderConfig(
            config_hash=digest, name=settings.name or f"{settings.model} ({digest[:8]})",
            model=settings.model, base_url=settings.base_url, temperature=settings.temperature,
            seed=settings.seed, max_tokens=settings.max_tokens,
            prompt_version=settings.prompt_version, rubric_hash=rubric.content_hash,
            vision=settings.vision)
        s.add(row)
        s.flush()
        record(s, "grader.config", actor=actor, config=row.id, hash=digest, model=settings.model)
    return row


def get_config(s: Session, config_id: int) -> GraderConfig:
    row = s.get(GraderConfig, config_id)
    if row is None:
        raise UserError(f"no grader config with id {config_id}")
    return row
