"""Load rubric files (TOML) into `Rubric` objects; a bad file is a one-line `UserError`."""

from __future__ import annotations

import tomllib
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from errors import UserError, read_at_most
from rubric.schema import Rubric

BUNDLED_DIR = "rubrics"
# The rubric of a new study: `nmb assign --rubric`'s default, the rubric in force before any
# assignment, a grader config's and the demo's. A study assigned with neurology-v1 keeps it
# (`db.rubrics.rubric_in_force`); the file itself stays as published.
DEFAULT_RUBRIC = "neurology-v1.1"
MAX_RUBRIC_BYTES = 2**20  # neurology-v1 is 12 KB


def bundled_rubrics() -> list[str]:
    """Names of the rubrics shipped in `rubric/rubrics/` (file stems), sorted."""
    folder = resources.files("rubric") / BUNDLED_DIR
    return sorted(p.name[: -len(".toml")] for p in folder.iterdir() if p.name.endswith(".toml"))


def load_rubric(name_or_path: str | Path) -> Rubric:
    """A bundled rubric by name (e.g. "neurology-v1") or a rubric file by path."""
    text_name = str(name_or_path)
    is_path = isinstance(name_or_path, Path) or text_name.endswith(".toml") or "/" in text_name
    if not is_path:
        if text_name not in bundled_rubrics():
            raise UserError(
                f"unknown rubric {text_name!r} (bundled: {', '.join(bundled_rubrics())}; "
                "or give the path of a .toml file)"
            )
        resource = resources.files("rubric") / BUNDLED_DIR / f"{text_name}.toml"
        rubric = loads_rubric(resource.read_text(encoding="utf-8"), source=f"{text_name}.toml")
        if rubric.id != text_name:
            raise UserError(f"{text_name}.toml: id: expected {text_name!r}, got {rubric.id!r}")
        return rubric
    path = Path(name_or_path)
    try:
        data = read_at_most(path, MAX_RUBRIC_BYTES)
    except FileNotFoundError:
        raise UserError(f"{path}: rubric file not found") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot read rubric file ({exc})") from None
    if data is None:
        raise UserError(f"{path}: is larger than {MAX_RUBRIC_BYTES:,} bytes (a rubric file)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(f"{path}: cannot read rubric file ({exc})") from None
    return loads_rubric(text, source=path.name)


def loads_rubric(text: str, *, source: str = "<rubric>") -> Rubric:
    """A rubric from TOML text (e.g. `source_text` stored in the database).

    `source` names the file in error messages: `<source>: <field path>: <problem>`.
    """
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"{source}: invalid TOML: {exc}") from None
    except RecursionError:
        raise UserError(f"{source}: invalid TOML: nested too deeply") from None
    try:
        rubric = Rubric.model_validate(raw)
    except ValidationError as exc:
        raise UserError(f"{source}: {describe_validation_error(exc)}") from None
    rubric._raw = raw
    rubric._source_text = text
    return rubric


def _path(loc: tuple[str | int, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def describe_validation_error(exc: ValidationError) -> str:
    """The first error as `field.path: problem (got value)`, plus a count of the others."""
    errors = exc.errors(include_url=False)
    first = errors[0]
    # Model validators raise "field.path: problem", relative to the model at `loc`.
    loc = tuple(first["loc"])
    kind = first["type"]
    msg = first["msg"]
    if kind == "value_error":
        msg = msg.removeprefix("Value error, ")
        head, sep, rest = msg.partition(": ")
        path = _path(loc)
        if sep and " " not in head:
            path = f"{path}.{head}" if path and not head.startswith("[") else path + head
            msg = rest
        text = f"{path}: {msg}" if path else msg
    elif kind == "missing":
        text = f"{_path(loc)}: required field missing"
    elif kind == "extra_forbidden":
        text = f"{_path(loc)}: unknown field"
    else:
        text = f"{_path(loc)}: {msg} (got {_short(first.get('input'))})"
    if len(errors) > 1:
        text += f" (and {len(errors) - 1} more error{'s' if len(errors) > 2 else ''})"
    return text
