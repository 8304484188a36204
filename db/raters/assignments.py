"""Who scores what: the calibration subset, rater assignments, and rater progress."""

from dataclasses import dataclass, field

import numpy as np
from sqlalchemy import func
from sqlmodel import Session, select

from db.audit import record
from db.locks import take_turns
from db.models import (
    Assignment,
    AssignmentDesign,
    CalibrationItem,
    ExpertScore,
    Response,
    Task,
    User,
)
from db.raters.design import balanced_design, split_dev_heldout, stratified_sample
from db.raters.response_flags import held
from db.study.reference import require_reference_for_responses
from db.study.retire import taken_out
from errors import UserError, counted

DESIGN = "raters.design"  # draws and assignments take turns on it (db.locks)


def _strata(s: Session) -> dict[str, tuple[str, int, str]]:
    """(family, level, source) of every response: the strata of calibration sampling."""
    rows = s.exec(select(Response.response_id, Task.family, Task.level, Response.source)
                  .join(Task, Task.task_id == Response.task_id))
    return {rid: (fam, lvl, "model" if src == "model" else "human") for rid, fam, lvl, src in rows}


def draw_calibration(
    s: Session, *, n: int, dev_fraction: float = 0.5, seed: int = 0, actor: str | None = None
) -> dict[str, int]:
    """Draw the calibration subset (stratified by family, level and source) and split it.

    The subset is pre-registered: once drawn it cannot be redrawn, so the held-out part stays
    untouched by prompt tuning.
    """
    take_turns(s, DESIGN)
    if s.exec(select(CalibrationItem)).first() is not None:
        raise UserError("the calibration subset is already drawn; it is fixed once drawn")
    strata = _strata(s)
    require_reference_for_responses(s, response_ids=strata)  # the subset is graded and scored
    chosen = stratified_sample(strata, n, seed)
    parts = split_dev_heldout({r: strata[r] for r in chosen}, dev_fraction, seed)
    for rid, part in parts.items():
        s.add(CalibrationItem(response_id=rid, part=part, seed=seed))
    record(s, "calibration.draw", actor=actor, n=n, seed=seed, dev_fraction=dev_fraction)
    counts = {"dev": 0, "heldout": 0}
    for part in parts.values():
        counts[part] += 1
    return counts


@dataclass(frozen=True)
class AssignmentPlan:
    """What `assign` would add: the items and each rater's queue before and after.

    `unopened`: rater -> items of their queue they have not opened yet (no draft, no
    submit), among which the added items are mixed (`assign`)."""

    selection: str
    overlap: int
    items: list[str]
    queues: dict[str, list[str]]  # rater -> the items added to their queue, in queue order
    before: dict[str, int]  # rater -> items in their queue now
    unopened: dict[str, int] = field(default_factory=dict)

    def describe(self) -> str:
        """One line, e.g. "adds 82 items (3 raters each): e1 120 -> 202 (+82), ..."; it names
        the raters who have opened every item, to whom the added items come as a block."""
        loads = ", ".join(f"{name} {self.before[name]} -> {self.before[name] + len(q)} "
                          f"(+{len(q)})" for name, q in self.queues.items())
        what = "calibration item" if self.selection == "calibration" else "item"
        line = (f"adds {counted(len(self.items), what)} ({counted(self.overlap, 'rater')} each): "
                f"{loads}")
        late = [name for name, q in self.queues.items()
                if q and self.before[name] and not self.unopened.get(name)]
        if late:
            line += (f"; {', '.join(late)} {'has' if len(late) == 1 else 'have'} opened every "
                     "item already, so the added ones follow as a batch of their own, which "
                     "tells them apart (e.g. as the human answers) unless it mixes sources")
        return line


def plan_assignment(
    s: Session, *, raters: list[str], overlap: int = 3, selection: str = "all", seed: int = 0,
) -> AssignmentPlan:
    """What assigning each not-yet-assigned item of `selection` to `overlap` raters adds
    (balanced design, seeded queues); nothing is written.

    Responses that name a model and are not reviewed yet (db.raters.response_flags) wait: a later
    call assigns them once reviewed."""
    users = {u.name: u for u in s.exec(select(User).where(User.name.in_(raters)))}
    for name in raters:
        user = users.get(name)
        if user is None:
            raise UserError(f"no user named {name!r}")
        if user.role != "expert" or user.disabled:
            raise UserError(f"{name!r} is not an active expert")
    if selection == "all":
        query = select(Response.response_id)
    elif selection == "calibration":
        query = select(CalibrationItem.response_id)
    else:
        raise UserError(f"selection {selection!r} is not 'all' or 'calibration'")
    assigned, on_hold = set(s.exec(select(Assignment.response_id).distinct())), held(s)
    retired = taken_out(s).responses
    items = sorted(r for r in s.exec(query)
                   if r not in assigned and r not in on_hold and r not in retired)
    if not items:
        raise UserError(f"every item of {selection!r} is already assigned, retired or waits "
                        "for review on /admin")
    require_reference_for_responses(s, response_ids=items)
    counts = dict(s.exec(select(Assignment.rater_id, func.count())
                         .group_by(Assignment.rater_id)).all())
    return AssignmentPlan(selection=selection, overlap=overlap, items=items,
                          queues=balanced_design(items, raters, overlap, seed),
                          before={name: counts.get(users[name].id, 0) for name in raters},
                          unopened={name: len(_unopened(s, users[name].id)) for name in raters})


def _unopened(s: Session, rater_id: int) -> list[Assignment]:
    """The rater's assignments without a draft or a submit, in queue order."""
    return list(s.exec(select(Assignment)
                       .join(ExpertScore, ExpertScore.assignment_id == Assignment.id,
                             isouter=True)
                       .where(Assignment.rater_id == rater_id, ExpertScore.id.is_(None))
                       .order_by(Assignment.position)))


def _mixed_in(s: Session, rows: list[Assignment], rater_id: int, first: int,
              rng: np.random.Generator) -> None:
    """Give the new `rows` positions mixed at random among the rater's unopened items (each
    list keeps its own order; opened items keep their places): appended after the queue, a
    batch of one source (the exam's human answers, a model collected later, responses
    released by a flag review) would be told apart by where it stands."""
    waiting = _unopened(s, rater_id)
    slots = [a.position for a in waiting] + list(range(first, first + len(rows)))
    new = set(rng.choice(len(slots), size=len(rows), replace=False).tolist())
    old_rows, new_rows = iter(waiting), iter(rows)
    for k, slot in enumerate(slots):
        row = next(new_rows) if k in new else next(old_rows)
        row.position = slot
        s.add(row)


def assign(
    s: Session, *, rubric_hash: str, raters: list[str], overlap: int = 3,
    selection: str = "all", seed: int = 0, actor: str | None = None,
    expect: AssignmentPlan | None = None,
) -> AssignmentDesign:
    """Assign what `plan_assignment` plans (balanced design, seeded queues), each rater's new
    items mixed among the items they have not opened yet. With `expect` (a preview shown to
    the user), refuses if the plan has changed since. Two at once take turns (the second
    plans on what the first assigned), as do draws of the subset."""
    take_turns(s, DESIGN)
    plan = plan_assignment(s, raters=raters, overlap=overlap, selection=selection, seed=seed)
    if expect is not None and (plan.items, plan.queues) != (expect.items, expect.queues):
        raise UserError("the items to assign changed since the preview (someone assigned or "
                        "flagged responses meanwhile): preview again")
    design = AssignmentDesign(rubric_hash=rubric_hash, selection=selection, overlap=overlap,
                              seed=seed, created_by=actor)
    s.add(design)
    s.flush()
    ids = dict(s.exec(select(User.name, User.id).where(User.name.in_(raters))).all())
    start = dict(s.exec(select(Assignment.rater_id, func.max(Assignment.position))
                        .group_by(Assignment.rater_id)).all())
    for r, (name, queue) in enumerate(plan.queues.items()):
        rows = [Assignment(design_id=design.id, rater_id=ids[name], response_id=rid, position=-1)
                for rid in queue]
        _mixed_in(s, rows, ids[name], start.get(ids[name], -1) + 1,
                  np.random.default_rng([seed, r, design.id]))
    record(s, "assign", actor=actor, design=design.id, raters=raters, overlap=overlap,
           selection=selection, seed=seed, items=len(plan.items))
    return design


@dataclass
class RaterProgress:
    rater: str
    assigned: int
    submitted: int
    drafts: int
    active_minutes: float


def rater_progress(s: Session) -> list[RaterProgress]:
    rows = s.exec(
        select(User.name, func.count(Assignment.id),
               func.count(ExpertScore.submitted_at), func.count(ExpertScore.id),
               func.coalesce(func.sum(ExpertScore.active_seconds), 0.0))
        .join(Assignment, Assignment.rater_id == User.id)
        .join(ExpertScore, ExpertScore.assignment_id == Assignment.id, isouter=True)
        .group_by(User.name).order_by(User.name)
    )
    return [RaterProgress(name, n, sub, started - sub, round(secs / 60, 1))
            for name, n, sub, started, secs in rows]


def below_overlap(s: Session) -> list[tuple[str, int, int]]:
    """(blind code, submitted scores, assigned raters) of items not yet fully scored."""
    rows = s.exec(
        select(Response.blind_code, func.count(ExpertScore.submitted_at), func.count(Assignment.id))
        .join(Assignment, Assignment.response_id == Response.response_id)
        .join(ExpertScore, ExpertScore.assignment_id == Assignment.id, isouter=True)
        .group_by(Response.blind_code).order_by(Response.blind_code)
    )
    return [(code, done, n) for code, done, n in rows if done < n]
