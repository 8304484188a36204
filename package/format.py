"""A frozen grader package: grade new models without clinicians, and notice when the API drifts.
This module holds its format: the members, their caps, the manifest's digest, the verified
package (`Package`) and an answer to grade (`Answer`). `package.freeze` writes it,
`package.verify` checks it, `package.grade` and `package.canary` use it.

`freeze` writes one zip from a config whose held-out look passed under the registered protocol
(and was not revoked):

    manifest.json  format, tool version, config (every field and its hash), rubric hash, the
                   validating report's gate, the terms of the validation (the protocol's rule,
                   thresholds, interval level and looks, held-out items and cases, whether it
                   is weaker than the default: `calibration.terms`), every held-out look,
                   canary settings, and the sha256 of every other member
    seal.json      the sha256 of the manifest's fields (all but the member hashes): no field
                   stands outside the hashed evidence
    manifest.sig   `--sign KEY` only: the study key's Ed25519 signature of manifest.json
    rubric.toml    the rubric's source
    tasks.jsonl    every task with what the grader reads of its case (record, scores in their
                   stored order, reference answer)
    canary.jsonl   held-out items graded under the config: the response, the request hash and
                   the frozen answer (scores, model name returned, system fingerprint)
    protocol.json  the registered calibration protocol the look was judged under
    report.json    the validating calibration report; report.html the same with its figures
    images.jsonl   vision configs only: each case's key slices as the grader saw them (caption
                   and PNG sha256, in order); `--with-images` also carries the PNGs as
                   images/<sha256>.png, else `--images DIR` supplies them where the package
                   is used (any PNG files, matched by their sha256)
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any, TypeVar

from calibration.report import Report
from calibration.terms import TERMS_NOT_RECORDED, ValidationTerms
from db.models import (
    Case,
    GraderConfig,
    Task,
)
from errors import one_line
from llm.model_request import KeyImage
from package.members import (
    CaseRow,
    TaskRow,
)
from package.sign import SIGNATURE
from package.zip import Caps
from rubric import Rubric
from rubric.schema import canonical_json

FORMAT = "nmb-package-3"
CASE_FIELDS = tuple(CaseRow.model_fields)
TASK_FIELDS = tuple(k for k in TaskRow.model_fields if k != "case")
SEAL = "seal.json"  # the sha256 of the manifest's fields: a manifest-only edit breaks it
MEMBERS = ("rubric.toml", "tasks.jsonl", "canary.jsonl", "protocol.json", "report.json",
           "report.html", SEAL)
DRIFT_LIMITS = {"criteria_agreement_min": 0.9, "overall_mad_max": 0.05}
IMAGE_LIST = "images.jsonl"
MiB = 2**20
# Caps, read from the zip's central directory before a byte is inflated and held while reading.
MAX_MEMBER_BYTES = {"manifest.json": MiB, SEAL: 4096, "rubric.toml": MiB, "protocol.json": MiB,
                    "report.json": 16 * MiB, "report.html": 32 * MiB, "tasks.jsonl": 64 * MiB,
                    "canary.jsonl": 32 * MiB, IMAGE_LIST: 8 * MiB, SIGNATURE: 1024}
MAX_IMAGE_BYTES = 8 * MiB  # one key slice's PNG
# The images one request carries (a case's, as listed: one image may be listed again), each
# sent as a data URL a third larger: a case of 1,000 listings of an 8 MiB image was 11 GB.
MAX_CASE_IMAGES = 500
MAX_CASE_IMAGE_BYTES = 64 * MiB
MAX_TOTAL_BYTES = 192 * MiB  # all members inflated; also all images supplied with --images
MAX_PACKAGE_BYTES = MAX_TOTAL_BYTES + 8 * MiB  # the file (deflate never grows much)
MAX_MEMBERS = 4096
MAX_SUPPLIED_IMAGES = 100_000  # PNG files looked at in an --images folder
# Arrays, objects and items in all the JSON members together, counted before any is parsed
# (`llm.http_client.json_values`): 64 MiB of `[],[],...` within the caps is 22 million lists
# (1.9 GB). A package holds about 15 per task and canary item and some 3,500 in its report.
MAX_JSON_VALUES = 1_000_000
MAX_RETURNED = 1_000  # characters of a model name or fingerprint read back from a progress file
RETURNED = ("model_returned", "system_fingerprint", "cost_usd")  # what the server said, by row
T = TypeVar("T")
HEX64 = re.compile(r"[0-9a-f]{64}")
IMAGE_MEMBER = re.compile(r"images/([0-9a-f]{64})\.png")


def member_cap(name: str) -> int | None:
    """The byte cap of a package member, None for a name no package holds."""
    if IMAGE_MEMBER.fullmatch(name):
        return MAX_IMAGE_BYTES
    return MAX_MEMBER_BYTES.get(name)


ZIP_CAPS = Caps(member_cap=member_cap, max_members=MAX_MEMBERS, max_total_bytes=MAX_TOTAL_BYTES,
                max_directory_bytes=MAX_MEMBERS * 256)


def manifest_digest(manifest: dict[str, Any]) -> str:
    """The sha256 of every manifest field but the member hashes (which the members check), as
    canonical JSON: what `seal.json` records, so every field is bound to hashed evidence."""
    fields = {k: v for k, v in manifest.items() if k != "sha256"}
    return hashlib.sha256(canonical_json(fields).encode()).hexdigest()


@dataclass
class Package:
    manifest: dict[str, Any]
    config: GraderConfig  # unsaved: the frozen fields
    rubric: Rubric
    tasks: dict[str, tuple[Task, Case]]
    canary: list[dict[str, Any]]
    report: Report
    sha256: str  # of the package file, as checked
    images: dict[str, list[KeyImage]]  # vision configs: each case's key slices, else empty
    signer: str | None = None  # the --public-key line whose signature was checked
    terms: ValidationTerms | None = None  # None: frozen before packages recorded them

    def terms_json(self) -> dict[str, Any]:
        """The validation's terms as verify, grade and canary print them."""
        t = self.terms
        return {"validation_terms": t.text() if t else TERMS_NOT_RECORDED,
                "weaker_than_default": t.weaker_text() if t else None}


@dataclass(frozen=True)
class Answer:
    """A response to grade, as a package reads it: a model's (`model` its name, or none), or an
    exam taker's (`source` the taker's role, `user` the person, as `nmb export responses`
    writes them)."""

    response_id: str
    task_id: str
    text: str
    turns: list[str] = field(default_factory=list)
    model: str | None = None
    source: str = "model"
    user: str | None = None

    @property
    def key(self) -> str:
        """The sha256 of every field: a response edited since its grade no longer matches it."""
        fields = [self.response_id, self.task_id, self.text, self.turns, self.model, self.source,
                  self.user]
        return hashlib.sha256(json.dumps(fields).encode()).hexdigest()


def tool_version() -> str:
    try:
        return metadata.version("neural-medbench-studio")
    except metadata.PackageNotFoundError:
        return "unknown"

def quoted(text: Any) -> str:
    """A value from a package or a responses file as a refusal quotes it: its start, escaped
    (a line break or a terminal's escape code would forge output)."""
    return one_line(repr(str(text)[:80]), 90)
