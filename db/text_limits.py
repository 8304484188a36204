"""How long text from outside may be, and which model names are accepted (one place for both).

Limits count characters (what `len` and Streamlit's `max_chars` count; a character is at most
4 bytes of UTF-8), so what one scoring page shows stays at most about 7.6 million characters,
far below the 200 MB a Streamlit message may hold (a 200 MiB record took the page down).
Bundle validation (`BUNDLE_FIELDS`, docs/bundle-format.md "Text limits"), the exam and scoring
pages and their data layer, and collection (a model's answer is a response: `ANSWER`) check
the same numbers. Pure: no database.
"""

import re
import unicodedata
from typing import Any

from errors import UserError

TITLE = 1_000  # a case's title, final diagnosis, each differential diagnosis
RECORD = 1_000_000  # a case's health record (`ehr`)
PROMPT = 100_000  # a task's prompt, each stage; reference lesion and reasoning; a description
ANSWER = 200_000  # a response's text and each turn: a bundle's, a model's, an exam answer
COMMENT = 10_000  # an expert's comment on a score
PATH = 1_000  # an image path in case.json
NAME = 256  # a bundle's name, an exam's name
SCORE_NAME = 128  # the name of a clinical score (`scores` keys)
MODEL_NAME = 128  # a model's name (see `model_name_problem`)
STAGES = 20  # stages of a level-3 task (so turns of a response)
DIFFERENTIAL = 50  # diagnoses in a reference differential
SCORES = 100  # clinical scores of a case

#: Bundle field (as validation names it, list positions as `[]`) -> (longest text of the field
#: or of each item, most items or entries; None: not a list or object).
BUNDLE_FIELDS: dict[str, tuple[int, int | None]] = {
    "name": (NAME, None),
    "description": (PROMPT, None),
    "title": (TITLE, None),
    "ehr": (RECORD, None),
    "scores": (SCORE_NAME, SCORES),  # the length of each score's name
    "series[].file": (PATH, None),
    "masks[].file": (PATH, None),
    "ground_truth.final_diagnosis": (TITLE, None),
    "ground_truth.differential": (TITLE, DIFFERENTIAL),
    "ground_truth.lesion": (PROMPT, None),
    "ground_truth.reasoning": (PROMPT, None),
    "prompt": (PROMPT, None),
    "stages": (PROMPT, STAGES),
    "text": (ANSWER, None),
    "turns": (ANSWER, STAGES),
}

#: What no database here stores as text: NUL (PostgreSQL refuses it), unpaired surrogates (not
#: UTF-8; only a `\ud800`-style JSON escape makes one).
UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def storable(text: str) -> str:
    """`text` with each `UNSTORABLE` character replaced by U+FFFD, the replacement character."""
    return UNSTORABLE.sub("\ufffd", text)


def too_long(what: str, text: str, limit: int) -> str | None:
    """"<what> is N characters, more than the limit of L" when `text` is longer, else None."""
    if len(text) <= limit:
        return None
    return f"{what} is {len(text):,} characters, more than the limit of {limit:,}"


def check_length(what: str, text: str, limit: int) -> None:
    """Raise UserError when `text` is longer than `limit` characters (what a person typed)."""
    if why := too_long(what, text, limit):
        raise UserError(why)


_KINDS = {"Cc": "control", "Cf": "format", "Zl": "separator", "Zp": "separator",
          "Zs": "space", "Cs": "surrogate", "Co": "private-use", "Cn": "unassigned"}


def describe_char(c: str) -> str:
    """"U+202E RIGHT-TO-LEFT OVERRIDE, a format character"."""
    name = unicodedata.name(c, "")
    kind = _KINDS.get(unicodedata.category(c), "non-printable")
    return f"U+{ord(c):04X}" + (f" {name}" if name else "") + f", a {kind} character"


def model_name_problem(name: Any, limit: int = MODEL_NAME) -> str | None:
    """Why `name` cannot be a model's name (or, with its `limit`, an exam's), or None.

    A model name is 1-128 characters without surrounding blanks, every one printable in the
    sense of `str.isprintable`: no control (Cc, such as a line break or tab), format (Cf, such
    as U+202E RIGHT-TO-LEFT OVERRIDE or a zero-width space), line or paragraph separator,
    other space than U+0020, surrogate, private-use or unassigned character. Such characters
    break the Markdown and CSV tables that show the name, or show it as another name.
    """
    if not isinstance(name, str):
        return "is not a string"
    if not name.strip():
        return "is empty"
    if len(name) > limit:
        return f"is longer than {limit} characters"
    bad = next((c for c in name if not c.isprintable()), None)
    if bad is not None:
        return f"contains {describe_char(bad)}"
    return "has blanks around it" if name != name.strip() else None
