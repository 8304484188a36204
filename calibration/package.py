"""Frozen grader packages: grade new models without clinicians, and notice when the API drifts.

`freeze` writes one zip from a config that passed the held-out gate (`validated_report_id`):

    manifest.json  format, config (every field, its hash), rubric hash, the validating report's
                   gate, the canary summary, and the sha256 of every other member
    rubric.toml    the rubric's source (its content hash is checked on load)
    tasks.jsonl    every task with what the grader reads of its case (record, scores, reference)
    canary.jsonl   held-out items graded under the config: the response, the request hash and
                   the frozen answer (scores, model name returned, system fingerprint)

`grade_responses` builds the grader's exact requests from the package alone (the same
`calibration.grader.build_item`, so a frozen request is byte-identical to the study's) and
`canary` sends the canary requests again and compares the answers with the frozen ones. At
temperature 0 with a fixed seed a model that has not changed answers nearly the same; OpenAI
documents `seed` as best-effort determinism and `system_fingerprint` as the backend
configuration that affects it, so both a changed fingerprint and changed scores are reported.
Vision configs are not packaged: the package would need the images.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import random
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlmodel import Session, select

from calibration.request import GradeItem, SendJob, api_key_for, grade_request, send
from calibration.grader_config import get_config
from calibration.llm import CallResult, load_prices
from db.audit import record
from db.bundle_images import sha256_file
from db.models import (
    CalibrationItem,
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
from errors import UserError
from rubric import Rubric
from rubric.loader import loads_rubric

FORMAT = "nmb-package-1"
CONFIG_FIELDS = ("config_hash", "name", "model", "base_url", "temperature", "seed", "max_tokens",
                 "prompt_version", "rubric_hash", "vision")
CASE_FIELDS = ("case_id", "title", "ehr", "scores", "ground_truth")
TASK_FIELDS = ("task_id", "case_id", "family", "level", "prompt", "stages")
FROZEN_FIELDS = ("criteria", "correct_diagnosis", "error_tags", "overall")
MEMBERS = ("rubric.toml", "tasks.jsonl", "canary.jsonl")
DRIFT_LIMITS = {"criteria_agreement_min": 0.9, "overall_mad_max": 0.05}


@dataclass
class Package:
    manifest: dict[str, Any]
    config: GraderConfig  # unsaved: the frozen fields
    rubric: Rubric
    tasks: dict[str, tuple[Task, Case]]
    canary: list[dict[str, Any]]


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
             "frozen": {k: getattr(g, k) for k in FROZEN_FIELDS},
             "model_returned": g.model_returned, "system_fingerprint": g.system_fingerprint}
            for g, r in sorted(chosen, key=lambda row: row[0].response_id)]


def _jsonl(rows: list[dict]) -> bytes:
    return "".join(json.dumps(row, sort_keys=True) + "\n" for row in rows).encode()


def freeze(s: Session, *, config_id: int, out: Path, canary_size: int = 20, seed: int = 0,
           actor: str | None = None) -> FrozenPackage:
    """Write the package of a validated config to `out` (a new .zip) and record it."""
    config = get_config(s, config_id)
    if config.validated_report_id is None:
        raise UserError(f"grader config {config_id} is not validated: pass the gate on the "
                        f"held-out part first (nmb calibrate --config {config_id})")
    if config.vision:
        raise UserError(f"grader config {config_id} sends images; vision configs cannot be "
                        "packaged yet")
    if canary_size < 1:
        raise UserError(f"--canary must be at least 1, got {canary_size}")
    if out.exists():
        raise UserError(f"{out} exists; give a new file name")
    if out.suffix != ".zip":
        raise UserError(f"{out}: a package is a .zip file")
    report = s.get(CalibrationReport, config.validated_report_id)
    canary = _canary_items(s, config, canary_size, seed)
    if not canary:
        raise UserError(f"grader config {config_id} has no graded held-out items for a canary")
    rubric = rubric_by_hash(s, config.rubric_hash)
    cases = {c.case_id: c for c in s.exec(select(Case))}
    tasks = [{**{k: getattr(t, k) for k in TASK_FIELDS},
              "case": {k: getattr(cases[t.case_id], k) for k in CASE_FIELDS}}
             for t in s.exec(select(Task).order_by(Task.task_id))]
    members = {"rubric.toml": rubric.source_text.encode(), "tasks.jsonl": _jsonl(tasks),
               "canary.jsonl": _jsonl(canary)}
    manifest = {
        "format": FORMAT, "created_at": utcnow().isoformat(),
        "config": {k: getattr(config, k) for k in CONFIG_FIELDS},
        "rubric": {"id": rubric.id, "version": rubric.version, "hash": rubric.content_hash},
        "report": {"id": report.id, "part": report.part, "thresholds": report.thresholds,
                   "gate": report.results.get("gate", {})},
        "canary": {"items": len(canary), "seed": seed, "drift_limits": DRIFT_LIMITS},
        "sha256": {name: hashlib.sha256(data).hexdigest() for name, data in members.items()},
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(f".{out.name}.partial")
    try:
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as zf:
            zf.writestr("manifest.json", json.dumps(manifest, indent=2, sort_keys=True,
                                                    default=str))
            for name, data in members.items():
                zf.writestr(name, data)
        digest = sha256_file(partial)
        row = FrozenPackage(config_id=config.id, report_id=report.id, sha256=digest,
                            path=str(out.resolve()), canary=manifest["canary"])
        s.add(row)
        s.flush()
        record(s, "package.freeze", actor=actor, config=config.id, package=row.id,
               sha256=digest)
        os.replace(partial, out)
        s.commit()
    except BaseException:  # neither a file without its row nor a row without its file
        s.rollback()
        for leftover in (partial, out):
            leftover.unlink(missing_ok=True)
        raise
    return row


# ---------------------------------------------------------------- load


def load(path: Path) -> Package:
    """Open a package, checking its format, every member's sha256 and the rubric's hash."""
    try:
        zf = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile) as exc:
        raise UserError(f"{path}: not a readable package ({exc})") from None
    with zf:
        try:
            manifest = json.loads(zf.read("manifest.json"))
            members = {name: zf.read(name) for name in manifest["sha256"]}
        except (KeyError, ValueError) as exc:
            raise UserError(f"{path}: not a package ({exc})") from None
    if manifest.get("format") != FORMAT:
        raise UserError(f"{path}: format {manifest.get('format')!r}, expected {FORMAT!r}")
    if set(members) != set(MEMBERS):
        raise UserError(f"{path}: members {sorted(members)}, expected {list(MEMBERS)}")
    for name, data in members.items():
        if hashlib.sha256(data).hexdigest() != manifest["sha256"][name]:
            raise UserError(f"{path}: {name} does not match its sha256 in manifest.json")
    rubric = loads_rubric(members["rubric.toml"].decode(), source=f"{path}:rubric.toml")
    if rubric.content_hash != manifest["config"]["rubric_hash"]:
        raise UserError(f"{path}: rubric.toml is not the rubric the config was validated with")
    tasks = {}
    for line in members["tasks.jsonl"].decode().splitlines():
        row = json.loads(line)
        tasks[row["task_id"]] = (Task(**{k: row[k] for k in TASK_FIELDS}), Case(**row["case"]))
    canary = [json.loads(line) for line in members["canary.jsonl"].decode().splitlines()]
    return Package(manifest, GraderConfig(**manifest["config"]), rubric, tasks, canary)


# ---------------------------------------------------------------- grade and canary


def read_responses(path: Path) -> list[Response]:
    """Responses to grade from JSONL: `response_id`, `task_id`, `text` (str), optional `turns`
    (list of str, the later stages' answers) and `model` (str, copied to the output)."""
    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        raise UserError(f"cannot read {path}: {exc.strerror}") from None
    responses, seen = [], set()
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError:
            raise UserError(f"{path} line {n}: not JSON") from None
        if not isinstance(row, dict):
            raise UserError(f"{path} line {n}: expected a JSON object")
        for key in ("response_id", "task_id", "text"):
            if not isinstance(row.get(key), str) or not row[key]:
                raise UserError(f"{path} line {n}: {key!r} must be non-empty text")
        turns = row.get("turns", [])
        if not isinstance(turns, list) or not all(isinstance(x, str) for x in turns):
            raise UserError(f"{path} line {n}: 'turns' must be a list of text")
        if row["response_id"] in seen:
            raise UserError(f"{path} line {n}: response_id {row['response_id']!r} repeated")
        seen.add(row["response_id"])
        responses.append(Response(response_id=row["response_id"], task_id=row["task_id"],
                                  text=row["text"], turns=turns, model=row.get("model")))
    return responses


def request_for(pkg: Package, response: Response) -> GradeItem:
    """The grader's exact request for `response`, from the package alone."""
    if response.task_id not in pkg.tasks:
        raise UserError(f"response {response.response_id}: task {response.task_id!r} is not "
                        "in the package")
    task, case = pkg.tasks[response.task_id]
    return grade_request(pkg.config, pkg.rubric, task, case, response)


def _send(pkg: Package, work: list[GradeItem], *, base_url: str | None, api_key: str | None,
          concurrency: int, timeout: float) -> list[CallResult]:
    """Send every request once (no cache: a canary must reach the model)."""
    if concurrency < 1:
        raise UserError(f"--concurrency must be at least 1, got {concurrency}")
    url = base_url or pkg.config.base_url
    job = SendJob(work, pkg.rubric, url, api_key_for(url, api_key), concurrency=concurrency,
                  timeout=timeout, prices=load_prices())
    return asyncio.run(send(job))


def grade_responses(pkg: Package, responses: list[Response], *, base_url: str | None = None,
                    api_key: str | None = None, concurrency: int = 8,
                    timeout: float = 60.0) -> list[dict]:
    """One row per response: the frozen grader's score, or the reason it failed."""
    work = [request_for(pkg, r) for r in responses]
    results = _send(pkg, work, base_url=base_url, api_key=api_key, concurrency=concurrency,
                    timeout=timeout)
    return [{"response_id": w.response_id, "task_id": r.task_id, "model": r.model, "ok": res.ok,
             **({k: res.data[k] for k in (*FROZEN_FIELDS, "comment")} if res.ok
                else {"reason": res.reason}),
             "model_returned": res.model_returned, "system_fingerprint": res.system_fingerprint,
             "cost_usd": res.cost_usd}
            for w, r, res in zip(work, responses, results, strict=True)]


def canary(pkg: Package, *, base_url: str | None = None, api_key: str | None = None,
           concurrency: int = 8, timeout: float = 60.0,
           limits: dict[str, float] | None = None) -> dict[str, Any]:
    """Send the canary requests again and compare the answers with the frozen ones.

    Drift when an item fails, when fewer than `criteria_agreement_min` of the (item, criterion)
    levels are identical, or when the mean absolute difference of the overall score (0-1)
    exceeds `overall_mad_max` (the limits frozen in the manifest, unless `limits` overrides
    them). A new model name or system fingerprint is reported as well.
    """
    limits = {**pkg.manifest["canary"]["drift_limits"], **(limits or {})}
    responses = [Response(response_id=c["response_id"], task_id=c["task_id"], text=c["text"],
                          turns=c["turns"]) for c in pkg.canary]
    work = [request_for(pkg, r) for r in responses]
    changed = [c["response_id"] for c, w in zip(pkg.canary, work, strict=True)
               if w.request_hash != c["request_hash"]]
    if changed:
        raise UserError(f"the package rebuilds different requests for {', '.join(changed)}: "
                        "it does not match this version of the tool")
    results = _send(pkg, work, base_url=base_url, api_key=api_key, concurrency=concurrency,
                    timeout=timeout)
    same = total = 0
    diffs, items = [], []
    for c, res in zip(pkg.canary, results, strict=True):
        frozen = c["frozen"]
        item = {"response_id": c["response_id"], "ok": res.ok}
        if res.ok:
            equal = [res.data["criteria"].get(k) == v for k, v in frozen["criteria"].items()]
            same, total = same + sum(equal), total + len(equal)
            diffs.append(abs(res.data["overall"] - frozen["overall"]))
            item.update(criteria_equal=all(equal), overall_diff=round(diffs[-1], 4),
                        diagnosis_equal=res.data["correct_diagnosis"] == frozen["correct_diagnosis"])
        else:
            item["reason"] = res.reason
        items.append(item)
    failed = sum(not r.ok for r in results)
    agreement = same / total if total else 0.0
    mad = sum(diffs) / len(diffs) if diffs else None
    models = sorted({r.model_returned for r in results if r.ok} - {c["model_returned"] for c in pkg.canary})
    prints = sorted({r.system_fingerprint for r in results if r.ok and r.system_fingerprint}
                    - {c["system_fingerprint"] for c in pkg.canary})
    drift = (failed > 0 or agreement < limits["criteria_agreement_min"]
             or (mad is not None and mad > limits["overall_mad_max"]))
    return {"drift": drift, "items": len(items), "failed": failed,
            "criteria_agreement": round(agreement, 4),
            "overall_mad": None if mad is None else round(mad, 4), "limits": limits,
            "new_models_returned": models, "new_system_fingerprints": prints,
            "per_item": items}


def packages(s: Session) -> list[FrozenPackage]:
    return list(s.exec(select(FrozenPackage).order_by(FrozenPackage.id.desc())))
