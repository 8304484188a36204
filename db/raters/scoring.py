"""Blinded expert scoring: a rater's queue, the item they see, drafts, submits, revisions.

Blinding is enforced here, not in the page: `ScoringItem` carries no model name, no source
(model or human), no other rater's score and no grader score; the page can only show what
this module hands it.
"""

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, select

from db.audit import record
from db.busy import DRAFT_KEPT, SCORE_KEPT, person_write
from db.locks import for_share
from db.models import (
    Assignment,
    AssignmentDesign,
    Case,
    ExpertScore,
    Response,
    ScoreRevision,
    Task,
    User,
    utcnow,
)
from db.raters.looks import suspend_after_change
from db.rubrics import rubric_by_hash
from db.study.cases import case_series, case_view
from db.study.masks import MaskImage, masks_for_task
from db.study.reference import (
    Against,
    content_digest,
    has_reference,
    judged_against,
    missing_message,
    require_reference,
)
from db.study.retire import taken_out
from db.text_limits import COMMENT, check_length
from errors import UserError
from rubric.scoring import SCORE_FIELDS as RUBRIC_SCORE_FIELDS
from rubric.scoring import validate_score

IDLE_CAP_SECONDS = 300.0  # gaps between interactions longer than this are not active time
# What a rater enters: the rubric's score fields but the derived overall, and (multi-turn
# items) a judgment of each stage's answer but the last (`ExpertScore.stage_correct`).
SCORE_FIELDS = tuple(f for f in RUBRIC_SCORE_FIELDS if f != "overall")
STAGE_FIELD = "stage_correct"
SAVED_FIELDS = (*SCORE_FIELDS, STAGE_FIELD)


FLAG_CONFIDENCE = 1  # "Very unsure: I would like another rater to look at this."


class StaleForm(UserError):
    """The form was drawn from what is no longer stored: its draft or submit is refused and
    the page draws the item again as it is now."""


class StaleScore(StaleForm):
    """The form was opened on a revision that is no longer the latest: another tab or session
    submitted the item since. Its draft or submit is refused, so a stale form cannot undo that
    submit; `revision` is the latest one."""

    def __init__(self, blind_code: str, revision: int) -> None:
        super().__init__(f"item {blind_code} was submitted in another tab or session since this "
                         f"form was opened (now revision {revision}): your change is not saved; "
                         "the form shows the latest revision")
        self.revision = revision


class ChangedItem(StaleForm):
    """What the rater scored against changed since the form showed it: an import gave the case
    another reference answer (allowed while no score has used it), a revision changed its case
    record or task, or a review changed the response's words. A score must be given with what
    it is stored against in view."""

    def __init__(self, blind_code: str) -> None:
        super().__init__(f"item {blind_code} changed since this form showed it (its case, its "
                         "task or the response's words): your change is not saved; the page "
                         "shows the item as it is now")


class OtherItem(StaleForm):
    """The write names another item than the one it would be stored on: the form it was made
    on is no longer the one shown (the page moved on, or fell behind, while the click was on
    its way). Refused, so a click lands on the item it was made on or nowhere."""

    def __init__(self, made_on: str, blind_code: str) -> None:
        super().__init__(f"this change was made on item {made_on}, but item {blind_code} is "
                         f"shown: it is not saved; the form shows item {blind_code}")


def shown_digest(against: Against) -> str:
    """A digest of what a score is given against (`db.study.reference.judged_against`): the
    response's words, the case's reference answer, and the rest of the case record and task
    (a revision may change them; images cannot change once imported)."""
    text, turns, reference, content = against
    shown = json.dumps([reference, text, turns or [], content], sort_keys=True,
                       ensure_ascii=False)
    return hashlib.sha256(shown.encode()).hexdigest()


@dataclass
class QueueEntry:
    assignment_id: int
    position: int
    blind_code: str
    status: str  # "new" | "draft" | "submitted"
    family: str = ""
    level: int = 0
    flagged: bool = False  # the rater's own confidence is FLAG_CONFIDENCE (draft or submit)
    practice: bool = False  # a practice item (db.study.practice): first, never counted


@dataclass(frozen=True)
class QueueFilter:
    """Which queue entries to list: every field left at its default lets all through."""

    unscored: bool = False  # not submitted (new or draft)
    flagged: bool = False
    family: str | None = None
    level: int | None = None

    def admits(self, e: QueueEntry) -> bool:
        return ((not self.unscored or e.status != "submitted")
                and (not self.flagged or e.flagged)
                and self.family in (None, e.family) and self.level in (None, e.level))


def filter_queue(entries: list[QueueEntry], wanted: QueueFilter) -> list[QueueEntry]:
    return [e for e in entries if wanted.admits(e)]


def first_to_open(entries: list[QueueEntry], asked: str | None = None) -> int:
    """The item a new page opens (the queue is not empty): the one of blind code `asked` (the
    page's address, so a reload stays on its item), else the first not submitted, else the
    first."""
    return next((e.assignment_id for e in entries if asked and e.blind_code == asked),
                next((e.assignment_id for e in entries if e.status != "submitted"),
                     entries[0].assignment_id))


def next_unscored(entries: list[QueueEntry], current: int, wanted: QueueFilter) -> int:
    """The next item after `current`, in queue order and around, that is not submitted and
    that `wanted` admits; `current` when there is none."""
    at = [e.assignment_id for e in entries].index(current)
    later = [e for e in entries[at + 1:] + entries[:at]
             if e.status != "submitted" and wanted.admits(e)]
    return later[0].assignment_id if later else current


def step(entries: list[QueueEntry], current: int, wanted: QueueFilter, by: int) -> int:
    """The next (`by` 1) or previous (-1) item that `wanted` admits, from `current`'s queue
    position (the current item need not be admitted), around the ends; `current` when none is."""
    listed = filter_queue(entries, wanted)
    if not listed:
        return current
    ids = [e.assignment_id for e in entries]
    position = ids.index(current)
    after = [e for e in listed if (ids.index(e.assignment_id) - position) * by > 0]
    return ((after[0] if by > 0 else after[-1]) if after
            else listed[0 if by > 0 else -1]).assignment_id


def find_entry(entries: list[QueueEntry], text: str) -> QueueEntry | None:
    """The entry at a 1-based position, else the one whose blind code is `text` ignoring case,
    spaces and the "R-" prefix, else the only one whose code contains it (3 characters or
    more); None when there is no such entry or several."""
    wanted = text.strip().casefold().replace(" ", "")
    if not wanted:
        return None
    if wanted.isascii() and wanted.isdigit() and (
            at := next((e for e in entries if e.position + 1 == int(wanted)), None)):
        return at
    bare = wanted.removeprefix("r-")
    exact = [e for e in entries if e.blind_code.casefold().removeprefix("r-") == bare]
    if exact:
        return exact[0]
    partial = [e for e in entries if len(bare) >= 3 and bare in e.blind_code.casefold()]
    return partial[0] if len(partial) == 1 else None


@dataclass
class ScoringItem:
    """Everything the scoring page may show, and nothing else."""

    assignment_id: int
    blind_code: str
    rubric_hash: str
    case_id: str
    case_title: str
    ehr: str
    scores: dict[str, float]
    series: list[tuple[str, Path]]
    family: str
    level: int
    prompt: str
    stages: list[str]
    reference: dict[str, Any]
    text: str
    turns: list[str]
    values: dict[str, Any] = field(default_factory=dict)  # the draft, else the last submit
    status: str = "new"
    revision: int = 0
    masks: list[MaskImage] = field(default_factory=list)  # only where the task allows them
    key_slices: list[dict[str, Any]] = field(default_factory=list)  # the case's, as imported
    opening_view: dict[str, Any] | None = None  # the case's (imaging.opening_view)
    practice: bool = False  # a practice item (db.study.practice): scored, never counted
    shown: str = ""  # `shown_digest` of the reference answer and words shown: a save names it

    def on_screen(self) -> "OnScreen":
        return OnScreen(self.assignment_id, self.blind_code, self.shown)


@dataclass(frozen=True)
class OnScreen:
    """What a page shows: the item's assignment, its blind code and `shown_digest`. A write
    made on a form names the form's blind code (`item`) and is stored on the assignment shown,
    or refused (`OtherItem`)."""

    assignment_id: int
    blind_code: str
    shown: str


def queue(s: Session, *, rater_id: int) -> list[QueueEntry]:
    """The rater's items in queue order, the practice items first (db.study.practice), with the
    task's family and level and whether the rater flagged the item (nothing about the
    response's source); `position` is the place in that order."""
    rows = s.exec(
        select(Assignment.id, Assignment.position, Response.blind_code, ExpertScore.status,
               Task.family, Task.level, ExpertScore.confidence, ExpertScore.draft,
               Response.response_id, Task.practice)
        .join(Response, Response.response_id == Assignment.response_id)
        .join(Task, Task.task_id == Response.task_id)
        .join(ExpertScore, ExpertScore.assignment_id == Assignment.id, isouter=True)
        .where(Assignment.rater_id == rater_id)
        .order_by(Task.practice.desc(), Assignment.position)
    )
    out = taken_out(s).responses  # a retired item leaves the queue unless it is scored
    kept = [(aid, code, status, family, level, confidence, draft, practice)
            for aid, _, code, status, family, level, confidence, draft, rid, practice in rows
            if status == "submitted" or rid not in out]
    return [QueueEntry(aid, k, code, "new" if status is None else status, family, level,
                       _flagged(confidence, draft), bool(practice))
            for k, (aid, code, status, family, level, confidence, draft, practice)
            in enumerate(kept)]


def _flagged(confidence: int | None, draft: dict[str, Any] | None) -> bool:
    """The draft's confidence where there is a draft, else the submitted one."""
    if isinstance(draft, dict):
        confidence = draft.get("confidence")
    return confidence == FLAG_CONFIDENCE


def _assignment(s: Session, rater_id: int, assignment_id: int, *,
                writing: bool = False) -> Assignment:
    """The rater's assignment; UserError when it is not theirs, or the account is disabled or
    no longer an expert's.
    `writing`: the account's row is read share-locked, as stored now, so a disable being
    committed is waited for and refuses the write (or waits for it)."""
    a = s.get(Assignment, assignment_id)
    if a is None or a.rater_id != rater_id:
        raise UserError(f"assignment {assignment_id} is not in your queue")
    q = select(User).where(User.id == rater_id)
    if writing:
        q = for_share(q)
    rater = s.exec(q).first()
    if rater is None or rater.disabled:
        raise UserError("this account is disabled")
    if rater.role != "expert":  # demoted while the page was open: its sessions ended
        raise UserError(f"this account is no longer an expert's (it is {rater.role!r})")
    if a.response_id in taken_out(s).responses and (
            (score := _score_row(s, a.id, lock=False)) is None or score.status != "submitted"):
        raise UserError("this item is retired: it left your queue")
    return a


def _score_row(s: Session, assignment_id: int, *, lock: bool) -> ExpertScore | None:
    q = select(ExpertScore).where(ExpertScore.assignment_id == assignment_id)
    return s.exec(q.with_for_update() if lock else q).first()


def _values(score: ExpertScore) -> dict[str, Any]:
    return {k: getattr(score, k) for k in SAVED_FIELDS}


def _rubric_hash(s: Session, a: Assignment) -> str:
    return s.get(AssignmentDesign, a.design_id).rubric_hash


def item_volumes(s: Session, *, rater_id: int, assignment_id: int) -> list[tuple[str, Path]]:
    """The volume series of an item of the rater's queue (the viewer fetches them ahead, while
    the item before it is scored); none for an item the rater may not open."""
    try:
        a = _assignment(s, rater_id, assignment_id)
    except UserError:
        return []
    task = s.get(Task, s.get(Response, a.response_id).task_id)
    return [x for x in case_series(s, task.case_id) if not x.picture]


def load_item(s: Session, *, rater_id: int, assignment_id: int) -> ScoringItem:
    a = _assignment(s, rater_id, assignment_id)
    resp = s.get(Response, a.response_id)
    task = s.get(Task, resp.task_id)
    case = case_view(s, case_id=task.case_id)
    if not has_reference(case.ground_truth):  # nothing to score against
        raise UserError(missing_message([task.task_id]))
    score = _score_row(s, assignment_id, lock=False)
    values: dict[str, Any] = {}
    if score is not None:
        values = dict(score.draft) if score.draft is not None else _values(score)
    return ScoringItem(
        assignment_id=a.id, blind_code=resp.blind_code, rubric_hash=_rubric_hash(s, a),
        case_id=case.case_id, case_title=case.title, ehr=case.ehr, scores=case.scores,
        series=case.series, family=task.family, level=task.level, prompt=task.prompt,
        stages=list(task.stages or []), reference=case.ground_truth, text=resp.text,
        turns=list(resp.turns or []), values=values,
        status="new" if score is None else score.status,
        revision=0 if score is None else score.revision,
        masks=masks_for_task(s, task=task),
        key_slices=case.key_slices, opening_view=case.opening_view, practice=task.practice,
        shown=shown_digest((resp.text, resp.turns, case.ground_truth,
                            content_digest(s.get(Case, task.case_id), task))),
    )


def _retrying(s: Session, write: Callable[[], ExpertScore]) -> ExpertScore:
    """Run a write; when a concurrent first write of the same score wins the unique
    constraint, roll back and run it again on top of the winner (so nothing is lost)."""
    for attempt in range(3):
        try:
            return write()
        except IntegrityError:
            s.rollback()
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


@person_write(DRAFT_KEPT)
def save_draft(
    s: Session, *, rater_id: int, assignment_id: int, values: dict[str, Any],
    active_seconds: float = 0.0, base_revision: int | None = None, shown: str | None = None,
    item: str | None = None,
) -> ExpertScore:
    """Save the form as it is now (unvalidated) and add the active time since the last save.
    `base_revision`: the revision the form was opened on (0: none); StaleScore when another
    submit came since. `shown`: the `ScoringItem.shown` of the page the rater saw; ChangedItem
    when the item has changed since. `item`: the blind code of the item the form was made on;
    OtherItem, nothing stored, when it is not `assignment_id`'s (None: no check). Retried while
    the database is busy, until its deadline (db.busy)."""
    return _retrying(s, lambda: _save_draft(s, rater_id, assignment_id, values, active_seconds,
                                            base_revision, shown, item))


def _locked_score(s: Session, a: Assignment, base_revision: int | None = None) -> ExpertScore:
    """The assignment's score row, locked for update, or a new one; StaleScore when its
    revision is not `base_revision` (None: no check)."""
    score = _score_row(s, a.id, lock=True) or ExpertScore(
        assignment_id=a.id, rubric_hash=_rubric_hash(s, a), criteria={}, error_tags=[])
    if base_revision is not None and score.revision != base_revision:
        raise StaleScore(_blind_code(s, a), score.revision)
    return score


def _blind_code(s: Session, a: Assignment) -> str:
    return s.exec(select(Response.blind_code).where(Response.response_id == a.response_id)).one()


def _check_item(s: Session, a: Assignment, item: str | None) -> None:
    """OtherItem unless `item` (None: no check) is the blind code of `a`'s response."""
    if item is not None and (code := _blind_code(s, a)) != item:
        raise OtherItem(item, code)


def _check_shown(s: Session, a: Assignment, shown: str | None) -> None:
    """ChangedItem unless the item's reference answer and words are still those `shown`, read
    share-locked (`judged_against`): an import or review changing them waits for this save
    (and an import then sees the score: db.bundle.importer) or came first."""
    if shown is None:
        return
    [against] = judged_against(s, [a.response_id]).values()
    if shown_digest(against) != shown:
        raise ChangedItem(_blind_code(s, a))


def _active(seconds: float) -> float:
    return min(max(seconds, 0.0), IDLE_CAP_SECONDS)


def _check_comment(values: dict[str, Any]) -> None:
    """An over-long comment is refused (a draft too), whatever the rubric says of comments."""
    if isinstance(comment := values.get("comment"), str):
        check_length("the comment", comment, COMMENT)


def _save_draft(s, rater_id, assignment_id, values, active_seconds, base_revision,
                shown, item) -> ExpertScore:
    _check_comment(values)
    a = _assignment(s, rater_id, assignment_id, writing=True)
    _check_item(s, a, item)
    score = _locked_score(s, a, base_revision)
    _check_shown(s, a, shown)
    score.draft = {k: values.get(k) for k in SAVED_FIELDS}
    record(s, "score.draft", actor=None, assignment=assignment_id, rater=rater_id)
    score.active_seconds += _active(active_seconds)
    score.updated_at = utcnow()
    s.add(score)
    s.commit()
    return score


@person_write(SCORE_KEPT)
def submit(
    s: Session, *, rater_id: int, assignment_id: int, values: dict[str, Any],
    active_seconds: float = 0.0, actor: str | None = None, base_revision: int | None = None,
    shown: str | None = None, item: str | None = None,
) -> ExpertScore:
    """Validate against the rubric and record a new revision (the latest one counts).
    `base_revision`, `shown` and `item`: as for `save_draft`, so two tabs submitting one form
    record it once, and a score is never stored against what the rater did not see nor on
    another item than the one it was given on. Retried while the database is busy, until its
    deadline (db.busy)."""
    return _retrying(s, lambda: _submit(s, rater_id, assignment_id, values, active_seconds, actor,
                                        base_revision, shown, item))


def _submit(s, rater_id, assignment_id, values, active_seconds, actor,
            base_revision, shown, item) -> ExpertScore:
    a = _assignment(s, rater_id, assignment_id, writing=True)
    _check_item(s, a, item)
    score = record_submission(s, assignment=a, values=values, active_seconds=active_seconds,
                              base_revision=base_revision, shown=shown)
    record(s, "score.submit", actor=actor, assignment=assignment_id, revision=score.revision)
    s.commit()
    return score


def stage_judgments(value: Any, n_judged: int) -> list[bool | None] | None:
    """The stage judgments as stored: None when none is given (or the task has one stage),
    else a list of `n_judged` (the stages but the last) True/False/None; UserError otherwise.
    Optional: a stage left unjudged is None."""
    if value is None or n_judged == 0:
        if value not in (None, []) and n_judged == 0:
            raise UserError("stage_correct: this task has one stage, so no stage judgments")
        return None
    if not isinstance(value, list) or len(value) != n_judged:
        raise UserError(f"stage_correct: expected a list of {n_judged} judgments (true, false or "
                        f"null), one per stage but the last")
    if any(v is not None and not isinstance(v, bool) for v in value):
        raise UserError("stage_correct: each judgment must be true, false or null")
    return None if all(v is None for v in value) else list(value)


def record_submission(
    s: Session, *, assignment: Assignment, values: dict[str, Any], active_seconds: float = 0.0,
    synthetic: bool = False, base_revision: int | None = None, shown: str | None = None,
    imported: bool = False,
) -> ExpertScore:
    """Validate `values` against the rubric and add a revision in the session's transaction
    (the caller commits). `synthetic` marks generated scores (the demo); `imported` scores
    brought in by `nmb import-scores` (no confidence asked; its revision's content says
    "imported"); `base_revision` and `shown`: as for `save_draft`."""
    a = assignment
    _check_comment(values)
    family, task_id, stages = s.exec(select(Task.family, Task.task_id, Task.stages)
                                     .join(Response, Response.task_id == Task.task_id)
                                     .where(Response.response_id == a.response_id)).one()
    require_reference(s, task_ids=[task_id])
    score = _locked_score(s, a, base_revision)
    _check_shown(s, a, shown)
    clean = validate_score(rubric_by_hash(s, score.rubric_hash),
        {k: values.get(k) for k in SCORE_FIELDS}, family=family,
        require_confidence=False if imported else None)
    clean[STAGE_FIELD] = stage_judgments(values.get(STAGE_FIELD), len(stages or []))
    before = _values(score) if score.revision else {}
    for k in SAVED_FIELDS:
        setattr(score, k, clean[k])
    score.overall = clean["overall"]
    score.draft = None
    score.status = "submitted"
    score.synthetic = synthetic
    score.imported = imported
    score.revision += 1
    score.active_seconds += _active(active_seconds)
    score.submitted_at = score.updated_at = utcnow()
    s.add(score)
    s.flush()
    after = _values(score)
    changes = {k: {"from": before.get(k), "to": after[k]} for k in SAVED_FIELDS
               if before.get(k) != after[k]}
    s.add(ScoreRevision(score_id=score.id, revision=score.revision, rater_id=a.rater_id,
                        content={**after, "overall": score.overall,
                                 **({"imported": True} if imported else {})},
                        changes=changes))
    verb = "an expert score added" if score.revision == 1 else "an expert score revised"
    suspend_after_change(s, response_id=a.response_id, imported=imported,
                         what=f"{verb} (rater {a.rater_id}, revision {score.revision})"
                              f"{', imported' if imported else ''}")
    return score
