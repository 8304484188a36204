"""The study's results, as a paper reports them: per model and human group, overall and per
family x level cell, pass@1, pass@k, top-k differential accuracy and the mean rubric score with
95% intervals; one row per person; the error classes among wrong responses; revision on
multi-turn tasks; cost and size.

Every statistic is computed from one list of judgments, the one that counts for each response
(`results.judgments`: the experts' consensus where experts scored it, the grader's grade
otherwise; with `grader_only`, the grader's everywhere, as the leaderboard and `nmb package
grade` show them). The tables come from `results.leaderboard.cells` (the leaderboard's own
function), `results.error_classes`, `results.revision` and `results.cost`.
`Results` is the typed object the CLI, the page and the exports read.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from sqlalchemy import func
from sqlmodel import Session, select

from db.models import ExpertScore, GraderRun, Response, User
from db.raters.response_flags import held
from db.rubrics import rubric_by_hash
from grading.grader import grades_key
from results.bertscore import BertScoreInfo, BertScorer
from results.cost import GraderCost, ModelCost, grader_cost, model_costs
from results.error_classes import ErrorRow, error_rows
from results.judgments import (
    EXPERTS,
    GRADER,
    counted_judgments,
    default_config,
    grader_judgments,
)
from results.leaderboard import Cell, cells
from results.revision import RevisionRow, revision_rows
from results.splits import Split, split_cells
from rubric.render import PROMPT_V1


@dataclass
class Results:
    grader: dict[str, Any]  # id, name, model, prompt_version, validated
    judged_by: str  # "experts where scored, else grader" or "grader"
    by: list[str]
    ks: list[int]
    sources: dict[str, int]  # responses decided by each source, over all tables
    expert_ties: int  # expert-scored responses whose experts split evenly (counted not correct)
    unjudged: int  # responses with neither a grade of this config nor an expert score
    flags: list[str]
    overall: list[Cell]  # per model and human group
    cells: list[Cell]  # per model and human group and cell of `by`
    people: list[Cell]  # per person (human groups), overall
    error_classes: list[str]
    errors: list[ErrorRow]
    revision: list[RevisionRow]
    model_costs: list[ModelCost]
    grader_cost: GraderCost
    bertscore: BertScoreInfo | None = None  # secondary; in `overall`, `cells` and `splits`
    splits: list[Split] = field(default_factory=list)  # the published layout (results.splits)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _flags(s: Session, config, validated: bool) -> list[str]:
    flags = []
    if not validated:
        flags.append(f"grader config #{config.id} is not validated (no passing held-out look): "
                     "its grades are not a validated measure")
    if config.prompt_version == PROMPT_V1:
        flags.append(f"grader prompt {PROMPT_V1} asks for no differential rank or stage "
                     "judgments: top-k and revision are unknown")
    if s.exec(select(GraderRun).where(GraderRun.config_id == config.id, GraderRun.synthetic)).first():
        flags.append("synthetic demo grades: no model was called")
    if s.exec(select(ExpertScore).where(ExpertScore.synthetic)).first():
        flags.append("synthetic demo expert scores")
    if s.exec(select(Response).join(User, User.id == Response.user_id).where(User.demo)).first():
        flags.append("synthetic demo exam takers (students and physicians)")
    if waiting := len(held(s)):
        flags.append(f"{waiting} responses name a model and await an admin's review (judged as "
                     "redacted; a changed text drops their grades)")
    return flags


def results_key(s: Session, *, config_id: int) -> tuple:
    """Changes whenever what `build` reads does (the config's grades, the responses, the
    submitted expert scores), read with a few aggregate queries so a page can cache `build`."""
    experts = s.exec(select(func.count(), func.max(ExpertScore.id), func.sum(ExpertScore.revision))
                     .where(ExpertScore.status == "submitted")).one()
    return (*grades_key(s, config_id=config_id), *experts)


def build(s: Session, *, config_id: int | None = None, by: tuple[str, ...] = ("family", "level"),
          ks: tuple[int, ...] = (1, 5), reveal: bool = False,
          grader_only: bool = False, bertscore: BertScorer | None = None,
          splits: dict[str, tuple[int, ...]] | None = None) -> Results:
    """The results of the study under the grader config (default: the newest validated one,
    else the newest with grades); `reveal` shows people's names instead of pseudonyms. With
    `bertscore`, each model and human group also gets its BERTScore (secondary); with `splits`
    (name -> levels), the published leaderboard's split tables."""
    config = default_config(s, config_id)
    if grader_only:
        judged, ties = grader_judgments(s, config_id=config.id, reveal=reveal), 0
    else:
        judged, ties = counted_judgments(s, config_id=config.id, reveal=reveal)
    total = s.exec(select(func.count()).select_from(Response)).one()
    sources = {src: sum(j.source == src for j in judged) for src in (EXPERTS, GRADER)}
    validated = config.validated_report_id is not None
    rubric = rubric_by_hash(s, config.rubric_hash)
    similar = bertscore.response_scores(s, (j.response_id for j in judged)) if bertscore else None
    return Results(
        grader={"id": config.id, "name": config.name, "model": config.model,
                "prompt_version": config.prompt_version, "validated": validated},
        judged_by=GRADER if grader_only else f"{EXPERTS} where scored, else {GRADER}",
        by=list(by), ks=list(ks), sources=sources, expert_ties=ties,
        unjudged=total - len(judged), flags=_flags(s, config, validated),
        overall=cells(judged, ks=ks, bertscore=similar),
        cells=cells(judged, ks=ks, by=by, bertscore=similar) if by else [],
        people=cells([j for j in judged if not j.is_model], ks=ks, people=True),
        error_classes=rubric.error_class_keys,
        errors=error_rows(judged, rubric.error_class_keys),
        revision=revision_rows(judged), model_costs=model_costs(s),
        grader_cost=grader_cost(s, config_id=config.id),
        bertscore=bertscore.info if bertscore else None,
        splits=split_cells(judged, splits, ks=ks, bertscore=similar) if splits else [])
