"""The study's results, as a paper reports them: per model and human group, overall and per
family x level cell, pass@1, pass@k, top-k differential accuracy and the mean rubric score with
95% intervals; one row per person; the error classes among wrong responses; anchoring on
multi-turn tasks; the sensitivity of each estimate to the judge; cost and size.

One judge throughout the main tables (`judge`): the grader on every response it graded (the
default; the validated config, as the leaderboard and `nmb package grade` show it), or the
experts' consensus on the subset they scored (`results.judgments`). The other ways of judging
appear beside them in the sensitivity table (`results.sensitivity`), and the two instruments'
error tags and stage judgments are compared only on the responses both judged
(`results.error_classes`, `results.anchoring`). The tables come from
`results.leaderboard.cells` (the leaderboard's own function), `results.error_classes`,
`results.anchoring`, `results.sensitivity` and `results.cost`, paired differences from
`results.compare`; `compute` builds them from a `StudyData` that the database (`load`) or the
exports (`results.recompute`) provide.
`Results` is the typed object the CLI, the page and the exports read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from sqlalchemy import func
from sqlmodel import Session, select

from calibration.calibrate import unvalidated_warning
from calibration.terms import TERMS_NOT_RECORDED, for_config
from db.models import (
    BreadthScore,
    CollectionRun,
    ExpertScore,
    GraderRun,
    GraderScore,
    ModelCard,
    Response,
    Retirement,
    Revision,
    Task,
    User,
)
from db.queries import fetch_in
from db.raters.response_flags import held
from db.rubrics import rubric_by_hash
from db.sources.breadth import breadth_scores
from db.sources.responses import holds_final_stage_only
from db.study.model_cards import card_row, cards
from db.study.practice import not_counted, practice_tasks
from db.study.retire import retired
from db.study.revisions import stale, windows
from db.study.versions import get_version
from errors import UserError, counted
from grading.grader import grades_key
from results.anchoring import (
    AnchoringRow,
    Conflict,
    StageAgreement,
    anchoring_rows,
    final_answer_conflicts,
    stage_agreement,
)
from results.bertscore import BertScoreInfo, BertScorer
from results.breadth import BreadthAxis, BreadthScoreIn, breadth_axes
from results.compare import Comparison, adjust, compare
from results.cost import (
    Efficiency,
    GraderCost,
    ModelCost,
    efficiency_rows,
    grader_cost,
    model_costs,
)
from results.error_classes import ErrorRow, compared_error_rows, error_rows
from results.fairness import (
    Answer,
    Coverage,
    answers,
    coverage_flag,
    missing_judgments,
    self_grading,
)
from results.judgments import (
    EXPERTS,
    GRADER,
    JUDGES,
    Judged,
    Judgment,
    default_config,
    judged_responses,
    pick,
)
from results.leaderboard import Cell, cells
from results.sensitivity import SensitivityRow, sensitivity_rows
from results.splits import Split, split_cells
from results.versions import as_tagged
from rubric.render import PROMPT_V1

JUDGED_BY = {GRADER: "the grader on every response it graded",
             EXPERTS: "the experts' consensus, on the responses they scored only"}


@dataclass
class Results:
    grader: dict[str, Any]  # id, name, model, prompt_version, validated, validation_terms
    judge: str  # GRADER or EXPERTS: whose judgments the main tables use
    judged_by: str  # the judge in words
    by: list[str]
    ks: list[int]
    sources: dict[str, int]  # responses the main tables stand on, by judge
    expert_ties: int  # expert-scored responses whose experts split evenly (counted not correct)
    unjudged: int  # responses the judge did not judge
    flags: list[str]
    overall: list[Cell]  # per model and human group
    cells: list[Cell]  # per model and human group and cell of `by`
    people: list[Cell]  # per person (human groups), overall
    error_classes: list[str]
    errors: list[ErrorRow]  # the judge's tags among the responses it judged wrong
    errors_compared: list[ErrorRow]  # experts' and grader's tags, responses both judged wrong
    anchoring: list[AnchoringRow]
    conflicts: list[Conflict]  # grades whose correct_diagnosis contradicts their last stage
    stage_agreement: list[StageAgreement]
    sensitivity: list[SensitivityRow]
    model_costs: list[ModelCost]
    grader_cost: GraderCost
    judgments: list[Judgment]  # one per response the judge judged: what the tables stand on
    comparisons: list[Comparison] = field(default_factory=list)  # `--compare A B`, A - B
    bertscore: BertScoreInfo | None = None  # secondary; in `overall`, `cells` and `splits`
    splits: list[Split] = field(default_factory=list)  # the published layout (results.splits)
    # results.fairness: model -> "same model" / "same family (..)" as the grader's model
    self_graded: dict[str, str] = field(default_factory=dict)
    coverage: list[Coverage] = field(default_factory=list)  # per model and human group
    answered_only: bool = False  # the view "answered tasks only": missing answers left out
    fairness_flags: list[str] = field(default_factory=list)  # those of `flags` about fairness
    # db.study.retire: what is retired and why, left out of every table
    retired: list[RetiredItem] = field(default_factory=list)
    version: str | None = None  # the benchmark version (db.study.versions); None: the study now
    # model cards (db.study.model_cards) of the models in `overall`, by name: field -> text
    cards: dict[str, dict[str, str | None]] = field(default_factory=dict)
    breadth: list[BreadthAxis] = field(default_factory=list)  # results.breadth, per benchmark
    conditions: list[ConditionInfo] = field(default_factory=list)  # llm.conditions, verbatim
    efficiency: list[Efficiency] = field(default_factory=list)  # results.cost: one full run

    @property
    def view(self) -> str:
        """How the tables treat missing answers, in words."""
        if self.judge != GRADER:
            return "the expert-scored responses only"
        return (ANSWERED_ONLY if self.answered_only
                else "failed or missing answers counted wrong (column 'missing')")

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class RetiredItem:
    """An item retired from the study (db.study.retire), as the results list it."""

    kind: str
    item_id: str
    reason: str
    actor: str | None
    at: str  # ISO date and time


@dataclass
class ConditionInfo:
    """A condition models were collected under (llm.conditions), as the results report it."""

    label: str  # MODEL@CONDITION, as the tables' rows name it
    model: str
    condition: str
    strategy: str
    votes: int
    added_text: str  # verbatim: what the condition added to the system message


@dataclass
class StudyData:
    """What the tables are computed from: every judged response with each instrument's
    judgment, the number of responses, and what answering and grading cost."""

    grader: dict[str, Any]
    judged: list[Judged]
    responses: int
    error_classes: list[str]
    model_costs: list[ModelCost]
    grader_cost: GraderCost
    answers: list[Answer] = field(default_factory=list)  # every response, judged or not
    tasks: list[Task] = field(default_factory=list)  # every task of the study
    # responses to staged tasks holding the final stage's answer only (--final-stage-only):
    # {response id: model}; they have no answers laid out, so anchoring leaves them out
    final_stage_only: dict[str, str] = field(default_factory=dict)
    retired: list[RetiredItem] = field(default_factory=list)  # left out of the above already
    stale: str | None = None  # db.study.revisions: what is stale, left out already, in words
    version: str | None = None  # the benchmark version (db.study.versions), None: the study now
    cards: dict[str, dict[str, str | None]] = field(default_factory=dict)  # name -> card_row
    breadth: list[BreadthScoreIn] = field(default_factory=list)
    conditions: list[ConditionInfo] = field(default_factory=list)


ANSWERED_ONLY = "answered tasks only: failed or missing answers left out"


def _mark(rows: list, marks: dict[str, str]) -> list:
    for c in rows:
        c.self_graded = marks.get(c.who) if c.group == "model" else None
    return rows


def _left_out(rows: list[Cell], missing: list[Judgment], by: tuple[str, ...],
              people: bool = False) -> list[Cell]:
    """Each row's count of missing answers where the view leaves them out."""
    def key(j: Judgment) -> tuple:
        who = j.person if people and not j.is_model else j.who
        return (who, tuple(getattr(j, k) for k in by))

    counts: dict[tuple, int] = {}
    for j in missing:
        counts[key(j)] = counts.get(key(j), 0) + 1
    for c in rows:
        c.missing = counts.get((c.who, tuple(c.keys[k] for k in by)), 0)
    return rows


def check_judge(judge: str) -> str:
    if judge not in JUDGES:
        raise UserError(f"--judge {judge!r} is not one of {', '.join(JUDGES)}")
    return judge


def judgments_of(data: StudyData, judge: str
                 ) -> tuple[list[Judgment], list[Judgment], list[Coverage]]:
    """The judge's judgments; under the grader also the missing answers as wrong judgments
    (`results.fairness.missing_judgments`) and each row's coverage."""
    answered = pick(data.judged, check_judge(judge))
    if judge != GRADER:
        return answered, [], []
    return (answered, *missing_judgments(answered, data.answers, data.tasks,
                                         prompt_version=data.grader["prompt_version"]))


def compute(data: StudyData, *, judge: str = GRADER, by: tuple[str, ...] = ("family", "level"),
            ks: tuple[int, ...] = (1, 5), flags: list[str] | None = None,
            compare_pairs: tuple[tuple[str, str], ...] = (),
            similar: Mapping[str, float] | None = None, bertscore: BertScoreInfo | None = None,
            splits: dict[str, tuple[int, ...]] | None = None,
            answered_only: bool = False) -> Results:
    """Every table of the results from `data`, the main ones judged by `judge` alone;
    `similar`: BERTScore per response id (`bertscore` says with which model). Under the
    grader, missing answers count as wrong (`results.fairness`), unless `answered_only`."""
    answered, missing, coverage = judgments_of(data, judge)
    judged = answered if answered_only else answered + missing
    grades = pick(data.judged, GRADER)
    conflicts = final_answer_conflicts(grades)
    flags = list(flags or [])
    marks = {m: mark for m in sorted({x.any.who for x in data.judged if x.any.is_model}
                                     | {a.who for a in data.answers if a.is_model})
             if (mark := self_grading(data.grader.get("model"), m))}
    fairness = []
    if marks:
        fairness.append(f"self-grading: the grader's model {data.grader.get('model')} is "
                     + "; ".join(f"the {mark} as {m}" for m, mark in marks.items())
                     + ": their rows are marked in the column 'self-graded'"
                     + ("" if judge == GRADER else " (the main tables use the experts' "
                        "judgments; the grader's appear in the sensitivity, error-class and "
                        "anchoring tables)"))
    fairness += [coverage_flag(c, answered_only=answered_only) for c in coverage if c.missing]
    if answered_only and judge == GRADER:
        fairness.append(f"view: {ANSWERED_ONLY}; rows may stand on different tasks, so they are "
                     "not comparable where the column 'missing' is not 0")
    flags += fairness
    if data.retired:
        flags.append(f"{counted(len(data.retired), 'item')} retired (table 'retired', with the "
                     "reasons): left out of every table; what is recorded on them stays in the "
                     "database and the exports")
    if data.stale:
        flags.append(data.stale)
    if data.version:
        flags.append(f"benchmark version {data.version}: its tasks, each at the revision in "
                     "force when it was tagged")
    if judge == EXPERTS:
        flags.append(f"judged by the experts: the tables cover the {len(answered)} expert-scored "
                     f"responses of {data.responses}; top-k is not asked of experts")
    if data.final_stage_only:
        flags.append(final_stage_only_flag(data.final_stage_only))
    if conflicts:
        multi = sum(len(j.stages) >= 2 and j.last_stage is not None for j in grades)
        flags.append(f"{len(conflicts)} of {multi} multi-turn grades judge the final answer "
                     "differently in correct_diagnosis and in their last stage: the results "
                     "count correct_diagnosis (table: final-answer check)")

    def _rows(rows: list[Cell], by: tuple[str, ...] = (), people: bool = False,
              levels: list[int] | None = None) -> list[Cell]:
        if answered_only:  # the missing answers each row leaves out, counted
            _left_out(rows, [j for j in missing if levels is None or j.level in levels], by,
                      people)
        return _mark(rows, marks)

    overall_cells = _rows(cells(judged, ks=ks, bertscore=similar))
    return Results(
        grader=data.grader, judge=judge, judged_by=JUDGED_BY[judge], by=list(by), ks=list(ks),
        sources={src: sum(j.source == src for j in judged) for src in (EXPERTS, GRADER)},
        expert_ties=sum(x.expert_tie for x in data.judged if x.experts),
        unjudged=data.responses - len(answered), flags=flags,
        overall=overall_cells,
        cells=_rows(cells(judged, ks=ks, by=by, bertscore=similar), by) if by else [],
        people=_rows(cells([j for j in judged if not j.is_model], ks=ks, people=True),
                     people=True),
        error_classes=data.error_classes,
        errors=error_rows(answered, data.error_classes, judge),
        errors_compared=compared_error_rows(data.judged, data.error_classes),
        anchoring=anchoring_rows(
            [replace(j, stages=()) if j.response_id in data.final_stage_only else j
             for j in judged]), conflicts=conflicts,
        stage_agreement=stage_agreement(data.judged),
        sensitivity=sensitivity_rows(data.judged, () if answered_only else missing),
        model_costs=data.model_costs, grader_cost=data.grader_cost,
        judgments=sorted(judged, key=lambda j: j.response_id),
        comparisons=adjust([compare(judged, a, b) for a, b in compare_pairs]),
        bertscore=bertscore,
        splits=[replace(sp, cells=_rows(sp.cells, levels=sp.levels)) for sp in
                split_cells(judged, splits, ks=ks, bertscore=similar)] if splits else [],
        self_graded=marks, coverage=coverage, answered_only=answered_only,
        fairness_flags=fairness, retired=list(data.retired), version=data.version,
        **_beside(data, overall_cells, judge=judge))


def _beside(data: StudyData, overall: list[Cell], *, judge: str) -> dict[str, Any]:
    """What the results set beside the main tables: the model cards of the rows' models, the
    breadth axes, the conditions and the efficiency table (all from the same overall rows)."""
    from db.study.model_cards import base_model

    models = [c.who for c in overall if c.group == "model"]
    return {
        "cards": {m: card for m in models
                  if (card := data.cards.get(m) or data.cards.get(base_model(m)))},
        "breadth": breadth_axes(overall, data.breadth) if data.breadth else [],
        "conditions": [c for c in data.conditions if c.label in models],
        "efficiency": efficiency_rows(data.model_costs, overall,
                                      tasks=len(data.tasks)) if judge == GRADER else []}


def final_stage_only_flag(responses: Mapping[str, str]) -> str:
    """The note on responses to staged tasks that hold the final stage's answer only."""
    per_model: dict[str, int] = {}
    for model in responses.values():
        per_model[model] = per_model.get(model, 0) + 1
    return (f"final stage only: {counted(len(responses), 'response')} to staged tasks "
            f"({', '.join(f'{n} of {m}' for m, n in sorted(per_model.items()))}) hold one "
            "answer, imported as the final stage's (--final-stage-only): their earlier stages "
            "have no answer and count as not answered in stage judgments; the anchoring table "
            "leaves them out")


def final_stage_only(s: Session) -> dict[str, str]:
    """{response id: model} of the model responses that hold a staged task's final answer
    only (`db.sources.responses.holds_final_stage_only`)."""
    rows = s.exec(select(Response.response_id, Response.model, Response.text, Response.turns)
                  .where(Response.model.is_not(None), Response.text == ""))
    return {rid: model for rid, model, text, turns in rows
            if holds_final_stage_only(text, turns)}


def _flags(s: Session, config, validated: bool) -> list[str]:
    flags = []
    if not validated:  # why, in words: never looked, failed, revoked, or suspended
        flags.append(unvalidated_warning(s, config_id=config.id) or "")
    elif (terms := for_config(s, config.id)) and (weaker := terms.weaker_text()):
        flags.append(f"grader config #{config.id} is validated under a protocol {weaker}")
    if config.prompt_version == PROMPT_V1:
        flags.append(f"grader prompt {PROMPT_V1} asks for no differential rank or stage "
                     "judgments: top-k and anchoring are unknown")
    if s.exec(select(GraderRun).where(GraderRun.config_id == config.id, GraderRun.synthetic)).first():
        flags.append("synthetic demo grades: no model was called")
    if s.exec(select(ExpertScore).where(ExpertScore.synthetic)).first():
        flags.append("synthetic demo expert scores")
    if s.exec(select(Response).join(User, User.id == Response.user_id).where(User.demo)).first():
        flags.append("synthetic demo exam takers (students and physicians)")
    if waiting := len(held(s)):
        flags.append(f"{counted(waiting, 'response')} {'names' if waiting == 1 else 'name'} a model and "
                     "await an admin's review (judged as "
                     "redacted; a changed text drops their grades)")
    return flags


def _terms_text(s: Session, config) -> str | None:
    """The terms of the config's validation in words (`ValidationTerms.text`), None when it is
    not validated."""
    if config.validated_report_id is None:
        return None
    terms = for_config(s, config.id)
    return terms.text() if terms else TERMS_NOT_RECORDED


def results_key(s: Session, *, config_id: int) -> tuple:
    """Changes whenever what `build` reads does (the config's grades, the responses, the
    submitted expert scores), read with a few aggregate queries so a page can cache `build`."""
    experts = s.exec(select(func.count(), func.max(ExpertScore.id), func.sum(ExpertScore.revision))
                     .where(ExpertScore.status == "submitted")).one()
    beside = [s.exec(select(func.count(), func.max(when))).one()
              for when in (ModelCard.updated_at, BreadthScore.imported_at,
                           CollectionRun.started_at, Revision.at, Retirement.at,
                           Retirement.undone_at)]
    return (*grades_key(s, config_id=config_id), *experts, *(x for b in beside for x in b))


def load(s: Session, *, config_id: int | None = None, reveal: bool = False,
         version: str | None = None) -> StudyData:
    """The study's data under the grader config (default: the newest validated one, else the
    newest with grades); `reveal` shows people's names instead of pseudonyms. Without
    `version`, what is retired now and what is stale (db.study.revisions) is left out; with
    it, the version's tasks as they were when it was tagged, and what counts at that revision.
    Practice tasks and their responses are always left out (db.study.practice)."""
    config = default_config(s, config_id)
    tagged = get_version(s, version) if version else None
    at = tagged.at if tagged else None
    items = retired(s, as_of=at)
    out = not_counted(s, items)
    if tagged is not None:  # the tasks the version does not hold are out, with their responses
        other = set(s.exec(select(Task.task_id))) - set(tagged.task_ids)
        out = replace(out, tasks=out.tasks | other, responses=out.responses | set(
            fetch_in(s, Response.task_id, other, Response.response_id)))
    graded_out = set(s.exec(select(GraderScore.response_id).where(
        GraderScore.config_id == config.id, GraderScore.run_id.in_(out.grader_runs)))
    ) if out.grader_runs else set()
    old = stale(s, windows(s, at=at), config_id=config.id)
    out = replace(out, responses=out.responses | old.responses)
    graded_out |= old.grades
    data = StudyData(
        grader={"id": config.id, "name": config.name, "model": config.model,
                "prompt_version": config.prompt_version,
                "validated": config.validated_report_id is not None,
                "validation_terms": _terms_text(s, config)},
        judged=_kept(judged_responses(s, config_id=config.id, reveal=reveal,
                                      leave_out=old.expert_scores), out.responses, graded_out),
        responses=s.exec(select(func.count()).select_from(Response)).one() - len(out.responses),
        error_classes=rubric_by_hash(s, config.rubric_hash).error_class_keys,
        model_costs=[m for m in model_costs(s, leave_out=practice_tasks(s))
                     if m.model not in out.models],
        grader_cost=grader_cost(s, config_id=config.id),
        answers=[a for a in answers(s, reveal=reveal) if a.response_id not in out.responses],
        tasks=[t for t in s.exec(select(Task).order_by(Task.task_id)) if t.task_id not in out.tasks],
        final_stage_only={r: m for r, m in final_stage_only(s).items() if r not in out.responses},
        retired=[RetiredItem(r.kind, r.item_id, r.reason, r.actor, r.at.isoformat())
                 for r in items],
        cards={name: card_row(card) for name, card in cards(s).items()},
        breadth=[BreadthScoreIn(b.model, b.benchmark, b.score, b.n, b.source)
                 for b in breadth_scores(s)],
        conditions=conditions(s), stale=old.text() if old else None, version=version)
    return as_tagged(s, data, at) if at is not None else data


def conditions(s: Session) -> list[ConditionInfo]:
    """The conditions of the study's collection runs (llm.conditions), one per MODEL@CONDITION,
    with the text each added, verbatim."""
    out: dict[str, ConditionInfo] = {}
    for run in s.exec(select(CollectionRun).order_by(CollectionRun.id)):
        c = (run.settings or {}).get("condition")
        if c and run.model not in out:
            out[run.model] = ConditionInfo(run.model, run.settings.get("model", run.model),
                                           c["name"], c["strategy"], c["votes"], c["added_text"])
    return list(out.values())


def _kept(judged: list[Judged], responses: frozenset[str], graded_out: set[str]) -> list[Judged]:
    """`judged` without the retired responses, and without the grades of retired grader runs
    (a response judged by the experts too keeps their judgment)."""
    kept = []
    for j in judged:
        if j.any.response_id in responses:
            continue
        if j.any.response_id in graded_out and j.grader is not None:
            if j.experts is None:
                continue
            j = replace(j, grader=None)
        kept.append(j)
    return kept


def build(s: Session, *, config_id: int | None = None, by: tuple[str, ...] = ("family", "level"),
          ks: tuple[int, ...] = (1, 5), reveal: bool = False, judge: str = GRADER,
          compare_pairs: tuple[tuple[str, str], ...] = (), bertscore: BertScorer | None = None,
          splits: dict[str, tuple[int, ...]] | None = None,
          answered_only: bool = False, version: str | None = None) -> Results:
    """The results of the study under the grader config, the main tables judged by `judge`;
    `compare_pairs`: (A, B) models or human groups whose paired difference A - B is wanted.
    With `bertscore`, each model and human group also gets its BERTScore (secondary); with
    `splits` (name -> levels), the published leaderboard's split tables; `answered_only`: the
    view that leaves failed or missing answers out (`compute`); `version`: the tables of that
    benchmark version (`load`)."""
    check_judge(judge)
    data = load(s, config_id=config_id, reveal=reveal, version=version)
    config = default_config(s, data.grader["id"])
    similar = None
    if bertscore:
        judged = pick(data.judged, judge)
        similar = bertscore.response_scores(s, (j.response_id for j in judged))
    return compute(data, judge=judge, by=by, ks=ks, compare_pairs=compare_pairs,
                   flags=_flags(s, config, data.grader["validated"]), similar=similar,
                   bertscore=bertscore.info if bertscore else None, splits=splits,
                   answered_only=answered_only)


def comparisons(s: Session, *, config_id: int | None, pairs: tuple[tuple[str, str], ...],
                judge: str = GRADER, answered_only: bool = False) -> list[Comparison]:
    """`build`'s comparisons alone (what /results computes when A and B are chosen)."""
    check_judge(judge)
    answered, missing, _ = judgments_of(load(s, config_id=config_id), judge)
    judged = answered if answered_only else answered + missing
    return adjust([compare(judged, a, b) for a, b in pairs])
