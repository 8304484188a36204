"""Frozen grader packages: grade new models without clinicians, and notice when the API drifts.

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

`verify` checks a package offline (no study, no network) before anything else uses it: the zip
within its caps (`package.zip`: counted and sized from the central directory, then
streamed), exactly these members, each matching its sha256, every manifest field of its type
and sealed, the rubric and config hashes recomputed from their content, the report and protocol
consistent with the manifest, every canary request rebuilt byte-identical (the same
`llm.grader_request.grade_request` as the study) and, given the digest the authors published
or the study's public key, the file's own sha256 or the signature. Without either, a package
is proven internally consistent, not authored: anyone can build a consistent one.

`grade_responses` builds the grader's exact requests from the package alone; `canary` sends the
canary requests again and compares the answers with the frozen ones. At temperature 0 with a
fixed seed a model that has not changed answers nearly the same; OpenAI documents `seed` as
best-effort determinism and `system_fingerprint` as the backend configuration that affects it,
so both a changed fingerprint and changed scores are reported. A package is untrusted input:
requests go to the official API (or the user's OPENAI_BASE_URL), or to `--base-url` given on
the command line, never to an address the package names.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import os
import random
import re
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, TypeVar, get_args

from sqlmodel import Session, select

from calibration import protocol as calibration_protocol
from calibration.calibrate import frozen_look, looks
from calibration.report import Report
from calibration.terms import TERMS_NOT_RECORDED, ValidationTerms
from db.audit import record
from db.bundle.images import sha256_file
from db.bundle.records import over_limit
from db.files import new_partial
from db.models import (
    CalibrationItem,
    CalibrationProtocol,
    CalibrationReport,
    Case,
    FrozenPackage,
    GraderConfig,
    GraderScore,
    Response,
    ResponseSource,
    Task,
    utcnow,
)
from db.rubrics import rubric_by_hash
from db.study.reference import has_reference
from db.text_limits import model_name_problem
from errors import UserError, one_line, read_at_most
from grading.config import GraderSettings, config_hash, get_config
from llm.call import CallResult, load_prices, run_bounded
from llm.grader_request import (
    Answered,
    GradeItem,
    api_key_for,
    grade_request,
    grader_call,
    make_client,
)
from llm.model_request import KeyImage, image_parts
from package.members import (
    MAX_CANARY_ITEMS,
    CanaryRow,
    CaseImages,
    CaseRow,
    Config,
    Frozen,
    Manifest,
    Protocol,
    ReportHead,
    Seal,
    TaskRow,
    checked,
)
from package.progress import Progress
from package.report_page import page_problem
from package.sign import SIGNATURE, load_private, load_public, public_line, sign
from package.sign import signed_by as signature_problem
from package.zip import Caps, read_members
from results.bertscore import final_answer, reference_text
from results.judgments import grade_judgment
from results.leaderboard import summarize
from rubric import Rubric
from rubric.loader import loads_rubric
from rubric.render import Asked, parse_grader_output
from rubric.schema import canonical_json
from rubric.scoring import validate_score

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
_HEX64 = re.compile(r"[0-9a-f]{64}")
_IMAGE_MEMBER = re.compile(r"images/([0-9a-f]{64})\.png")


def member_cap(name: str) -> int | None:
    """The byte cap of a package member, None for a name no package holds."""
    if _IMAGE_MEMBER.fullmatch(name):
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


# ---------------------------------------------------------------- freeze


def _canary_items(s: Session, config: GraderConfig, size: int, seed: int) -> list[dict]:
    """Up to `size` held-out calibration items with a valid grade under the config, drawn with
    `seed` from those sorted by response id."""
    rows = s.exec(select(GraderScore, Response)
                  .join(CalibrationItem, CalibrationItem.response_id == GraderScore.response_id)
                  .join(Response, Response.response_id == GraderScore.response_id)
                  .where(GraderScore.config_id == config.id, CalibrationItem.part == "heldout")
                  .order_by(GraderScore.response_id)).all()
    chosen = random.Random(seed).sample(rows, min(size, len(rows)))
    return [{"response_id": r.response_id, "task_id": r.task_id, "text": r.text,
             "turns": r.turns, "request_hash": g.request_hash,
             "frozen": {k: getattr(g, k) for k in Frozen.model_fields},
             "model_returned": g.model_returned, "system_fingerprint": g.system_fingerprint}
            for g, r in sorted(chosen, key=lambda row: row[0].response_id)]


def _jsonl(rows: list[dict]) -> bytes:
    """One JSON object per line, keys in their stored order: a case's test scores are listed in
    the prompt in this order, so sorting them would change the requests."""
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode()


def _gate_summary(report: Report) -> dict[str, Any]:
    return {g.name: {"value": g.value, "threshold": g.threshold, "passed": g.passed,
                     "required": g.required} for g in report.gate}


def _key_image_members(s: Session, case_ids: list[str], carry: bool) -> dict[str, bytes]:
    """images.jsonl (each case's key slices: caption and sha256) and, when `carry`, the PNGs."""
    from llm.key_images import key_images  # lazy: imaging is needed for vision only

    rows, pngs = [], {}
    for case_id in case_ids:
        listed = []
        for image in key_images(s, s.get(Case, case_id)):
            listed.append({"caption": image.caption, "sha256": image.sha256})
            pngs[f"images/{image.sha256}.png"] = image.png
        rows.append({"case_id": case_id, "images": listed})
    return {IMAGE_LIST: _jsonl(rows), **(pngs if carry else {})}


def _check_caps(out: Path, members: dict[str, bytes]) -> None:
    """Refuse to write a package that `verify` would refuse for its size."""
    if len(members) > MAX_MEMBERS:
        raise UserError(f"{out}: the package would hold {len(members)} members, more than "
                        f"{MAX_MEMBERS} (freeze without --with-images)")
    for name, data in members.items():
        if len(data) > (cap := member_cap(name) or 0):
            raise UserError(f"{out}: {name} would be {len(data)} bytes, more than its cap {cap}")
    if (total := sum(map(len, members.values()))) > MAX_TOTAL_BYTES:
        raise UserError(f"{out}: the package would inflate to {total} bytes, more than "
                        f"{MAX_TOTAL_BYTES} (freeze without --with-images)")


def freeze(s: Session, *, config_id: int, out: Path, canary_size: int = 20, seed: int = 0,
           with_images: bool = False, sign_with: Path | None = None,
           actor: str | None = None) -> FrozenPackage:
    """Write the package of a validated config to `out` (a new .zip) and record it; with
    `sign_with` (a study key from `nmb package keygen`) the manifest is signed."""
    key = load_private(sign_with) if sign_with is not None else None
    config = get_config(s, config_id)
    look = frozen_look(s, config_id=config_id)
    if with_images and not config.vision:
        raise UserError(f"--with-images: grader config {config_id} sends no images")
    if not 1 <= canary_size <= MAX_CANARY_ITEMS:
        raise UserError(f"--canary must be 1-{MAX_CANARY_ITEMS}, got {canary_size}")
    if out.exists():
        raise UserError(f"{out} exists; give a new file name")
    if out.suffix != ".zip":
        raise UserError(f"{out}: a package is a .zip file")
    row = s.get(CalibrationReport, look.report_id)
    report = Report.from_json(row.results)
    proto = s.get(CalibrationProtocol, look.protocol_id)
    canary = _canary_items(s, config, canary_size, seed)
    if not canary:
        raise UserError(f"grader config {config_id} has no graded held-out items for a canary")
    rubric = rubric_by_hash(s, config.rubric_hash)
    cases = {c.case_id: c for c in s.exec(select(Case))}
    tasks = [{**{k: getattr(t, k) for k in TASK_FIELDS},
              "case": {k: getattr(cases[t.case_id], k) for k in CASE_FIELDS}}
             for t in s.exec(select(Task).order_by(Task.task_id))
             if has_reference(cases[t.case_id].ground_truth)]  # a package grades: answers only
    members = {"rubric.toml": rubric.source_text.encode(), "tasks.jsonl": _jsonl(tasks),
               "canary.jsonl": _jsonl(canary),
               "protocol.json": json.dumps({"id": proto.id, "sha256": proto.content_hash,
                                            "content": proto.content}, indent=1).encode(),
               "report.json": json.dumps({"id": row.id, **report.to_json()}, indent=1).encode(),
               "report.html": (row.html or "").encode()}
    if config.vision:
        members |= _key_image_members(s, sorted({t["case_id"] for t in tasks}), with_images)
    manifest = {
        "format": FORMAT, "created_at": utcnow().isoformat(), "tool_version": tool_version(),
        "config": {k: getattr(config, k) for k in Config.model_fields},
        "rubric": {"id": rubric.id, "version": rubric.version, "hash": rubric.content_hash},
        "report": {"id": row.id, "part": row.part, "protocol_id": proto.id,
                   "protocol_sha256": proto.content_hash, "data_sha256": row.data_hash,
                   "passed": report.passed, "gate": _gate_summary(report)},
        "validation_terms": ValidationTerms.of(
            calibration_protocol.Protocol.from_row(proto)).to_json(),
        "heldout_looks": [{"config_id": x.config_id, "passed": x.passed, "revoked": x.revoked}
                          | ({"suspended": True} if x.suspended else {}) for x in looks(s)],
        "canary": {"items": len(canary), "seed": seed, "drift_limits": DRIFT_LIMITS},
    }
    manifest = json.loads(json.dumps(manifest, default=str))  # as verify will read it
    members[SEAL] = json.dumps({"manifest_sha256": manifest_digest(manifest)}).encode()
    manifest["sha256"] = {name: hashlib.sha256(data).hexdigest() for name, data in members.items()}
    manifest_bytes = json.dumps(manifest, indent=2).encode()
    if key is not None:  # not in the manifest's sha256: it signs the manifest
        members[SIGNATURE] = sign(key, manifest_bytes)
    _check_caps(out, {"manifest.json": manifest_bytes, **members})
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = new_partial(out)
    try:
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as zf:
            zf.writestr("manifest.json", manifest_bytes)
            for name, data in members.items():
                zf.writestr(name, data)
        digest = sha256_file(partial)
        frozen = FrozenPackage(config_id=config.id, report_id=row.id, sha256=digest,
                               path=str(out.resolve()), canary=manifest["canary"])
        s.add(frozen)
        s.flush()
        record(s, "package.freeze", actor=actor, config=config.id, package=frozen.id,
               sha256=digest, signed_by=public_line(key.public_key()) if key else None)
        os.replace(partial, out)
        s.commit()
    except BaseException:  # neither a file without its row nor a row without its file
        s.rollback()
        for leftover in (partial, out):
            leftover.unlink(missing_ok=True)
        raise
    return frozen


# ---------------------------------------------------------------- verify


def _refuse(path: Path, what: str) -> UserError:
    return UserError(f"{path}: {what}")


def _quoted(text: Any) -> str:
    """A value from a package or a responses file as a refusal quotes it: its start, escaped
    (a line break or a terminal's escape code would forge output)."""
    return one_line(repr(str(text)[:80]), 90)


def _json(path: Path, name: str, data: bytes) -> Any:
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise _refuse(path, f"{name} is not valid JSON ({type(e).__name__})") from None


def _config(path: Path, manifest: dict) -> GraderConfig:
    """The frozen config (its fields checked with the manifest), matching its config_hash."""
    cfg = manifest["config"]
    settings = GraderSettings(**{k: cfg[k] for k in ("model", "base_url", "temperature", "seed",
                                                     "max_tokens", "prompt_version", "vision")})
    if config_hash(settings, cfg["rubric_hash"]) != cfg["config_hash"]:
        raise _refuse(path, "manifest.json config does not match its config_hash")
    return GraderConfig(**cfg)


def _lines(path: Path, name: str, data: bytes) -> list[Any]:
    rows = []
    for n, line in enumerate(data.decode("utf-8", errors="strict").splitlines(), 1):
        try:
            rows.append(json.loads(line))
        except (ValueError, RecursionError):
            raise _refuse(path, f"{name} line {n} is not valid JSON") from None
    return rows


def _task(path: Path, n: int, row: Any) -> tuple[Task, Case]:
    checked(path, f"tasks.jsonl line {n}", row, TaskRow)
    return Task(**{k: row[k] for k in TASK_FIELDS}), Case(**row["case"])


def _open(path: Path, sha256: str | None) -> tuple[str, dict[str, bytes]]:
    """The file's sha256 and its members, read under the caps from one open file (streamed:
    neither the file nor a member is ever read whole beyond its cap)."""
    if path.exists() and not path.is_file():  # a folder, or a FIFO that would block open()
        raise _refuse(path, "not a file")
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size > MAX_PACKAGE_BYTES:
                raise _refuse(path, f"larger than {MAX_PACKAGE_BYTES} bytes: not a package")
            digest = hashlib.file_digest(fh, "sha256").hexdigest()
            if sha256 is not None and digest != sha256.lower():
                raise _refuse(path, f"sha256 is {digest}, not the published {sha256.lower()}")
            try:
                return digest, read_members(fh, size, ZIP_CAPS)
            except UserError as e:
                raise _refuse(path, str(e)) from None
    except OSError as e:
        raise _refuse(path, f"cannot read ({e.strerror})") from None


def _check_json_values(path: Path, members: dict[str, bytes]) -> None:
    """Refuse JSON members that would parse into more than MAX_JSON_VALUES objects in all."""
    from llm.http_client import json_values  # lazy: verify needs no HTTP client

    total = 0
    for name in sorted(n for n in members if n.endswith((".json", ".jsonl"))):
        total += json_values(members[name])
        if total > MAX_JSON_VALUES:
            raise _refuse(path, f"its JSON members hold more than {MAX_JSON_VALUES:,} values "
                          f"(arrays, objects and items; {name} reaches it): not parsed")


def _manifest(path: Path, members: dict[str, bytes]) -> dict[str, Any]:
    """The manifest: its format, exactly its fields, each of its type (`Manifest`), and the
    members' hashes (the seal is checked last, so a field edited alone is refused)."""
    if absent := sorted({"manifest.json", *MEMBERS} - set(members)):
        raise _refuse(path, f"member {absent[0]!r} is missing")
    manifest = _json(path, "manifest.json", members["manifest.json"])
    if isinstance(manifest, dict) and manifest.get("format") != FORMAT:
        hint = " (made by an older version: freeze it again)" if manifest.get("format") in (
            "nmb-package-1", "nmb-package-2") else ""
        raise _refuse(path, f"format {str(manifest.get('format'))[:40]!r}, expected {FORMAT!r}{hint}")
    checked(path, "manifest.json", manifest, Manifest)
    if set(manifest["sha256"]) != set(members) - {"manifest.json", SIGNATURE}:
        raise _refuse(path, "manifest.json sha256 does not list exactly the package's members")
    for name, digest in manifest["sha256"].items():
        if hashlib.sha256(members[name]).hexdigest() != digest:
            raise _refuse(path, f"{name} does not match its sha256 in manifest.json")
    standing = [x["config_id"] for x in manifest["heldout_looks"] if "suspended" not in x]
    if len(set(standing)) != len(standing):  # a config looks again only after a suspension
        raise _refuse(path, "manifest.json heldout_looks lists a config twice")
    return manifest


def _check_seal(path: Path, manifest: dict, members: dict[str, bytes]) -> None:
    """Last: a manifest edit that every other check let through (a time, a seed, limits still
    in range) is refused here."""
    seal = checked(path, SEAL, _json(path, SEAL, members[SEAL]), Seal)
    if seal.manifest_sha256 != manifest_digest(manifest):
        raise _refuse(path, f"manifest.json was edited after freeze (its fields do not match "
                      f"the sha256 in {SEAL})")


def verify(path: Path, *, sha256: str | None = None, images: Path | None = None,
           public_key: Path | None = None) -> Package:
    """Open and check a package offline (see the module docstring); one-line refusals.
    `images`: a folder holding the key slice PNGs a vision package lists but does not carry;
    `public_key`: a study's public key (`nmb package keygen`) that must have signed it."""
    if sha256 is not None and not _HEX64.fullmatch(sha256.lower()):
        raise UserError(f"--sha256 must be 64 hexadecimal digits, got {sha256!r}")
    key = load_public(public_key) if public_key is not None else None
    digest, members = _open(path, sha256)
    _check_json_values(path, members)
    if key is not None and "manifest.json" in members and (
            problem := signature_problem(key, members["manifest.json"], members.get(SIGNATURE))):
        raise _refuse(path, problem)
    manifest = _manifest(path, members)
    config = _config(path, manifest)
    try:
        rubric_text = members["rubric.toml"].decode("utf-8")
    except UnicodeDecodeError:
        raise _refuse(path, "rubric.toml is not UTF-8 text") from None
    rubric = loads_rubric(rubric_text, source=f"{path}:rubric.toml")
    if rubric.content_hash != config.rubric_hash:
        raise _refuse(path, "rubric.toml is not the rubric the config was validated with")
    if manifest["rubric"]["hash"] != rubric.content_hash:
        raise _refuse(path, "manifest.json rubric.hash differs from rubric.toml's")
    if (manifest["rubric"]["id"], manifest["rubric"]["version"]) != (rubric.id, rubric.version):
        raise _refuse(path, "manifest.json rubric id or version differs from rubric.toml's")
    report, terms = _report(path, manifest, members, config)
    try:
        page = members["report.html"].decode("utf-8")
    except UnicodeDecodeError:
        raise _refuse(path, "report.html is not UTF-8 text") from None
    if why := page_problem(page):
        raise _refuse(path, f"report.html holds {why}: a report page holds text, tables and "
                      "PNG figures only")
    try:
        tasks = {}
        for n, row in enumerate(_lines(path, "tasks.jsonl", members["tasks.jsonl"]), 1):
            task, case = _task(path, n, row)
            if task.family not in rubric.family_keys:  # grade would refuse it
                raise _refuse(path, f"tasks.jsonl line {n}: family {_quoted(task.family)} is "
                              "not one of rubric.toml's")
            tasks[task.task_id] = (task, case)
        canary = _lines(path, "canary.jsonl", members["canary.jsonl"])
        for n, row in enumerate(canary, 1):
            checked(path, f"canary.jsonl line {n}", row, CanaryRow)
    except UnicodeDecodeError:
        raise _refuse(path, "a JSONL member is not UTF-8 text") from None
    if manifest["canary"]["items"] != len(canary) or not canary:
        raise _refuse(path, "manifest.json canary.items is not the number of canary.jsonl lines")
    key_images = _case_images(path, members, config, {c.case_id for _, c in tasks.values()},
                              images)
    pkg = Package(manifest, config, rubric, tasks, canary, report, digest, key_images,
                  signer=public_line(key) if key is not None else None, terms=terms)
    for c in canary:
        item = request_for(pkg, _canary_answer(c))
        if item.request_hash != c["request_hash"]:
            raise _refuse(path, f"canary item {_quoted(c['response_id'])}: the request this "
                          "tool builds differs from the one that was validated")
        if why := _frozen_problem(rubric, tasks[c["task_id"]][0].family, c["frozen"]):
            raise _refuse(path, f"canary item {_quoted(c['response_id'])}: its frozen grade "
                          f"{why}")
    _check_seal(path, manifest, members)
    return pkg


def _frozen_problem(rubric: Rubric, family: str, frozen: dict[str, Any]) -> str | None:
    """Why a canary item's frozen grade is not one the rubric gives for its family (its
    criteria and levels, error classes, and the overall score of those levels), or None. A
    lying grade would blind the drift check: without levels, their agreement is unmeasured."""
    score = {k: frozen[k] for k in ("criteria", "correct_diagnosis", "error_tags")}
    try:
        clean = validate_score(rubric, score | {"comment": "frozen"}, family=family,
                               require_confidence=False)
    except UserError as e:
        return f"is not one of the rubric's ({one_line(str(e), 200)})"
    if clean["criteria"] != frozen["criteria"] or clean["error_tags"] != frozen["error_tags"]:
        return "does not list exactly the levels and error classes of its task's family"
    if not math.isclose(clean["overall"], frozen["overall"], rel_tol=1e-9, abs_tol=1e-12):
        return f"has overall {frozen['overall']!r}, not its levels' {clean['overall']!r}"
    return None


def _supplied_images(folder: Path, wanted: set[str]) -> dict[str, bytes]:
    """The PNG files in `folder` whose sha256 is in `wanted` (others are ignored)."""
    found: dict[str, bytes] = {}
    try:
        files = sorted(p for p in folder.iterdir() if p.suffix == ".png" and p.is_file())
    except OSError as e:
        raise UserError(f"--images {folder}: cannot read ({e.strerror})") from None
    total = 0
    for png in files[:MAX_SUPPLIED_IMAGES]:
        if png.stat().st_size <= MAX_IMAGE_BYTES:
            data = png.read_bytes()[:MAX_IMAGE_BYTES + 1]
            if (h := hashlib.sha256(data).hexdigest()) in wanted and h not in found:
                found[h] = data
                total += len(data)
                if total > MAX_TOTAL_BYTES:
                    raise UserError(f"--images {folder}: the listed images add up to more "
                                    f"than {MAX_TOTAL_BYTES} bytes")
    return found


def _case_images(path: Path, members: dict[str, bytes], config: GraderConfig,
                 case_ids: set[str], folder: Path | None) -> dict[str, list[KeyImage]]:
    """A vision package's key slices per case, each PNG carried or supplied and matching its
    sha256; a text package must hold none."""
    carried = {m[1]: members[name] for name in members if (m := _IMAGE_MEMBER.fullmatch(name))}
    if not config.vision:
        if IMAGE_LIST in members or carried:
            raise _refuse(path, "holds images, but its grader config sends none")
        return {}
    if IMAGE_LIST not in members:
        raise _refuse(path, f"member {IMAGE_LIST!r} is missing (the config sends images)")
    listing: dict[str, list[tuple[str, str]]] = {}
    for n, row in enumerate(_lines(path, IMAGE_LIST, members[IMAGE_LIST]), 1):
        where = f"{IMAGE_LIST} line {n}"
        checked(path, where, row, CaseImages)
        if row["case_id"] not in case_ids or row["case_id"] in listing:
            raise _refuse(path, f"{where} is not a case of the package with its images")
        listing[row["case_id"]] = [(i["caption"], i["sha256"]) for i in row["images"]]
    if absent := sorted(case_ids - set(listing)):
        raise _refuse(path, f"{IMAGE_LIST} does not list case {_quoted(absent[0])}")
    wanted = {h for shown in listing.values() for _, h in shown}
    for h, data in carried.items():
        if h not in wanted or hashlib.sha256(data).hexdigest() != h:
            raise _refuse(path, f"images/{h}.png is not a listed image under its sha256")
    pngs = {**(_supplied_images(folder, wanted - set(carried)) if folder else {}), **carried}
    if missing := wanted - set(pngs):
        raise _refuse(path, f"{len(missing)} of {len(wanted)} key images are neither in the "
                      "package nor in --images DIR (freeze with --with-images, or give the "
                      "folder that holds them)")
    for case_id, shown in listing.items():  # one request carries them all, repeats too
        if len(shown) > MAX_CASE_IMAGES:
            what = f"lists more than {MAX_CASE_IMAGES} images"
        elif sum(len(pngs[h]) for _, h in shown) > MAX_CASE_IMAGE_BYTES:
            what = f"lists images that add up to more than {MAX_CASE_IMAGE_BYTES // MiB} MiB"
        else:
            continue
        raise _refuse(path, f"{IMAGE_LIST}: case {_quoted(case_id)} {what} (its requests carry "
                      "them all)")
    return {cid: [KeyImage(caption, pngs[h]) for caption, h in shown]
            for cid, shown in listing.items()}


def _terms(path: Path, manifest: dict, proto: Protocol) -> ValidationTerms | None:
    """The validation's terms, from protocol.json, when the manifest records them (they must
    be the ones protocol.json gives); None for a package frozen before they were recorded."""
    try:
        protocol = calibration_protocol.Protocol.from_content(
            proto.content, id=proto.id, content_hash=proto.sha256)
        calibration_protocol.check_values(protocol.gate, protocol.statistics)
        sub = protocol.subset
        if not (type(sub.n_heldout) is int and (sub.n_heldout_cases is None
                                                 or type(sub.n_heldout_cases) is int)):
            raise ValueError("held-out counts are not integers")
        terms = ValidationTerms.of(protocol)
    except (TypeError, KeyError, ValueError, AttributeError, UserError) as e:
        raise _refuse(path, f"protocol.json is not a calibration protocol ({_quoted(e)})"
                      ) from None
    recorded = manifest.get("validation_terms")
    if recorded is None:
        return None
    if recorded != terms.to_json():
        raise _refuse(path, "manifest.json validation_terms are not the terms of protocol.json")
    return terms


def _report(path: Path, manifest: dict, members: dict[str, bytes],
            config: GraderConfig) -> tuple[Report, ValidationTerms | None]:
    """The validating report and its protocol, consistent with the manifest and the config,
    and the validation's terms (`_terms`)."""
    summary = manifest["report"]
    proto = checked(path, "protocol.json", _json(path, "protocol.json", members["protocol.json"]),
                    Protocol)
    if hashlib.sha256(canonical_json(proto.content).encode()).hexdigest() != proto.sha256:
        raise _refuse(path, "protocol.json does not match its sha256")
    terms = _terms(path, manifest, proto)
    data = _json(path, "report.json", members["report.json"])
    checked(path, "report.json", data, ReportHead)
    try:
        report = Report.from_json({k: v for k, v in data.items() if k != "id"})
        gate = _gate_summary(report)  # a statistic named by a list: unhashable
    except (TypeError, KeyError, ValueError):
        raise _refuse(path, "report.json is not a calibration report") from None
    facts = [(data["id"], summary["id"], "id"), (report.protocol_hash, proto.sha256, "protocol"),
             (report.protocol_hash, summary["protocol_sha256"], "protocol"),
             (report.data_hash, summary["data_sha256"], "data sha256"),
             (report.passed, summary["passed"], "verdict"),
             (gate, summary["gate"], "gate"),
             (report.config_id is not None, True, "config"),
             (report.part, summary["part"], "part"),
             (report.protocol_id, summary["protocol_id"], "protocol id"),
             (proto.id, summary["protocol_id"], "protocol id")]
    for got, want, what in facts:
        if got != want:
            raise _refuse(path, f"report.json and manifest.json disagree on the {what}")
    if not (report.passed and report.validates and report.part == "heldout"):
        raise _refuse(path, "report.json is not a passing held-out look")
    look = {"config_id": report.config_id, "passed": True, "revoked": False}
    if look not in manifest["heldout_looks"]:
        raise _refuse(path, "manifest.json heldout_looks does not list the validating look "
                      f"of config {report.config_id} as passed and not revoked")
    return report, terms


# ---------------------------------------------------------------- grade and canary


def read_responses(path: Path, *, max_bytes: int = 256 * 2**20) -> list[Answer]:
    """Responses to grade from JSONL: `response_id`, `task_id`, `text` (str), optional `turns`
    (list of str, the later stages' answers), `model` (str, copied to the output) and, for an
    exam taker's answer, `source` (their role: physician or student) and `user` (the person);
    other fields are ignored, so `nmb export responses --format jsonl` is valid input."""
    try:
        if (data := read_at_most(path, max_bytes)) is None:
            raise UserError(f"{path}: larger than {max_bytes} bytes")
        lines = data.decode("utf-8").splitlines()
    except OSError as exc:
        raise UserError(f"cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise UserError(f"{path}: not UTF-8 text") from None
    from llm.http_client import MAX_JSON_VALUES as MAX_LINE_VALUES
    from llm.http_client import json_values

    responses, seen = [], set()
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        if json_values(line.encode()) > MAX_LINE_VALUES:  # before parsing: it could be millions
            raise UserError(f"{path} line {n}: more than {MAX_LINE_VALUES:,} JSON values (a "
                            "response holds a few dozen)")
        try:
            row = json.loads(line)
        except (ValueError, RecursionError):
            raise UserError(f"{path} line {n}: not JSON") from None
        if not isinstance(row, dict):
            raise UserError(f"{path} line {n}: expected a JSON object")
        for key in ("response_id", "task_id", "text"):
            if not isinstance(row.get(key), str) or not row[key]:
                raise UserError(f"{path} line {n}: {key!r} must be non-empty text")
        turns = row.get("turns") or []  # absent or null: a one-stage answer
        if not isinstance(turns, list) or not all(isinstance(x, str) for x in turns):
            raise UserError(f"{path} line {n}: 'turns' must be a list of text")
        for name, value in (("text", row["text"]), ("turns", turns)):  # as the study stores
            if why := over_limit(name, value):
                raise UserError(f"{path} line {n}: {why}")
        model, source, user = row.get("model"), row.get("source") or "model", row.get("user")
        if model is not None and (why := model_name_problem(model)):
            raise UserError(f"{path} line {n}: model {_quoted(model)} {why}")
        if source not in get_args(ResponseSource):
            raise UserError(f"{path} line {n}: source {one_line(repr(source), 60)} is not one "
                            f"of {', '.join(get_args(ResponseSource))}")
        if source != "model" and (model is not None or not isinstance(user, str) or not user
                                  or model_name_problem(user)):
            raise UserError(f"{path} line {n}: a {source}'s answer names no model and names "
                            "its person in 'user' (as nmb export responses writes it)")
        if row["response_id"] in seen:
            raise UserError(f"{path} line {n}: response_id {_quoted(row['response_id'])} "
                            "repeated")
        seen.add(row["response_id"])
        responses.append(Answer(row["response_id"], row["task_id"], row["text"], turns, model,
                                source, user if source != "model" else None))
    return responses


def _canary_answer(item: dict[str, Any]) -> Answer:
    return Answer(item["response_id"], item["task_id"], item["text"], item["turns"] or [])


def _packaged_task(pkg: Package, response: Answered) -> tuple[Task, Case]:
    if response.task_id not in pkg.tasks:
        raise UserError(f"response {_quoted(response.response_id)}: task "
                        f"{_quoted(response.task_id)} is not in the package")
    return pkg.tasks[response.task_id]


def check_tasks(pkg: Package, responses: list[Answer]) -> None:
    """UserError naming the first response whose task the package does not hold."""
    for answer in responses:
        _packaged_task(pkg, answer)


def request_for(pkg: Package, response: Answered) -> GradeItem:
    """The grader's exact request for `response`, from the package alone."""
    task, case = _packaged_task(pkg, response)
    images = image_parts(pkg.images[case.case_id]) if pkg.config.vision else None
    return grade_request(pkg.config, pkg.rubric, task, case, response, images=images)


def _send(pkg: Package, answers: list[Answer], finish: Callable[[Answer, GradeItem, CallResult], T],
          *, base_url: str | None, api_key: str | None, concurrency: int, timeout: float,
          on_done: Callable[[Answer, T], Any] | None = None) -> list[T]:
    """`finish(answer, request, result)` for each answer, in their order, once its request was
    sent (no cache: a canary must reach the model); `on_done(answer, finished)` as each ends.
    Requests are built as they go out, so that `concurrency` of them are held at once, never
    one per answer (a vision request carries its images). `base_url` comes from the user,
    never from the package: without it the client uses the official API (or the user's
    OPENAI_BASE_URL)."""
    if concurrency < 1:
        raise UserError(f"--concurrency must be at least 1, got {concurrency}")
    if not (math.isfinite(timeout) and timeout > 0):
        raise UserError(f"--timeout must be a positive number of seconds, got {timeout}")
    check_tasks(pkg, answers)  # every mistake before anything is paid for
    if not answers:
        return []
    key = api_key_for(base_url, api_key, trusted=base_url)

    async def run() -> list[T]:
        one = grader_call(make_client(base_url, key, timeout), pkg.rubric, timeout=timeout,
                          prices=load_prices())

        async def worker(answer: Answer) -> T:
            item = request_for(pkg, answer)
            return finish(answer, item, await one(item))

        return await run_bounded(answers, worker, concurrency, on_done=on_done)

    return asyncio.run(run())


def _row(answer: Answer, extra: tuple[str, ...], result: CallResult) -> dict[str, Any]:
    """A response's output row: its score and what was asked beyond it, or the reason it
    failed."""
    return {"response_id": answer.response_id, "task_id": answer.task_id, "model": answer.model,
            **({"source": answer.source, "user": answer.user} if answer.user else {}),
            "ok": result.ok,
            **(result.data.fields(extra) if result.ok else {"reason": result.reason}),
            "model_returned": result.model_returned,
            "system_fingerprint": result.system_fingerprint, "cost_usd": result.cost_usd}


def grade_responses(pkg: Package, responses: list[Answer], *, base_url: str | None = None,
                    api_key: str | None = None, concurrency: int = 8, timeout: float = 60.0,
                    graded: dict[str, dict] | None = None, progress: Progress | None = None,
                    on_row: Callable[[Answer, dict], Any] | None = None) -> list[dict]:
    """One row per response, in their order: the frozen grader's score, or the reason it
    failed. Responses with a row in `graded` (by response id: `kept_rows`) are not sent again;
    each new grade is kept in `progress` as it comes back, and `on_row(answer, row)` called."""
    graded = graded or {}
    fresh = [r for r in responses if r.response_id not in graded]

    def done(answer: Answer, finished: tuple[dict, CallResult]) -> None:
        row, result = finished
        if progress is not None and result.ok:
            progress.keep(answer.response_id, answer.key, {
                "grade": result.raw, **{k: row[k] for k in RETURNED}})
        if on_row is not None:
            on_row(answer, row)

    rows = _send(pkg, fresh, lambda a, item, res: (_row(a, item.asked.extra, res), res),
                 base_url=base_url, api_key=api_key, concurrency=concurrency, timeout=timeout,
                 on_done=done)
    graded = {**graded, **{r.response_id: row for r, (row, _) in zip(fresh, rows, strict=True)}}
    return [graded[r.response_id] for r in responses]


def kept_rows(pkg: Package, responses: list[Answer], progress: Progress) -> dict[str, dict]:
    """The rows to reuse from a progress file (`package.progress`): those of a response still
    to grade and unchanged since (`Answer.key`), each rebuilt from the grader's answer as it
    was sent back, checked again as a live answer is. UserError naming the response for a line
    that does not pass."""
    from llm.http_client import MAX_JSON_VALUES as MAX_ANSWER_VALUES  # lazy: verify needs
    from llm.http_client import json_values  # no HTTP client

    rows = {}
    for answer in responses:
        line = progress.kept.get(answer.response_id)
        if line is None or line["answer"] != answer.key:
            continue
        task, _ = _packaged_task(pkg, answer)
        asked = Asked.of(pkg.config.prompt_version, task.family, len(task.stages or []))
        returned = {k: line.get(k) for k in RETURNED}
        try:
            grade, raw = None, line.get("grade")
            if isinstance(raw, str) and json_values(raw.encode()) <= MAX_ANSWER_VALUES:
                grade = parse_grader_output(pkg.rubric, json.loads(raw), task.family, asked)
            if grade is None or not _returned_ok(returned):
                raise ValueError("not a grader's answer as it came back")
        except (ValueError, RecursionError) as e:
            raise UserError(f"{progress.path}: response {_quoted(answer.response_id)}: "
                            f"{one_line(str(e), 200)}; remove the file to grade everything "
                            "again") from None
        rows[answer.response_id] = _row(answer, asked.extra, CallResult(True, grade, **returned))
    return rows


def _returned_ok(returned: dict[str, Any]) -> bool:
    """Whether what the server said of a kept answer (model name, fingerprint, cost) is of the
    types a live answer's is."""
    cost = returned["cost_usd"]
    names = (returned["model_returned"], returned["system_fingerprint"])
    return (all(v is None or (isinstance(v, str) and len(v) <= MAX_RETURNED) for v in names)
            and (cost is None or (type(cost) in (int, float) and math.isfinite(cost)
                                  and cost >= 0)))


def bertscore_pairs(pkg: Package, responses: list[Answer]) -> dict[str, tuple[str, str]]:
    """(final answer, reference answer) per response, as `results.bertscore` scores them."""
    return {r.response_id: (final_answer(r.text, r.turns),
                            reference_text(pkg.tasks[r.task_id][1].ground_truth))
            for r in responses}


def summary(pkg: Package, rows: list[dict], *, ks: tuple[int, ...] = (1,),
            bertscore: dict[str, float] | None = None) -> dict[str, Any]:
    """What `nmb package grade` reports besides its rows: per model and human group (exam
    takers' answers by their role, each person counted as in the study), overall and per
    family x level cell, the study's own `summarize` (pass@k with intervals, the mean rubric score with
    its interval, error classes among wrong responses; BERTScore F1 per response id, when
    given, as a secondary column)."""
    judged = []
    for r in rows:
        if r["ok"]:
            task, _ = pkg.tasks[r["task_id"]]
            asked = Asked.of(pkg.config.prompt_version, task.family, len(task.stages or []))
            human = r.get("user") is not None
            judged.append(grade_judgment(
                who=r["source"] if human else r["model"] or "unnamed model",
                is_model=not human, person=r.get("user"), task=task,
                correct=r["correct_diagnosis"], overall=r["overall"], error_tags=r["error_tags"],
                asked=asked, rank=r.get("diagnosis_rank"), stages=r.get("stages"),
                response_id=r["response_id"]))
    return {"package_sha256": pkg.sha256, **pkg.terms_json(), "graded": len(judged),
            "failed": sum(not r["ok"] for r in rows),
            "overall": summarize(judged, ks=ks, bertscore=bertscore),
            "by_family_level": summarize(judged, ks=ks, by=("family", "level"),
                                         bertscore=bertscore)}


def summary_markdown(data: dict[str, Any]) -> str:
    """The summary as Markdown tables (model names escaped: they come from the input file)."""
    def cell(v: Any) -> str:
        if isinstance(v, float):
            return f"{v:.3f}"
        if isinstance(v, list):
            return "[" + ", ".join(cell(x) for x in v) + "]"
        if isinstance(v, dict):
            return ", ".join(f"{k} {cell(x)}" for k, x in v.items()) or "–"
        text = "–" if v is None else str(v)
        return re.sub(r"([\\`*_\[\]<>|#!])", r"\\\1", text)  # no links, images, HTML

    out = [f"Package sha256 {data['package_sha256']}: {data['graded']} graded, "
           f"{data['failed']} failed.", "",
           f"Grader validated under {cell(data.get('validation_terms') or TERMS_NOT_RECORDED)}.",
           ""]
    if b := data.get("bertscore"):
        out[-1:] = [f"{b['label']}: model {cell(b['model'])} (key {b['model_key'][:12]}, layer "
                    f"{b['layer']}, {'rescaled' if b['rescaled'] else 'not rescaled'}).", ""]
    for title, rows in (("Overall", data["overall"]), ("By family x level", data["by_family_level"])):
        out.append(f"### {title}")
        if not rows:
            out += ["(no graded responses)", ""]
            continue
        keys = [k for k in rows[0] if k != "group" or any(r["group"] != "model" for r in rows)]
        out += ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
        out += ["| " + " | ".join(cell(r[k]) for k in keys) + " |" for r in rows]
        out.append("")
    return "\n".join(out)


CHECKED, DRIFT, UNCHECKED = "ok", "drift", "could not check"


def canary(pkg: Package, *, base_url: str | None = None, api_key: str | None = None,
           concurrency: int = 8, timeout: float = 60.0,
           limits: dict[str, float] | None = None) -> dict[str, Any]:
    """Send the canary requests again and compare the answers with the frozen ones.

    An item is *unreached* when no answer came back (connection refused, timeouts, HTTP errors,
    after the usual retries): it says nothing about the model. Over the answered items, drift
    is an answer that failed (invalid, cut, refused), fewer than `criteria_agreement_min` of
    the (item, criterion) levels identical, or a mean absolute difference of the overall score
    (0-1) above `overall_mad_max` (the limits frozen in the manifest, unless `limits` overrides
    them). `status`:

    - "drift" when at least half the items were answered and those answers drifted;
    - "could not check" when more than half were unreached, or some were and the others did
      not drift (no drift cannot be claimed for items never asked); `drift` is then None;
    - "ok" when every item was answered and nothing drifted.

    A new model name or system fingerprint is reported as well, never counted as drift.
    `verify` has already checked that every canary request rebuilds byte-identical.
    """
    limits = {**pkg.manifest["canary"]["drift_limits"], **(limits or {})}
    results = _send(pkg, [_canary_answer(c) for c in pkg.canary], lambda a, item, res: res,
                    base_url=base_url, api_key=api_key, concurrency=concurrency,
                    timeout=timeout)
    same = total = 0
    diffs, items = [], []
    for c, res in zip(pkg.canary, results, strict=True):
        frozen = c["frozen"]
        item = {"response_id": c["response_id"], "ok": res.ok,
                "answered": res.ok or res.model_returned is not None}
        if res.ok:
            equal = [res.data.criteria.get(k) == v for k, v in frozen["criteria"].items()]
            same, total = same + sum(equal), total + len(equal)
            diffs.append(abs(res.data.overall - frozen["overall"]))
            item.update(criteria_equal=all(equal), overall_diff=round(diffs[-1], 4),
                        diagnosis_equal=res.data.correct_diagnosis == frozen["correct_diagnosis"])
        else:
            item["reason"] = res.reason
        items.append(item)
    unreached = sum(not i["answered"] for i in items)
    failed = sum(i["answered"] and not i["ok"] for i in items)
    agreement = same / total if total else 0.0
    mad = sum(diffs) / len(diffs) if diffs else None
    models = sorted({r.model_returned for r in results if r.ok} - {c["model_returned"] for c in pkg.canary})
    prints = sorted({r.system_fingerprint for r in results if r.ok and r.system_fingerprint}
                    - {c["system_fingerprint"] for c in pkg.canary})
    drifted = (failed > 0 or (total > 0 and agreement < limits["criteria_agreement_min"])
               or (mad is not None and mad > limits["overall_mad_max"]))
    if 2 * unreached > len(items) or (unreached and not drifted):
        status = UNCHECKED
    else:
        status = DRIFT if drifted else CHECKED
    return {"package_sha256": pkg.sha256, **pkg.terms_json(), "status": status,
            "drift": None if status == UNCHECKED else status == DRIFT,
            "items": len(items), "unreached": unreached, "failed": failed,
            "criteria_agreement": round(agreement, 4) if total else None,
            "overall_mad": None if mad is None else round(mad, 4), "limits": limits,
            "new_models_returned": models, "new_system_fingerprints": prints,
            "per_item": items}


def packages(s: Session) -> list[FrozenPackage]:
    return list(s.exec(select(FrozenPackage).order_by(FrozenPackage.id.desc())))
