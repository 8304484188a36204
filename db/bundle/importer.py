"""Import a bundle (`nmb-bundle/1`) into the study: validate everything, then one transaction.

The rules are in `db.bundle.validate` and docs/bundle-format.md. The import is all or
nothing on SQLite and PostgreSQL: rows are written in the caller's session and committed
once at the end; any error rolls the session back. Re-importing is idempotent: rows that
already exist with identical content are skipped, an existing id with different content is
a problem (bundles never overwrite study data). Images are copied into the content-addressed
store `NMB_HOME/images/` through a workspace (`db.bundle.store`): images a failed or killed
import added are swept. A dry run is the same import, rolled back at the end (images are not
copied), so it refuses exactly what the import refuses.
"""

import contextlib
import secrets
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import insert, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, select

from db.audit import record
from db.bundle.errors import BundleInvalid, Problem
from db.bundle.records import FORMAT
from db.bundle.store import Workspace, image_path
from db.bundle.validate import (
    MaskFile,
    SeriesFile,
    ValidBundle,
    open_and_validate,
    validate_bundle,
)
from db.engine import nmb_home
from db.locks import for_update, take_turns
from db.models import Case, Mask, Response, Series, Task, utcnow
from db.queries import IN_CHUNK, chunks, fetch_in
from db.raters.response_flags import as_created, flag_new
from db.study.reference import has_reference, scores_using
from db.study.revisions import REVISABLE, Change
from db.study.revisions import write as write_revisions
from errors import UserError, counted

__all__ = ["FORMAT", "BundleInvalid", "ImportSummary", "Problem", "ValidBundle", "image_path",
           "import_bundle", "validate_bundle"]

Progress = Callable[[float, str], None]
_BATCH = 2000  # rows per executemany


@dataclass
class ImportSummary:
    """What an import did (or, with dry_run, would do); `timings` in seconds per phase."""

    bundle: str
    dry_run: bool
    new_cases: int = 0
    new_series: int = 0
    new_masks: int = 0
    new_tasks: int = 0
    new_responses: int = 0
    unchanged_cases: int = 0
    unchanged_tasks: int = 0
    unchanged_responses: int = 0
    new_answers: int = 0  # reference answers given to cases that had none (db.study.reference)
    changed_answers: int = 0  # reference answers changed that no score had used
    linked_cases: int = 0  # cases of the study linked to their patient (`Case.patient`) now
    changed_views: int = 0  # cases whose bundle's hanging protocol changed (no admin's view)
    revised_cases: int = 0  # --revise: stored as a new revision (db.study.revisions)
    revised_tasks: int = 0
    revisions: list[str] = field(default_factory=list)  # field by field: what changes
    flagged_responses: int = 0  # name a model: redacted, held for review (db.raters.response_flags)
    images_inspected: int = 0
    images_copied: int = 0
    images_already_stored: int = 0
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        return bool(self.new_cases or self.new_tasks or self.new_responses or self.new_answers
                    or self.changed_answers or self.linked_cases or self.revisions
                    or self.changed_views)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        verb = "would import" if self.dry_run else "imported"
        flagged = self.flagged_responses
        return (f"{self.bundle}: {verb} {counted(self.new_cases, 'case')}, "
                f"{self.new_series} series, "
                + (f"{counted(self.new_masks, 'mask')}, " if self.new_masks else "")
                + f"{counted(self.new_tasks, 'task')}, {counted(self.new_responses, 'response')}"
                f"; unchanged {counted(self.unchanged_cases, 'case')}, "
                f"{counted(self.unchanged_tasks, 'task')}, "
                f"{counted(self.unchanged_responses, 'response')}"
                + (f"; {counted(self.new_answers, 'reference answer')} added"
                   if self.new_answers else "")
                + (f"; {counted(self.changed_answers, 'reference answer')} changed"
                   if self.changed_answers else "")
                + (f"; {'would revise' if self.dry_run else 'revised'} "
                   f"{counted(self.revised_cases, 'case')}, {counted(self.revised_tasks, 'task')}"
                   if self.revisions else "")
                + (f"; {counted(self.linked_cases, 'case')} linked to "
                   f"{'its' if self.linked_cases == 1 else 'their'} patient"
                   if self.linked_cases else "")
                + (f"; {counted(self.changed_views, 'opening view')} from the changed hanging "
                   "protocol" if self.changed_views else "")
                + (f"; {counted(flagged, 'response')} {'names' if flagged == 1 else 'name'} a "
                   "model: redacted and held for review on /admin" if flagged else ""))


def _differences(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    return [k for k in new if old.get(k) != new[k]]


@dataclass
class _Plan:
    cases: list[dict] = field(default_factory=list)
    series: list[SeriesFile] = field(default_factory=list)
    masks: list[MaskFile] = field(default_factory=list)
    tasks: list[dict] = field(default_factory=list)
    responses: list[dict] = field(default_factory=list)
    answers: list[tuple[str, dict | None, dict]] = field(default_factory=list)  # id, old, new
    links: list[tuple[str, str]] = field(default_factory=list)  # case id, its patient now
    views: list[tuple[str, dict | None, dict | None]] = field(default_factory=list)  # id, old, new
    changes: list[Change] = field(default_factory=list)  # --revise (db.study.revisions)
    problems: list[Problem] = field(default_factory=list)
    bundle: str = ""


_REVISE = "; nmb import --revise stores it as a new revision"
_NEW_ID = ("; images are not revised: retire the case (nmb retire case) and import the corrected "
           "one under a new id")


def _plan(s: Session, vb: ValidBundle, summary: ImportSummary, revise: bool = False) -> _Plan:
    """Split the bundle into new rows and identical existing ones; conflicts become problems,
    or, with `revise`, revisions of the changed case records and tasks."""
    plan = _Plan()
    series_of: dict[str, list[SeriesFile]] = {}
    for sf in vb.series:
        series_of.setdefault(sf.case_id, []).append(sf)
    masks_of: dict[str, list[MaskFile]] = {}
    for mf in vb.masks:
        masks_of.setdefault(mf.case_id, []).append(mf)

    def problem(kind: str, key: str, msg: str) -> None:
        file, line = vb.where[kind, key]
        plan.problems.append(Problem(file, line, msg))

    old_cases = {c.case_id: c for c in fetch_in(s, Case.case_id, (c["case_id"] for c in vb.cases))}
    old_series: dict[str, list[tuple]] = {}
    for row in fetch_in(s, Series.case_id, old_cases):
        old_series.setdefault(row.case_id, []).append(
            (row.position, row.sequence, row.sha256, row.plane, row.caption))
    old_masks: dict[str, list[tuple]] = {}
    for m in fetch_in(s, Mask.case_id, old_cases):
        old_masks.setdefault(m.case_id, []).append((m.position, m.label, m.series, m.sha256))
    answers: list[tuple[str, dict | None, dict]] = []
    for c in vb.cases:
        cid = c["case_id"]
        mine = sorted((f.position, f.sequence, f.sha256, f.plane, f.caption)
                      for f in series_of.get(cid, []))
        if cid not in old_cases:
            plan.cases.append(c)
            plan.series += series_of.get(cid, [])
            plan.masks += masks_of.get(cid, [])
            continue
        old = old_cases[cid].model_dump()
        # No answer in the bundle keeps the study's; a new or other one is an answer update.
        # So is the patient: none keeps the study's, a case of its own is linked to it now
        # (its release files imported again), another patient is a change of content.
        patient = c.get("patient")
        if patient is not None and old["patient"] is None:
            plan.links.append((cid, patient))
        # The opening view is presentation, not content: a changed hanging protocol replaces
        # the bundle's earlier one, never a view an admin set ("use this view").
        view = c.get("opening_view")
        if view != old["opening_view"] and (old["opening_view"] or {}).get("source") != "admin":
            plan.views.append((cid, old["opening_view"], view))
        diff = _differences(old, {k: v for k, v in c.items()
                                  if k not in ("ground_truth", "opening_view")
                                  and (k != "patient" or None not in (v, old["patient"]))})
        gt = c.get("ground_truth")
        answer_changes = has_reference(gt) and gt != old["ground_truth"]
        if revise and answer_changes and has_reference(old["ground_truth"]):
            diff.append("ground_truth")  # a corrected answer: a revision, used or not
        elif answer_changes and not diff:
            answers.append((cid, old["ground_truth"], gt))
        images = [] if sorted(old_series.get(cid, [])) == mine else ["series"]
        masks = sorted((m.position, m.label, m.series, m.sha256) for m in masks_of.get(cid, []))
        if sorted(old_masks.get(cid, []), key=str) != sorted(masks, key=str):
            images.append("masks")
        if images:
            problem("case", cid, f"case {cid} already exists with different content "
                                 f"({', '.join(diff + images)}){_NEW_ID}")
        elif revise and diff:
            plan.changes.append(_revision("case", cid, old, c, diff, problem))
        elif diff:
            problem("case", cid, f"case {cid} already exists with different content "
                                 f"({', '.join(diff)}){_REVISE}")
        else:
            summary.unchanged_cases += 1
    changing = [cid for cid, old, _ in answers if has_reference(old)] + [
        c.item_id for c in plan.changes if c.kind == "case"]
    # Locked first: a draft or submit being saved with the old answer in view (it holds the
    # case's row shared, db.raters.scoring) commits before the scores are counted, or waits.
    for chunk in chunks(changing, IN_CHUNK):
        s.exec(for_update(select(Case.case_id).where(Case.case_id.in_(chunk)))).all()
    used = scores_using(s, changing)
    for cid, old, new in answers:
        if used.get(cid):
            problem("case", cid, f"case {cid}: its reference answer was used by {used[cid]} "
                                 "scores (expert or grader) and cannot change")
        else:
            plan.answers.append((cid, old, new))

    old_tasks = {t.task_id: t for t in fetch_in(s, Task.task_id, (t["task_id"] for t in vb.tasks))}
    for t in vb.tasks:
        old = old_tasks.get(t["task_id"])
        if old is None:
            plan.tasks.append(t)
        elif (diff := _differences(old.model_dump(), t)) and revise:
            plan.changes.append(_revision("task", t["task_id"], old.model_dump(), t, diff,
                                          problem))
        elif diff:
            problem("task", t["task_id"], f"task {t['task_id']} already exists with different "
                                          f"content ({', '.join(diff)}){_REVISE}")
        else:
            summary.unchanged_tasks += 1

    # Revised tasks locked too: a judgment being saved with the old task in view (it holds the
    # task's row shared, db.study.reference.judged_against) commits first, or waits.
    for chunk in chunks([c.item_id for c in plan.changes if c.kind == "task"], IN_CHUNK):
        s.exec(for_update(select(Task.task_id).where(Task.task_id.in_(chunk)))).all()

    old_resp = {r.response_id: r for r in
                fetch_in(s, Response.response_id, (r["response_id"] for r in vb.responses))}
    created = as_created(s, old_resp)  # compared as the bundle had them, before redaction
    taken = {(r.task_id, r.model, r.sample): r.response_id
             for r in fetch_in(s, Response.task_id, (r["task_id"] for r in vb.responses))}
    for r in vb.responses:
        rid = r["response_id"]
        old = old_resp.get(rid)
        if old is not None:
            diff = _differences({**old.model_dump(), **created.get(rid, {})},
                                {**r, "source": "model"})
            if diff:
                problem("response", rid, f"response {rid} already exists with different "
                                         f"content ({', '.join(diff)})")
            else:
                summary.unchanged_responses += 1
            continue
        other = taken.get((r["task_id"], r["model"], r["sample"]))
        if other is not None:
            problem("response", rid, f"model {r['model']} already has sample {r['sample']} for "
                                     f"task {r['task_id']} (response {other})")
            continue
        plan.responses.append(r)
    return plan


def _revision(kind: str, item_id: str, old: dict, new: dict, diff: list[str],
              problem: Callable[[str, str, str], None]) -> Change:
    """The revision of `diff`'s fields; a problem for a field no revision may change."""
    if fixed := [f for f in diff if f not in REVISABLE[kind]]:
        problem(kind, item_id, f"{kind} {item_id}: {', '.join(fixed)} cannot be revised")
    return Change(kind, item_id, {f: old.get(f) for f in diff if f not in fixed},
                  {f: new.get(f) for f in diff if f not in fixed})


def _stored_images(s: Session, shas: set[str]) -> dict[str, tuple[list[int], list[float]]]:
    """Shape and voxel sizes of the images the study already holds (checked when first
    imported), among `shas`. Ends the read transaction so no lock is held while images are read.
    """
    out = {}
    for sha, path, shape, sizes in fetch_in(s, Series.sha256, shas, Series.sha256, Series.path,
                                            Series.shape, Series.voxel_sizes):
        if (nmb_home() / path).is_file():
            out[sha] = (list(shape), list(sizes))
    s.rollback()
    return out


def study_tasks(s: Session, ids: set[str]) -> dict[str, dict]:
    """{task_id: {"level", "stages"}} of the tasks among `ids` that the study holds."""
    return {tid: {"level": level, "stages": list(stages or [])} for tid, level, stages in
            fetch_in(s, Task.task_id, ids, Task.task_id, Task.level, Task.stages)}


def new_blind_codes(s: Session, n: int) -> list[str]:
    """`n` new random, opaque, unique codes ("R-" + 10 hex digits); unrelated to any id or model."""
    used = set(s.exec(select(Response.blind_code)).all())
    out: list[str] = []
    while len(out) < n:
        code = "R-" + secrets.token_hex(5).upper()
        if code not in used:
            used.add(code)
            out.append(code)
    return out


def _insert(s: Session, plan: _Plan, progress: Progress | None, actor: str | None) -> None:
    now = utcnow()
    conn = s.connection()
    if plan.cases:
        conn.execute(insert(Case), [{"opening_view": None, **c, "bundle": plan.bundle,
                                     "created_at": now}
                                    for c in plan.cases])
    if plan.series:
        conn.execute(insert(Series), [
            {"case_id": f.case_id, "position": f.position, "sequence": f.sequence,
             "path": image_path(f.sha256, f.suffix).as_posix(), "sha256": f.sha256,
             "shape": f.shape, "voxel_sizes": f.voxel_sizes, "picture": f.picture,
             "plane": f.plane, "caption": f.caption,
             "width": f.shape[0] if f.picture else None,
             "height": f.shape[1] if f.picture else None} for f in plan.series])
    if plan.masks:
        conn.execute(insert(Mask), [
            {"case_id": m.case_id, "position": m.position, "label": m.label, "series": m.series,
             "path": image_path(m.sha256, m.suffix).as_posix(), "sha256": m.sha256,
             "shape": m.shape, "voxel_sizes": m.voxel_sizes} for m in plan.masks])
    if plan.tasks:
        conn.execute(insert(Task), plan.tasks)
    for cid, patient in plan.links:
        conn.execute(update(Case).where(Case.case_id == cid).values(patient=patient))
        record(s, "case.patient", actor=actor, case=cid, patient=patient, bundle=plan.bundle)
    write_revisions(s, plan.changes, bundle=plan.bundle, actor=actor)
    for cid, old, new in plan.views:
        conn.execute(update(Case).where(Case.case_id == cid).values(opening_view=new))
        record(s, "case.opening_view", actor=actor, case_id=cid, view=new, before=old,
               bundle=plan.bundle)
    for cid, old, new in plan.answers:
        conn.execute(update(Case).where(Case.case_id == cid).values(ground_truth=new))
        record(s, "case.answer", actor=actor, case=cid, old=old, new=new, bundle=plan.bundle)
    codes = new_blind_codes(s, len(plan.responses))
    rows = [{**r, "source": "model", "user_id": None, "blind_code": code, "created_at": now}
            for r, code in zip(plan.responses, codes, strict=True)]
    for i, batch in enumerate(chunks(rows, _BATCH)):
        conn.execute(insert(Response), batch)
        if progress:
            done = min(len(rows), (i + 1) * _BATCH)
            progress(0.8 + 0.2 * done / len(rows), f"inserted {done}/{len(rows)} responses")


def import_bundle(s: Session, path: Path, *, dry_run: bool = False, actor: str | None = None,
                  progress: Progress | None = None, workspace: Workspace | None = None,
                  also: Callable[[Session], None] | None = None,
                  allow_blank: bool = False, revise: bool = False) -> ImportSummary:
    """Validate the bundle at `path` (folder or .zip) and import it in one transaction of `s`.

    Raises BundleInvalid listing every problem (files and conflicts with the study) before
    anything is written. With `dry_run`, runs the same import up to the last statement, rolls
    it back and reports what would be imported. Commits `s` at the end; rolls it back on any
    error (and after a dry run). Works in `workspace` (e.g. the one holding an uploaded zip;
    the caller closes it) or in a workspace of its own. `also(s)` writes what a converter adds
    (e.g. the failures of a Batch output file) in the same transaction, after the inserts.
    A blank image (every voxel or pixel of one value) is refused unless `allow_blank`. With
    `revise`, a changed case record or task is stored as a new revision (db.study.revisions)
    instead of refused; the summary lists the changes field by field.
    """
    started = time.perf_counter()
    own = Workspace(engine=s.get_bind()) if workspace is None else contextlib.nullcontext(workspace)
    with own as ws:
        try:
            summary = _import(s, Path(path), ws, dry_run=dry_run, actor=actor, progress=progress,
                              also=also, allow_blank=allow_blank, revise=revise)
        except BaseException:
            s.rollback()  # before the workspace's sweep reads the study
            raise
    return _finish(summary, started, progress)


def _import(s: Session, path: Path, ws: Workspace, *, dry_run: bool, actor: str | None,
            progress: Progress | None, also: Callable[[Session], None] | None = None,
            allow_blank: bool = False, revise: bool = False) -> ImportSummary:
    vb, problems = open_and_validate(path, workspace=ws, progress=progress,
                                     known_images=lambda shas: _stored_images(s, shas),
                                     known_tasks=lambda ids: study_tasks(s, ids),
                                     allow_blank=allow_blank)
    summary = ImportSummary(bundle=vb.name, dry_run=dry_run)
    timings = summary.timings
    timings.update(vb.timings)
    t = time.perf_counter()
    take_turns(s, "bundle.import")  # a second import waits, then plans on what this one wrote
    plan = _plan(s, vb, summary, revise) if not problems else _Plan()
    plan.bundle = vb.name
    timings["db_check"] = time.perf_counter() - t
    if problems or plan.problems:
        raise BundleInvalid(vb.label, problems + plan.problems)
    summary.new_cases, summary.new_series = len(plan.cases), len(plan.series)
    summary.new_masks = len(plan.masks)
    summary.new_tasks, summary.new_responses = len(plan.tasks), len(plan.responses)
    summary.new_answers = sum(not has_reference(old) for _, old, _ in plan.answers)
    summary.changed_answers = len(plan.answers) - summary.new_answers
    summary.linked_cases = len(plan.links)
    summary.changed_views = len(plan.views)
    summary.revised_cases = sum(c.kind == "case" for c in plan.changes)
    summary.revised_tasks = len(plan.changes) - summary.revised_cases
    summary.revisions = [line for c in plan.changes for line in c.lines()]
    t = time.perf_counter()
    flags = flag_new(s, plan.responses)
    summary.flagged_responses = len(flags)
    timings["model_names"] = time.perf_counter() - t
    summary.images_inspected = vb.images_inspected
    if not summary.changed and also is None:
        s.rollback()
        return summary
    t = time.perf_counter()
    images = [] if dry_run else [*plan.series, *plan.masks]
    for i, sf in enumerate(images, start=1):
        if ws.store_image(sf.source, sf.sha256, sf.suffix, name=sf.file):
            summary.images_copied += 1
        else:
            summary.images_already_stored += 1
        if progress:
            progress(0.7 + 0.1 * i / len(images), f"stored {i} images")
    timings["copy"] = time.perf_counter() - t
    t = time.perf_counter()
    try:
        _insert(s, plan, progress, actor)
        s.add_all(flags)
        if also is not None:
            also(s)
        record(s, "bundle.import", actor=actor, bundle=vb.name, source=path.name,
               cases=summary.new_cases, series=summary.new_series,
               masks=summary.new_masks, tasks=summary.new_tasks,
               responses=summary.new_responses, flagged=summary.flagged_responses,
               answers_added=summary.new_answers, answers_changed=summary.changed_answers,
               **({"revised": len(plan.changes)} if plan.changes else {}),
               **({"linked": summary.linked_cases} if summary.linked_cases else {}))
        s.flush()
        timings["db_insert"] = time.perf_counter() - t
        if dry_run:
            s.rollback()
            return summary
        t = time.perf_counter()
        s.commit()
    except IntegrityError:  # written meanwhile by what does not take turns with imports
        raise UserError(f"bundle {vb.label}: the study changed while it was imported (a "
                        "collection run or an exam wrote one of its ids or model, task and "
                        "sample meanwhile); nothing was imported: import it again to see what "
                        "conflicts") from None
    ws.keep_images()
    timings["commit"] = time.perf_counter() - t
    return summary


def _finish(summary: ImportSummary, started: float, progress: Progress | None) -> ImportSummary:
    summary.timings["total"] = time.perf_counter() - started
    if progress:
        progress(1.0, str(summary))
    return summary
