"""The Neural-MedBench release format: its task files (splits), pictures as data URIs, caps.

A release is one JSON list per task file, each case `{"case_id", "text", "images": [data URI],
"questions": [{"question_number", "question_text"}]}` (docs/bundle-format.md, "Neural-MedBench
release files"); a multi-round file may instead hold `"dialogue": [{"round", "information",
"question"}]`, and any other field names are read through a field map (`--map`, `Shape`).
`db.release.reader` reads it, `db.release.export` writes it.
"""

import base64
import binascii
import json
import re
from dataclasses import dataclass, replace
from pathlib import Path

from errors import UserError, not_a_file, one_line, read_at_most
from imaging.picture import sniff

#: A release file larger than this is refused before it is read (as any bundle JSON file).
MAX_RELEASE_FILE_BYTES = 512 * 2**20
#: Cases in one release file.
MAX_CASES = 20_000
#: Images in one case.
MAX_IMAGES_PER_CASE = 64
#: Characters of one image's data URI (about 48 MiB of picture), checked before decoding.
MAX_DATA_URI_CHARS = 64 * 2**20
#: An answer key larger than this is refused before it is read.
MAX_ANSWERS_FILE_BYTES = 64 * 2**20
SEQUENCE = "Image {n}"  # the series label of a case's n-th image (the release has none)
_WHITESPACE = re.compile(r"[ \t\r\n]+")


@dataclass(frozen=True)
class Split:
    """One task file of the release and what its cases become in the study."""

    file: str  # the published file name
    prefix: str  # of the study's case ids: "direct" -> "direct-case_1"
    family: str
    level: int
    published: bool = True  # a file of the release: its case numbers name patients across files

    @property
    def stem(self) -> str:
        return self.file.removesuffix(".json")


#: The documented mapping (docs/bundle-format.md); `--family` and `--level` override it.
SPLITS = (
    Split("direct-diagnosis.json", "direct", "differential", 1),
    Split("complex-diseases.json", "complex", "differential", 2),
    Split("multi-round-dialogue.json", "dialogue", "differential", 3),
)
BY_FILE = {sp.file: sp for sp in SPLITS}
BY_LEVEL = {sp.level: sp for sp in SPLITS}
#: The patient of a published case: one case number in several release files is one patient
#: (`Case.patient`; direct-diagnosis and multi-round describe the same patient under it).
PATIENT = "neural-medbench:{case_id}"


@dataclass(frozen=True)
class Shape:
    """The field names of a release file's cases and of their questions (the rounds of a
    multi-round case), as the file writes them."""

    case_id: str = "case_id"
    text: str = "text"
    images: str = "images"
    questions: str = "questions"
    question: str = "question_text"
    information: str | None = "information"  # a round's revealed text (multi-round only)
    number: str | None = "question_number"  # None: the listed order
    # question numbers count through the file (the release), or rise within a case (rounds)
    numbered_per_file: bool = True
    name: str = "release"

    @property
    def case_fields(self) -> tuple[str, ...]:
        return (self.case_id, self.text, self.images, self.questions)

    def question_fields(self, rounds: bool) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(required, allowed) fields of a question."""
        required = ((self.number,) if self.number else ()) + (self.question,)
        extra = (self.information,) if rounds and self.information else ()
        return required, required + extra

    def describe(self, rounds: bool) -> str:
        """"cases of case_id, text, images, questions; questions of question_number,
        question_text" (and, for rounds, the optional information)."""
        required, allowed = self.question_fields(rounds)
        optional = [f for f in allowed if f not in required]
        return (f"cases of {', '.join(self.case_fields)}; {self.questions} of "
                f"{', '.join(required)}" + (f" and, optionally, {', '.join(optional)}"
                                            if optional else ""))


RELEASE = Shape()
#: The multi-round file as `dialogue: [{round, information, question}]`, rounds in order.
DIALOGUE = Shape(questions="dialogue", question="question", number="round",
                 numbered_per_file=False, name="dialogue")
MAX_MAP_BYTES = 64 * 2**10
_MAPPABLE = ("case_id", "text", "images", "questions", "question", "information", "number")


def read_field_map(path: Path) -> Shape:
    """The shape a field map (`--map FILE.json`) describes: `{"case_id": "id", "questions":
    "turns", "question": "ask", "number": null, ...}`, each key a field this tool reads and its
    value the file's name for it (`number` and `information` may be null: the listed order,
    nothing revealed); fields not named keep the release's names. UserError (one line naming
    the file and key) otherwise."""
    label = f"--map {path}"
    if not path.is_file():
        raise UserError(f"{label}: {not_a_file(path)}")
    data = read_at_most(path, MAX_MAP_BYTES)
    if data is None:
        raise UserError(f"{label}: more than {MAX_MAP_BYTES:,} bytes (a field map is small)")
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise UserError(f"{label}: not JSON ({one_line(str(e), 120)})") from None
    if not isinstance(value, dict) or not value:
        raise UserError(f'{label}: not a JSON object of field names (e.g. {{"questions": '
                        '"dialogue", "question": "question", "number": "round"}})')
    for key, name in value.items():
        if key not in _MAPPABLE:
            raise UserError(f"{label}: {one_line(repr(key), 60)} is not a field this tool reads "
                            f"({', '.join(_MAPPABLE)})")
        if name is None and key in ("number", "information"):
            continue
        if not isinstance(name, str) or not name.strip() or len(name) > 100:
            raise UserError(f"{label}: {key}: {one_line(json.dumps(name), 60)} is not a field "
                            "name (1-100 characters" + (", or null" if key in (
                                "number", "information") else "") + ")")
    shape = replace(RELEASE, **value, numbered_per_file=False, name="--map")
    case_level = [getattr(shape, f) for f in ("case_id", "text", "images", "questions")]
    question_level = [n for n in (shape.question, shape.information, shape.number) if n]
    for names in (case_level, question_level):
        if twice := next((n for n in names if names.count(n) > 1), None):
            raise UserError(f"{label}: {twice!r} names two fields")
    return shape


#: What a sniffed picture format (`imaging.picture.sniff`: bytes decide, labels are ignored)
#: is called in a data URI and as a file.
_TYPES = {"PNG": ("image/png", ".png"), "JPEG": ("image/jpeg", ".jpg"),
          "WEBP": ("image/webp", ".webp")}


def picture_type(head: bytes) -> tuple[str, str] | None:
    """(MIME type, suffix) of a PNG, JPEG or WebP picture from its first 16 bytes, else None."""
    return _TYPES.get(sniff(head) or "")


def decode_data_uri(uri: str) -> tuple[str, bytes]:
    """(the MIME label as written, the decoded bytes) of a base64 data URI; ValueError saying
    what is wrong otherwise. The length is checked before anything is decoded."""
    if len(uri) > MAX_DATA_URI_CHARS:
        raise ValueError(f"is a data URI of {len(uri):,} characters, more than the limit of "
                         f"{MAX_DATA_URI_CHARS:,}")
    if not uri[:5].lower() == "data:":
        raise ValueError(f"is not a data URI (it starts with {uri[:12]!r})")
    head, comma, payload = uri.partition(",")
    params = head[5:].split(";")
    if not comma or "base64" not in (p.strip().lower() for p in params[1:]):
        raise ValueError("is not a base64 data URI (data:<type>;base64,<data>)")
    try:
        data = base64.b64decode(_WHITESPACE.sub("", payload), validate=True)
    except (binascii.Error, ValueError) as e:
        raise ValueError(f"is not valid base64 ({e})") from None
    return params[0].strip().lower(), data


def encode_data_uri(data: bytes, mime: str) -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"
