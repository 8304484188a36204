"""Calibration reports: the grader against the experts on the calibration subset, and the gate.

The overall score is compared on the rubric's point scale (overall x (max - min) + min), so
a bias of 1.0 reads "one rubric point"; each criterion on its own levels. Statistics come
from `calibration.agreement`; this module only gathers the scores and applies the gate.
"""

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sqlmodel import Session, select

from calibration.agreement import compare_tags, compare_to_experts
from calibration.grader_config import get_config, is_dated_snapshot
from db.audit import record
from db.models import (
    Assignment,
    CalibrationItem,
    CalibrationReport,
    ExpertScore,
    GraderRun,
    GraderScore,
    Response,
    Task,
)
from db.rubrics import rubric_by_hash
from errors import UserError

PARTS = ("heldout", "dev", "all")
DEFAULT_THRESHOLDS = {"pearson_min": 0.90, "icc2_min": 0.75, "alt_test_epsilon": 0.2}


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


def collect(s: Session, *, config_id: int, part: str) -> CalibrationData:
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
    grades = {g.response_id: g for g in s.exec(select(GraderScore).where(
        GraderScore.config_id == config_id, GraderScore.response_id.in_(list(subset))))}
    expert_rows = s.exec(
        select(Assignment.response_id, Assignment.rater_id, ExpertScore)
        .join(ExpertScore, ExpertScore.assignment_id == Assignment.id)
        .where(ExpertScore.status == "submitted", Assignment.response_id.in_(list(subset))))
    by_item: dict[str, dict[int, ExpertScore]] = {}
    for rid, rater, score in expert_rows:
        by_item.setdefault(rid, {})[rater] = score
    items = sorted(r for r in subset if r in grades and r in by_item)
    if len(items) < 3:
        raise UserError(f"only {len(items)} {part} items have both a grade and expert scores; "
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
    flags = [] if is_dated_snapshot(config.model) else [
        f"grader model {config.model!r} is an undated alias"]
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


def _breakdown(data: CalibrationData) -> dict[str, dict[str, Any]]:
    """Pearson r, ICC2, bias and MAE of the overall score within each family, level, source."""
    g, e = data.overall
    out: dict[str, dict[str, Any]] = {}
    for key, labels in data.strata.items():
        groups = {}
        for value in sorted(set(labels), key=str):
            mask = np.array([lab == value for lab in labels])
            if mask.sum() < 3:
                groups[str(value)] = {"n_items": int(mask.sum())}
                continue
            res = compare_to_experts(g[mask], e[mask], domain=data.domain, bootstrap=0)
            groups[str(value)] = {"n_items": int(mask.sum()), "pearson": res["pearson"]["r"],
                                  "icc2": (res["icc"].get("ICC2") or {}).get("icc"),
                                  "bias": res["bland_altman"]["bias"], "mae": res["mae"]}
        out[key] = groups
    return out


def build(data: CalibrationData, *, thresholds: dict[str, float] | None = None,
          bootstrap: int = 2000, seed: int = 0) -> dict[str, Any]:
    """The report: statistics, breakdowns and the gate's verdict (JSON-ready)."""
    th = {**DEFAULT_THRESHOLDS, **(thresholds or {})}
    g, e = data.overall
    _, clusters = np.unique(data.cases, return_inverse=True)
    overall = compare_to_experts(g, e, domain=data.domain, bootstrap=bootstrap, seed=seed,
                                 epsilon=th["alt_test_epsilon"], clusters=clusters)
    criteria = {k: compare_to_experts(cg, ce, domain=data.domain, bootstrap=0, seed=seed,
                                      epsilon=th["alt_test_epsilon"])
                for k, (cg, ce) in data.criteria.items()}
    r = overall["pearson"]
    icc2 = (overall["icc"].get("ICC2") or {}).get("icc")
    alt = overall.get("alt_test") or {}
    gate = {
        "pearson": {"value": r["r"], "ci95_bootstrap": r.get("ci95_bootstrap"),
                    "ci95_fisher": r.get("ci95_fisher"),
                    "threshold": th["pearson_min"],
                    "passed": r["r"] is not None and r["r"] >= th["pearson_min"]},
        "icc2": {"value": icc2, "threshold": th["icc2_min"],
                 "passed": icc2 is not None and icc2 >= th["icc2_min"]},
        "alt_test": {"winning_rate": alt.get("winning_rate"), "epsilon": th["alt_test_epsilon"],
                     "passed": bool(alt.get("passed"))},
    }
    return {
        "n_items": len(data.items), "n_experts": len(data.raters), "flags": data.flags,
        "thresholds": th, "gate": gate, "passed": all(v["passed"] for v in gate.values()),
        "overall": overall, "criteria": criteria,
        "error_tags": compare_tags(*data.tags, data.tag_names, bootstrap=bootstrap, seed=seed,
                                   clusters=clusters),
        "breakdown": _breakdown(data),
    }


def save(s: Session, *, config_id: int, part: str, results: dict[str, Any],
         run_id: int | None = None, actor: str | None = None) -> CalibrationReport:
    """Store a report; a passing held-out report makes its config validated.

    The report covers every valid grade of the config (a re-run that finishes failures adds
    grades under a new run); `run_id` names the run it is filed under, by default the latest.
    """
    if run_id is not None:
        run = s.get(GraderRun, run_id)
        if run is None or run.config_id != config_id:
            raise UserError(f"grader run {run_id} is not a run of config {config_id}")
    else:
        run = s.exec(select(GraderRun).where(GraderRun.config_id == config_id)
                     .order_by(GraderRun.id.desc())).first()
    row = CalibrationReport(config_id=config_id, run_id=run.id if run else None, part=part,
                            thresholds=results["thresholds"], results=results,
                            passed=results["passed"])
    s.add(row)
    s.flush()
    if part == "heldout" and results["passed"]:
        config = get_config(s, config_id)
        config.validated_report_id = row.id
        s.add(config)
    record(s, "calibration.report", actor=actor, config=config_id, part=part, report=row.id,
           passed=results["passed"])
    s.commit()
    return row
