"""The Neural-MedBench release format: its task files (splits), pictures as data URIs, caps.

A release is one JSON list per task file, each case `{"case_id", "text", "images": [data URI],
"questions": [{"question_number", "question_text"}]}` (docs/bundle-format.md, "Neural-MedBench
release files"). `db.release.reader` reads it, `db.release.export` writes it.
"""

import base64
import binascii
import re
from dataclasses import dataclass

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
