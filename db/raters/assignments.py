"""Who scores what: the calibration subset, rater assignments, and rater progress.

`nmb assign --items` picks what a design draws from, always among the responses not assigned
yet (an item is assigned once, to `overlap` raters): `all` (the same as `unassigned`, its
explicit name), `calibration` (the calibration subset), `human` (exam answers), `model:NAME`
(one model's responses). A response released from model-name review joins the queues of the
design it belongs to (`join_design`), or the admin is told to assign it."""

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
from db.queries import fetch_in
from db.raters.design import balanced_design, split_dev_heldout, stratified_sample
from db.raters.response_flags import held
from db.study.practice import practice_responses
from db.study.reference import require_reference_for_responses
from db.study.retire import taken_out
from errors import UserError, counted

DESIGN = "raters.design"  # draws and assignments take turns on it (db.locks)


def _strata(s: Session) -> dict[str, tuple[str, int, str]]:
    """(family, level, source) of every response but those to practice tasks (never counted,
    so never a calibration pair: db.study.practice): the strata of calibration sampling."""
    rows = s.exec(select(Response.response_id, Task.family, Task.level, Response.source)
                  .join(Task, Task.task_id == Response.task_id)
                  .where(Task.practice.is_(False)))
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
    sources: dict[str, int] = field(default_factory=dict)  # model name or role -> items
    # practice items (db.study.practice) added to the queues of the raters without them: each
    # goes to every rater, whatever the selection and the overlap, and is not in `items`
    practice: list[str] = field(default_factory=list)

    def describe_sources(self) -> str:
        """Where the items come from, e.g. "from: model-alpha 3, student 2"."""
        return "from: " + ", ".join(f"{k} {n}" for k, n in sorted(self.sources.items()))

    def describe(self) -> str:
        """One line, e.g. "adds 82 items (3 raters each): e1 120 -> 202 (+82), ..."; it names
        the raters who have opened every item, to whom the added items come as a block."""
        loads = ", ".join(f"{name} {self.before[name]} -> {self.before[name] + len(q)} "
                          f"(+{len(q)})" for name, q in self.queues.items())
        kind, model = parse_selection(self.selection)
        what = {"calibration": "calibration item", "human": "human answer"}.get(kind, "item")
        of = f" of model {model!r}" if model else ""
        line = (f"adds {counted(len(self.items), what)}{of} ({counted(self.overlap, 'rater')} "
                "each)"
                + (f" and {counted(len(self.practice), 'practice item')} (every rater)"
                   if self.practice else "")
                + f": {loads}")
        late = [name for name, q in self.queues.items()
                if q and self.before[name] and not self.unopened.get(name)]
        if late:
            line += (f"; {', '.join(late)} {'has' if len(late) == 1 else 'have'} opened every "
                     "item already, so the added ones follow as a batch of their own, which "
                     "tells them apart (e.g. as the human answers) unless it mixes sources")
        return line


SELECTIONS = ("all", "unassigned", "calibration", "human", "model:NAME")


def parse_selection(selection: str) -> tuple[str, str | None]:
    """("model", NAME) for "model:NAME", else (selection, None); UserError for another word."""
    kind, _, model = selection.partition(":")
    if kind == "model" and model.strip():
        return "model", model.strip()
    if selection in SELECTIONS[:-1]:
        return selection, None
    raise UserError(f"items {selection!r} are not one of {', '.join(SELECTIONS)}")


def _selected(s: Session, selection: str) -> list[str]:
    """The response ids of `selection` (assigned or not)."""
    kind, model = parse_selection(selection)
    if kind == "calibration":
        return list(s.exec(select(CalibrationItem.response_id)))
    query = select(Response.response_id)
    if kind == "human":
        query = query.where(Response.source != "model")
    elif kind == "model":
        query = query.where(Response.source == "model", Response.model == model)
        found = list(s.exec(query))
        if not found:
            models = response_models(s)
            raise UserError(f"no response of model {model!r} (models: "
                            f"{', '.join(models[:10]) or 'none yet'})")
        return found
    return list(s.exec(query))


def response_models(s: Session) -> list[str]:
    """The models whose responses the study holds (what `model:NAME` may name)."""
    return sorted(m for m in s.exec(select(Response.model).distinct()) if m)


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
    selected = _selected(s, selection)
    assigned, on_hold = set(s.exec(select(Assignment.response_id).distinct())), held(s)
    retired = taken_out(s).responses
    practice = sorted(practice_responses(s) - retired - on_hold)
    items = sorted(r for r in selected if r not in assigned and r not in on_hold
                   and r not in retired and r not in practice)
    has = set(s.exec(select(Assignment.rater_id, Assignment.response_id)
                     .where(Assignment.response_id.in_(practice)))) if practice else set()
    learn = {name: [r for r in practice if (users[name].id, r) not in has] for name in raters}
    if not items and not any(learn.values()):
        raise UserError(f"every item of {selection!r} is already assigned, retired or waits "
                        "for review on /admin")
    require_reference_for_responses(s, response_ids=[*items, *practice])
    counts = dict(s.exec(select(Assignment.rater_id, func.count())
                         .group_by(Assignment.rater_id)).all())
    sources: dict[str, int] = {}
    for model, source in fetch_in(s, Response.response_id, items, Response.model,
                                  Response.source):
        sources[model or source] = sources.get(model or source, 0) + 1
    queues = balanced_design(items, raters, overlap, seed) if items else {n: [] for n in raters}
    return AssignmentPlan(selection=selection, overlap=overlap, items=items,
                          queues={n: learn[n] + queues[n] for n in raters},
                          practice=sorted({r for q in learn.values() for r in q}),
                          before={name: counts.get(users[name].id, 0) for name in raters},
                          unopened={name: len(_unopened(s, users[name].id)) for name in raters},
                          sources=sources)


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
    kind, model = parse_selection(selection)
    design = AssignmentDesign(rubric_hash=rubric_hash, selection=kind, model=model,
                              overlap=overlap, seed=seed, created_by=actor)
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


def _covers(design: AssignmentDesign, response: Response, calibration: bool) -> bool:
    """Whether the design's selection holds the response (assigned or not)."""
    return {"all": True, "unassigned": True, "calibration": calibration,
            "human": response.source != "model",
            "model": response.source == "model" and response.model == design.model
            }[design.selection]


SPECIFIC = {"calibration": 2, "model": 1, "human": 1, "all": 0, "unassigned": 0}


def join_design(s: Session, *, response_id: str, actor: str | None = None) -> str:
    """Give a response just released from model-name review (db.raters.response_flags) to
    the design it belongs to, and say so in one line; or say, in one line, why it waits for
    `nmb assign` (nothing written then). The caller commits.

    It belongs to the most specific design whose selection holds it (calibration, then one
    model's or the human answers, then all), the latest among equals, provided those equals
    agree on raters, overlap and rubric. It goes to the `overlap` active raters of that
    design with the fewest of its items (ties drawn with the design's seed), mixed among
    their unopened items as `assign` mixes a batch. It waits when no design holds it, when
    designs that hold it disagree, when fewer than `overlap` of the design's raters are
    active experts, or when its case has no reference answer."""
    take_turns(s, DESIGN)
    wait = "it waits for `nmb assign` (or /admin → Assignments)"
    if s.exec(select(Assignment.id).where(Assignment.response_id == response_id)).first():
        return "it is assigned already"
    response = s.get(Response, response_id)
    calibration = s.get(CalibrationItem, response_id) is not None
    designs = [d for d in s.exec(select(AssignmentDesign).order_by(AssignmentDesign.id))
               if _covers(d, response, calibration)]
    if not designs:
        return f"{wait}: no assignment design holds it yet"
    top = max(SPECIFIC[d.selection] for d in designs)
    equals = [d for d in designs if SPECIFIC[d.selection] == top]

    def raters_of(design: AssignmentDesign) -> set[int]:
        return set(s.exec(select(Assignment.rater_id).where(Assignment.design_id == design.id)))

    shapes = {(frozenset(raters_of(d)), d.overlap, d.rubric_hash) for d in equals}
    if len(shapes) > 1:
        return (f"{wait}: designs {', '.join(str(d.id) for d in equals)} hold it, with other "
                "raters, overlap or rubric")
    design = equals[-1]
    active = {u.id: u.name for u in s.exec(select(User).where(
        User.id.in_(raters_of(design)), User.role == "expert", User.disabled.is_(False)))}
    if len(active) < design.overlap:
        return (f"{wait}: design {design.id} has {len(active)} active expert"
                f"{'' if len(active) == 1 else 's'} for its overlap of {design.overlap}")
    try:
        require_reference_for_responses(s, response_ids=[response_id])
    except UserError as e:
        return f"{wait}: {e}"
    loads = dict(s.exec(select(Assignment.rater_id, func.count())
                        .where(Assignment.design_id == design.id)
                        .group_by(Assignment.rater_id)).all())
    done = sum(loads.values())
    rng = np.random.default_rng([design.seed, design.id, done])
    ids = sorted(active)
    ties = rng.permutation(len(ids))
    chosen = [r for _, _, r in sorted((loads.get(r, 0), ties[k], r)
                                      for k, r in enumerate(ids))][:design.overlap]
    start = dict(s.exec(select(Assignment.rater_id, func.max(Assignment.position))
                        .group_by(Assignment.rater_id)).all())
    late = []
    for k, rater_id in enumerate(chosen):
        row = Assignment(design_id=design.id, rater_id=rater_id, response_id=response_id,
                         position=-1)
        if not _unopened(s, rater_id):
            late.append(active[rater_id])
        _mixed_in(s, [row], rater_id, start.get(rater_id, -1) + 1,
                  np.random.default_rng([design.seed, k, design.id, done]))
    names = sorted(active[r] for r in chosen)
    record(s, "assign.release", actor=actor, design=design.id, response=response_id,
           raters=names)
    line = f"it joined design {design.id}: the queues of {', '.join(names)}"
    if late:
        line += (f" (at the end for {', '.join(sorted(late))}, who opened every item "
                 "already)")
    return line


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
