"""`freeze`: write a validated grader config as a package (its members: `package.format`)."""

from __future__ import annotations

import hashlib
import json
import os
import random
import zipfile
from pathlib import Path
from typing import Any

from sqlmodel import Session, select

from calibration import protocol as calibration_protocol
from calibration.calibrate import frozen_look, looks
from calibration.report import Report
from calibration.terms import ValidationTerms
from db.audit import record
from db.bundle.images import sha256_file
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
    Task,
    utcnow,
)
from db.rubrics import rubric_by_hash
from db.study.reference import has_reference
from errors import UserError
from grading.config import get_config
from package.format import (
    CASE_FIELDS,
    DRIFT_LIMITS,
    FORMAT,
    IMAGE_LIST,
    MAX_MEMBERS,
    MAX_TOTAL_BYTES,
    SEAL,
    TASK_FIELDS,
    manifest_digest,
    member_cap,
    tool_version,
)
from package.members import (
    MAX_CANARY_ITEMS,
    Config,
    Frozen,
)
from package.sign import SIGNATURE, load_private, public_line, sign

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


def gate_summary(report: Report) -> dict[str, Any]:
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
             # a package grades: answers only, of counted tasks (no practice: db.study.practice)
             if has_reference(cases[t.case_id].ground_truth) and not t.practice]
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
                   "passed": report.passed, "gate": gate_summary(report)},
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




def packages(s: Session) -> list[FrozenPackage]:
    return list(s.exec(select(FrozenPackage).order_by(FrozenPackage.id.desc())))
