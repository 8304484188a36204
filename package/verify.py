"""`verify` checks a package offline (no study, no network) before anything else uses it: the zip
within its caps (`package.zip`: counted and sized from the central directory, then
streamed), exactly these members, each matching its sha256, every manifest field of its type
and sealed, the rubric and config hashes recomputed from their content, the report and protocol
consistent with the manifest, every canary request rebuilt byte-identical (the same
`llm.grader_request.grade_request` as the study) and, given the digest the authors published
or the study's public key, the file's own sha256 or the signature. Without either, a package
is proven internally consistent, not authored: anyone can build a consistent one.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from pathlib import Path
from typing import Any

from calibration import protocol as calibration_protocol
from calibration.report import Report
from calibration.terms import ValidationTerms
from db.models import (
    Case,
    GraderConfig,
    Task,
)
from errors import UserError, one_line
from grading.config import GraderSettings, config_hash
from llm.model_request import KeyImage
from package.format import (
    FORMAT,
    HEX64,
    IMAGE_LIST,
    IMAGE_MEMBER,
    MAX_CASE_IMAGE_BYTES,
    MAX_CASE_IMAGES,
    MAX_IMAGE_BYTES,
    MAX_JSON_VALUES,
    MAX_PACKAGE_BYTES,
    MAX_SUPPLIED_IMAGES,
    MAX_TOTAL_BYTES,
    MEMBERS,
    SEAL,
    TASK_FIELDS,
    ZIP_CAPS,
    MiB,
    Package,
    manifest_digest,
    quoted,
)
from package.freeze import gate_summary
from package.grade import canary_answer, request_for
from package.members import (
    CanaryRow,
    CaseImages,
    Manifest,
    Protocol,
    ReportHead,
    Seal,
    TaskRow,
    checked,
)
from package.report_page import page_problem
from package.sign import SIGNATURE, load_public, public_line
from package.sign import signed_by as signature_problem
from package.zip import read_members
from rubric import Rubric
from rubric.loader import loads_rubric
from rubric.schema import canonical_json
from rubric.scoring import validate_score

# ---------------------------------------------------------------- verify


def _refuse(path: Path, what: str) -> UserError:
    return UserError(f"{path}: {what}")




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
    if sha256 is not None and not HEX64.fullmatch(sha256.lower()):
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
                raise _refuse(path, f"tasks.jsonl line {n}: family {quoted(task.family)} is "
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
        item = request_for(pkg, canary_answer(c))
        if item.request_hash != c["request_hash"]:
            raise _refuse(path, f"canary item {quoted(c['response_id'])}: the request this "
                          "tool builds differs from the one that was validated")
        if why := _frozen_problem(rubric, tasks[c["task_id"]][0].family, c["frozen"]):
            raise _refuse(path, f"canary item {quoted(c['response_id'])}: its frozen grade "
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
    carried = {m[1]: members[name] for name in members if (m := IMAGE_MEMBER.fullmatch(name))}
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
        raise _refuse(path, f"{IMAGE_LIST} does not list case {quoted(absent[0])}")
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
        raise _refuse(path, f"{IMAGE_LIST}: case {quoted(case_id)} {what} (its requests carry "
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
        raise _refuse(path, f"protocol.json is not a calibration protocol ({quoted(e)})"
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
        gate = gate_summary(report)  # a statistic named by a list: unhashable
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
