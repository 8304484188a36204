"""Calibration reports: the grader against the experts on the calibration subset, and the gate.

The overall score is compared on the rubric's point scale (overall x (max - min) + min), so
a bias of 1.0 reads "one rubric point"; each criterion on its own levels. Statistics come
from `calibration.comparison` (typed, stored as their dicts); this module gathers the scores
(`collect`), hashes exactly what a report is computed on (`data_hash`) and builds the
`Report` with the gate's verdict (`build`). Which thresholds apply, and the one held-out
look, are `calibration.calibrate`'s.
"""

import hashlib
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from sqlmodel import Session, select

from calibration.comparison import compare_tags, compare_to_experts
from calibration.comparison_types import Comparison, TagComparison
from calibration.gate import GateCheck, gate_checks, gate_passed
from calibration.protocol import Gate, Statistics, interval_level
from db.models import (
    Assignment,
    CalibrationItem,
    ExpertScore,
    GraderRun,
    GraderScore,
    Response,
    Task,
)
from db.rubrics import rubric_by_hash
from db.study.revisions import stale, windows
from errors import UserError, counted
from grading.config import get_config, is_dated_snapshot
from rubric.schema import canonical_json
from stats.agreement_types import r_interval
from stats.resample import MIN_R_CASES

PARTS = ("heldout", "dev", "all")


@dataclass
class CalibrationData:
    """Scores of the items that have a grade and at least one submitted expert score."""

    items: list[str]
    raters: list[int]
    strata: dict[str, list[Any]]  # family, level, source per item
    cases: list[str]
    overall: tuple[np.ndarray, np.ndarray]  # grader (n,), experts (n, raters) with NaN
    criteria: dict[str, tuple[np.ndarray, np.ndarray]]
    tags: tuple[np.ndarray, np.ndarray]  # grader (n, C) bool, experts (n, raters, C) float
    tag_names: list[str]
    domain: list[int]
    flags: list[str] = field(default_factory=list)


def _rubric_name(s: Session, content_hash: str) -> str:
    r = rubric_by_hash(s, content_hash)
    return f"rubric {r.id} ({content_hash[:12]})"


def collect(s: Session, *, config_id: int, part: str,
            count_imported: bool = False) -> CalibrationData:
    """The scores of `part`'s items. Expert scores brought in by `nmb import-scores` (not
    collected blind) count on the dev part, and on the held-out part and "all" only when
    `count_imported` (the protocol's `count_imported_scores`); either way a flag says how many
    there are. Grades and expert scores made against an earlier revision of their case or task
    (`db.study.revisions.stale`), and those of stale responses, are left out, and a flag counts
    them."""
    if part not in PARTS:
        raise UserError(f"part {part!r} is not one of {', '.join(PARTS)}")
    config = get_config(s, config_id)
    rubric = rubric_by_hash(s, config.rubric_hash)
    lo, hi = rubric.scale.min, rubric.scale.max
    q = (select(CalibrationItem.response_id, Task.family, Task.level, Response.source,
                Task.case_id)
         .join(Response, Response.response_id == CalibrationItem.response_id)
         .join(Task, Task.task_id == Response.task_id))
    if part != "all":
        q = q.where(CalibrationItem.part == part)
    subset = {rid: (fam, lvl, "model" if src == "model" else "human", case)
              for rid, fam, lvl, src, case in s.exec(q)}
    if not subset:
        raise UserError("no calibration subset drawn yet (nmb assign --calibration N)")
    old = stale(s, windows(s), config_id=config_id)
    grades = {g.response_id: g for g in s.exec(select(GraderScore).where(
        GraderScore.config_id == config_id, GraderScore.response_id.in_(list(subset))))}
    n_stale = len(grades)
    grades = {rid: g for rid, g in grades.items()
              if rid not in old.responses and rid not in old.grades}
    n_stale -= len(grades)
    expert_rows = s.exec(
        select(Assignment.response_id, Assignment.rater_id, ExpertScore)
        .join(ExpertScore, ExpertScore.assignment_id == Assignment.id)
        .where(ExpertScore.status == "submitted", Assignment.response_id.in_(list(subset))))
    by_item: dict[str, dict[int, ExpertScore]] = {}
    n_scores = n_imported = 0
    counting = part == "dev" or count_imported
    for rid, rater, score in expert_rows:
        if rid in old.responses or score.id in old.expert_scores:
            n_stale += 1
            continue
        n_scores += 1
        n_imported += score.imported
        if counting or not score.imported:
            by_item.setdefault(rid, {})[rater] = score
    imported_flags = [] if not n_imported else [
        f"{n_imported} of {counted(n_scores, 'expert score')} imported, not collected blind"
        if counting else
        f"{counted(n_imported, 'imported expert score')} (not collected blind) left out of the "
        f"{part} part: the protocol does not count them"]
    items = sorted(r for r in subset if r in grades and r in by_item)
    if len(items) < 3:
        raise UserError(f"only {counted(len(items), part + ' item')} "
                        f"{'has' if len(items) == 1 else 'have'} both a grade and expert scores; "
                        "at least 3 are needed")
    raters = sorted({r for rid in items for r in by_item[rid]})
    col = {r: j for j, r in enumerate(raters)}
    n, m = len(items), len(raters)
    tag_names = rubric.error_class_keys
    expert_overall = np.full((n, m), np.nan)
    expert_tags = np.full((n, m, len(tag_names)), np.nan)
    crit_keys = [c.key for c in rubric.criteria]
    crit_g = {k: np.full(n, np.nan) for k in crit_keys}
    crit_e = {k: np.full((n, m), np.nan) for k in crit_keys}
    grader_overall = np.empty(n)
    grader_tags = np.zeros((n, len(tag_names)), dtype=bool)
    for i, rid in enumerate(items):
        g = grades[rid]
        grader_overall[i] = lo + g.overall * (hi - lo)
        grader_tags[i] = [t in g.error_tags for t in tag_names]
        for k, v in g.criteria.items():
            if v is not None and k in crit_g:
                crit_g[k][i] = v
        for rater, sc in by_item[rid].items():
            j = col[rater]
            expert_overall[i, j] = lo + sc.overall * (hi - lo)
            expert_tags[i, j] = [t in sc.error_tags for t in tag_names]
            for k, v in sc.criteria.items():
                if v is not None and k in crit_e:
                    crit_e[k][i, j] = v
    criteria = {k: (crit_g[k], crit_e[k]) for k in crit_keys
                if np.isfinite(crit_g[k]).sum() >= 3}
    if n_stale:
        imported_flags.append(f"{counted(n_stale, 'grade or expert score', 'grades or expert scores')} "
                              "made against an earlier revision of their case or task left out")
    other = sorted({sc.rubric_hash for scores in by_item.values() for sc in scores.values()}
                   - {config.rubric_hash})
    if other:  # valid statistics where criteria share keys (v1 and v1.1), but say so
        imported_flags.append(
            "the experts scored with " + ", ".join(_rubric_name(s, h) for h in other)
            + ", the grader with " + _rubric_name(s, config.rubric_hash))
    flags = imported_flags + ([] if is_dated_snapshot(config.model) else [
        f"grader model {config.model!r} is an undated alias"])
    if s.exec(select(GraderRun).where(GraderRun.config_id == config_id,
                                      GraderRun.synthetic)).first():
        flags.append("synthetic demo grades: no model was called")
    if any(sc.synthetic for scores in by_item.values() for sc in scores.values()):
        flags.append("synthetic demo expert scores")
    return CalibrationData(
        items=items, raters=raters,
        strata={"family": [subset[r][0] for r in items], "level": [subset[r][1] for r in items],
                "source": [subset[r][2] for r in items]},
        cases=[subset[r][3] for r in items],
        overall=(grader_overall, expert_overall), criteria=criteria,
        tags=(grader_tags, expert_tags), tag_names=tag_names,
        domain=list(range(lo, hi + 1)), flags=flags)



def data_hash(data: CalibrationData) -> str:
    """sha256 of exactly the scores a report is computed on: items, raters, the grader's and
    every expert's overall score, criterion levels and error tags (missing as null)."""
    def plain(a: np.ndarray) -> list:
        a = np.asarray(a, dtype=float)
        return np.where(np.isfinite(a), a, None).tolist()

    content = {"items": data.items, "raters": data.raters,
               "overall": [plain(x) for x in data.overall],
               "criteria": {k: [plain(x) for x in v] for k, v in data.criteria.items()},
               "tags": [plain(x) for x in data.tags], "tag_names": data.tag_names}
    return hashlib.sha256(canonical_json(content).encode()).hexdigest()


@dataclass
class Look:
    """A held-out look, as every report and package discloses it: `number` under its
    protocol, `suspended` when the data behind it changed after it."""

    config_id: int
    config: str
    report_id: int
    passed: bool
    revoked: bool
    at: str
    number: int = 0
    suspended: bool = False


@dataclass
class StatRow:
    """Agreement of the grader with the experts' mean on one criterion (or overall)."""

    name: str
    n: int
    pearson: float | None
    pearson_ci: list[float | None] | None
    icc2: float | None
    alpha_interval: float | None
    kappa_linear: float | None
    kappa_quadratic: float | None
    bias: float | None
    limits: list[float | None] | None
    mae: float | None
    within_one: float | None


STAT_HEADER = ["", "n", "Pearson r", "r 95% CI", "ICC(2,1) vs experts' mean", "alpha (interval)",
               "kappa (linear)",
               "kappa (quadratic)", "bias", "limits of agreement", "MAE", "within one"]


@dataclass
class TagRow:
    """One error class: the grader against the experts' majority, and the experts' own
    agreement."""

    name: str
    prevalence: float | None
    kappa: float | None
    kappa_ci: list[float | None] | None
    ac1: float | None
    ac1_ci: list[float | None] | None
    f1: float | None
    ceiling_ac1: float | None
    alpha_experts: float | None
    alpha_with_grader: float | None


TAG_HEADER = ["error class", "prevalence", "kappa", "kappa 95% CI", "AC1", "AC1 95% CI", "F1",
              "experts' AC1 (ceiling)", "alpha, experts", "alpha, experts + grader"]


@dataclass
class Report:
    """A calibration report: what it was computed on, the gate's verdict, the statistics.

    `validates` is true only for a held-out look judged under the registered protocol;
    `protocol_hash` is None for a dev report run with thresholds of the moment. The statistics
    are held in their stored JSON shape (`overall` and each of `criteria`:
    `Comparison.to_dict()`; `error_tags`: `TagComparison.to_dict()`, of
    `calibration.comparison_types`), so reports of earlier versions read back alike; the
    rows below display them.
    """

    config_id: int
    part: str
    n_items: int
    n_experts: int
    data_hash: str
    protocol_id: int | None
    protocol_hash: str | None
    gate_settings: dict[str, Any]
    statistics: dict[str, Any]
    gate: list[GateCheck]
    passed: bool
    validates: bool
    flags: list[str]
    overall: dict[str, Any]
    criteria: dict[str, dict[str, Any]]
    error_tags: dict[str, Any]
    breakdown: dict[str, dict[str, dict[str, Any]]]
    heldout_looks: list[Look] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "Report":
        return cls(**{**d, "gate": [GateCheck(**g) for g in d["gate"]],
                      "heldout_looks": [Look(**x) for x in d.get("heldout_looks", [])]})

    def check(self, name: str) -> GateCheck:
        return next(g for g in self.gate if g.name == name)

    def why_failed(self) -> list[str]:
        """The reasons of the required checks that failed."""
        return [f"{g.label}: {g.reason}" for g in self.gate if g.required and not g.passed]

    def stat_rows(self) -> list[StatRow]:
        """The overall score, then each criterion."""
        return [_stat_row("overall", self.overall),
                *(_stat_row(k, v) for k, v in self.criteria.items())]

    def clustering(self) -> str:
        """In words, the unit the intervals resample and how many there are."""
        units = self.overall.get("icc_vs_mean", {}).get("units")
        unit = (self.overall.get("bootstrap") or {}).get("unit", "item")
        if unit in ("case", "cluster"):
            return (f"Clustering unit: the case ({units} cases). Every interval resamples whole "
                    "cases with their items: r by the case bootstrap, ICC(2,1), the "
                    "Bland-Altman bias and limits and the Alt-Test's advantage probability by "
                    "the delete-one-case jackknife, the Alt-Test's winning rate and the error "
                    "classes by the case bootstrap; the Alt-Test's t-tests are cluster-robust.")
        return "Clustering unit: the item (no cases given): items are taken as independent."

    def icc_items(self) -> str:
        """The items each ICC stands on, and how many were dropped listwise."""
        mine = self.overall.get("icc_vs_mean")
        every = self.overall["icc"]
        out = []
        if mine is not None:
            out.append(f"ICC(2,1) of the grader against the experts' mean (the gate's) on "
                       f"{mine['n_items']} items, {mine['dropped']} dropped listwise (no grade "
                       "or no expert score)")
        total = every["n_items"] + every.get("dropped", 0)
        out.append(f"the ICCs of the grader and every expert as raters on {every['n_items']} "
                   f"of {total} items, {every.get('dropped', 0)} dropped listwise (an expert's "
                   "score missing)")
        return "; ".join(out) + "."

    def alt_sensitivity_rows(self) -> list[list[Any]]:
        """The Alt-Test's winning rate and verdict at each epsilon (the margin's sensitivity)."""
        return [[r["epsilon"], r["winning_rate"], r["passed"]]
                for r in self.overall.get("alt_test_sensitivity") or []]

    def tag_rows(self) -> list[TagRow]:
        rows = []
        for c, v in self.error_tags["classes"].items():
            g, ci = v["grader"], v["grader"].get("ci95") or {}
            rows.append(TagRow(c, v["prevalence"], g["kappa"], ci.get("kappa"), g["ac1"],
                               ci.get("ac1"), g["f1"], (v["ceiling_mean"] or {}).get("ac1"),
                               v["alpha_experts"], v["alpha_with_grader"]))
        return rows


def gate_icc(res: dict[str, Any]) -> float | None:
    """The ICC(2,1) a comparison's gate reads: the grader against the experts' mean (reports
    before issue 45 hold only the grader-and-experts ICC, shown as they stored it)."""
    if "icc_vs_mean" in res:
        return res["icc_vs_mean"]["icc"]
    return (res["icc"].get("ICC2") or {}).get("icc")


def _stat_row(name: str, res: dict[str, Any]) -> StatRow:
    ba, p = res["bland_altman"], res["pearson"]
    return StatRow(name, res["n_items"], p["r"], r_interval(p.get("ci95_bootstrap"),
                                                            p.get("ci95_fisher")),
                   gate_icc(res),
                   res["krippendorff_alpha"].get("interval"), res.get("weighted_kappa_linear"),
                   res["weighted_kappa"], ba["bias"],
                   ba["loa"], res["mae"], res["within_one"])


def _breakdown(data: CalibrationData) -> dict[str, dict[str, dict[str, Any]]]:
    """Pearson r, ICC(2,1) (grader vs experts' mean), bias and MAE of the overall score within
    each family, level, source."""
    g, e = data.overall
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for key, labels in data.strata.items():
        groups = {}
        for value in sorted(set(labels), key=str):
            mask = np.array([lab == value for lab in labels])
            if mask.sum() < 3:
                groups[str(value)] = {"n_items": int(mask.sum())}
                continue
            res = compare_to_experts(g[mask], e[mask], domain=data.domain, bootstrap=0)
            groups[str(value)] = {"n_items": int(mask.sum()), "pearson": res.pearson.r,
                                  "icc2": res.icc_vs_mean.icc,
                                  "bias": res.bland_altman.bias, "mae": res.mae}
        out[key] = groups
    return out


def few_cases_flag(overall: Comparison, tags: TagComparison, cases: int) -> list[str]:
    """One flag naming every case-clustered interval besides r's that stands on fewer than
    `MIN_R_CASES` cases (each carries its own `warning`)."""
    named = [name for name, warned in (
        ("ICC(2,1)", overall.icc_vs_mean.warning),
        ("the Bland-Altman bias and limits", overall.bland_altman.warning),
        ("the Alt-Test's winning rate and advantage probability",
         overall.alt_test.warning if overall.alt_test else None),
        ("the error classes' kappa, AC1 and F1",
         any(c.grader.ci95 is not None and c.grader.ci95.warning for c in tags.classes.values())),
    ) if warned]
    if not named:
        return []
    return [f"the intervals of {', '.join(named)} stand on {cases} cases, fewer than "
            f"{MIN_R_CASES}: they cover less than 95% with so few cases (docs/agreement.md)"]


def build(data: CalibrationData, *, config_id: int, part: str, gate: Gate,
          statistics: Statistics, protocol_id: int | None = None,
          protocol_hash: str | None = None, looks: list[Look] | None = None) -> Report:
    """The report of `data` under `gate` and `statistics`; `validates` when a held-out report is
    judged under a registered protocol."""
    st = statistics
    g, e = data.overall
    _, clusters = np.unique(data.cases, return_inverse=True)
    fisher = st.pearson_ci == "fisher"
    level = interval_level(st.confidence, gate.looks)
    options = {"domain": data.domain, "seed": st.seed, "epsilon": gate.alt_test_epsilon,
               "alt_q": gate.alt_test_q, "min_alt_items": st.alt_test_min_items}
    overall = compare_to_experts(g, e, bootstrap=0 if fisher else st.bootstrap,
                                 clusters=clusters, ci_method="bca" if fisher else st.pearson_ci,
                                 confidence=level, **options)
    criteria = {k: compare_to_experts(cg, ce, bootstrap=0, confidence=level, clusters=clusters,
                                      **options)
                for k, (cg, ce) in data.criteria.items()}
    p = overall.pearson
    checks = gate_checks(gate, p, overall.icc_vs_mean, overall.alt_test, pearson_ci=p.interval(),
                         min_items=st.alt_test_min_items, level=level)
    tags = compare_tags(*data.tags, data.tag_names, bootstrap=st.bootstrap, seed=st.seed,
                        clusters=clusters)
    passed = gate_passed(checks)
    return Report(
        config_id=config_id, part=part, n_items=len(data.items), n_experts=len(data.raters),
        data_hash=data_hash(data), protocol_id=protocol_id, protocol_hash=protocol_hash,
        gate_settings={**asdict(gate), "required": list(gate.required)},
        statistics=asdict(st), gate=checks, passed=passed,
        validates=part == "heldout" and protocol_hash is not None,
        flags=[*data.flags, *([p.warning] if p.warning else []),
               *few_cases_flag(overall, tags, len(set(data.cases)))],
        overall=overall.to_dict(), criteria={k: v.to_dict() for k, v in criteria.items()},
        error_tags=tags.to_dict(),
        breakdown=_breakdown(data), heldout_looks=looks or [])
