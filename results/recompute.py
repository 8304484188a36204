"""The results from `nmb export` files alone: responses, tasks, grader-scores and expert-scores
(CSV, JSONL or Parquet) give the same `StudyData`, hence the same tables, as the database.

    nmb export responses --out responses.csv       (likewise tasks, grader-scores, expert-scores)
    from results.recompute import recompute
    res = recompute(Path("exports"), config_id=1, judge="grader")

What each table reads from the exports (docs/results.md): the response's task, case, family,
level, source, model and person (`responses`); the task's number of stages and disconfirming
marks (`tasks`); the grade's correct_diagnosis, overall, error_tags, diagnosis_rank, stages and
prompt_version (which says whether the rank and the stages were asked), tokens and cost
(`grader-scores`); each submitted expert score's correct_diagnosis, overall, error_tags and
stage_correct (`expert-scores`); a model response's usage (`responses`, for the cost table).
CSV cells that `nmb export` quoted against formula injection are read back unquoted.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from pathlib import Path
from typing import Any

import pandas as pd

from db.export import FORMULA_CHARS
from db.models import Task
from db.sources.responses import holds_final_stage_only
from errors import UserError
from results.cost import grader_cost_of, model_costs_of
from results.fairness import Answer
from results.judgments import GRADER, Vote, grade_judgment, judge_responses
from results.leaderboard import BY
from results.results import Results, StudyData, compute
from rubric import DEFAULT_RUBRIC, load_rubric
from rubric.render import Asked

KINDS = ("responses", "tasks", "grader-scores", "expert-scores")
NESTED = {"turns", "usage", "criteria", "error_tags", "stages", "stage_correct", "disconfirming"}


def _value(column: str, v: Any) -> Any:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    if isinstance(v, str) and v.startswith("'") and v[1:].lstrip()[:1] in (*FORMULA_CHARS, "\t",
                                                                            "\r"):
        v = v[1:]  # quoted by `db.export.neutralise`
    if column in NESTED and isinstance(v, str):
        return json.loads(v)
    if hasattr(v, "tolist"):  # numpy scalars and arrays (JSONL, Parquet)
        return v.tolist()
    return v


def read_export(path: Path) -> list[dict[str, Any]]:
    """The rows of one `nmb export` file, nested values decoded, missing values None."""
    suffix = path.suffix.lower()
    if suffix == ".csv":
        df = pd.read_csv(path, dtype=object, keep_default_na=False, na_values=[""])
    elif suffix == ".jsonl":
        df = pd.read_json(path, lines=True, dtype=False)
    elif suffix == ".parquet":
        df = pd.read_parquet(path)
    else:
        raise UserError(f"{path}: not a .csv, .jsonl or .parquet export")
    rows = []
    for rec in df.to_dict("records"):
        row = {c: _value(c, v) for c, v in rec.items()}
        rows.append(row)
    return rows


def _int(v: Any) -> int | None:
    return None if v is None else int(float(v))


def _float(v: Any) -> float | None:
    return None if v is None else float(v)


def _bool(v: Any) -> bool | None:
    if v is None or isinstance(v, bool):
        return v
    return str(v).strip().lower() in ("true", "1", "1.0")


def _find(folder: Path, kind: str) -> Path:
    found = [folder / f"{kind}{ext}" for ext in (".csv", ".jsonl", ".parquet")
             if (folder / f"{kind}{ext}").is_file()]
    if not found:
        raise UserError(f"{folder}: no {kind}.csv, .jsonl or .parquet (nmb export {kind})")
    return found[0]


def study_data(folder: Path, *, config_id: int, rubric: str = DEFAULT_RUBRIC) -> StudyData:
    """`StudyData` from the exports in `folder` (`<kind>.csv`, `.jsonl` or `.parquet`), with
    the grades of config `config_id` and the error classes of the bundled rubric `rubric`."""
    rows = {kind: [r for r in read_export(_find(folder, kind))
                   if True not in (_bool(r.get("retired")), _bool(r.get("stale")),
                                   _bool(r.get("practice")))]
            for kind in KINDS}  # retired, stale and practice rows are left out, as `load` does
    tasks = {t["task_id"]: Task(task_id=t["task_id"], case_id=t["case_id"], family=t["family"],
                                level=_int(t["level"]), prompt="",
                                stages=[""] * _int(t["n_stages"]),
                                disconfirming=t["disconfirming"]) for t in rows["tasks"]}
    responses = {r["response_id"]: r for r in rows["responses"]}
    grades, config = {}, None
    for g in rows["grader-scores"]:
        if _int(g["config_id"]) != config_id:
            continue
        r, task = responses[g["response_id"]], tasks[g["task_id"]]
        config = g
        grades[g["response_id"]] = grade_judgment(
            who=r["model"] if r["source"] == "model" else r["source"],
            is_model=r["source"] == "model", task=task, correct=_bool(g["correct_diagnosis"]),
            overall=_float(g["overall"]), error_tags=g["error_tags"],
            asked=Asked.of(g["prompt_version"], task.family, len(task.stages)),
            rank=_int(g["diagnosis_rank"]), stages=g["stages"], person=r["user"],
            response_id=g["response_id"])
    if config is None:
        raise UserError(f"the grader-scores export holds no grade of config {config_id}")
    votes: dict[str, list[Vote]] = defaultdict(list)
    for e in rows["expert-scores"]:
        if e["status"] == "submitted":
            votes[e["response_id"]].append((_bool(e["correct_diagnosis"]), _float(e["overall"]),
                                            list(e["error_tags"] or []), e["stage_correct"]))
    judged = judge_responses(
        ((rid, r["source"], r["model"], r["user"], tasks[r["task_id"]])
         for rid, r in sorted(responses.items())), grades, votes)
    mine = [g for g in rows["grader-scores"] if _int(g["config_id"]) == config_id]
    return StudyData(
        grader={"id": config_id, "name": config["config"], "model": config["grader_model"],
                "prompt_version": config["prompt_version"], "validated": None,
                "validation_terms": None},
        judged=judged, responses=len(responses),
        error_classes=load_rubric(rubric).error_class_keys,
        answers=[Answer(rid, r["model"] if r["source"] == "model" else r["source"],
                        r["source"] == "model", r["user"], tasks[r["task_id"]])
                 for rid, r in sorted(responses.items())],
        tasks=[tasks[t] for t in sorted(tasks)],
        final_stage_only={rid: r["model"] for rid, r in sorted(responses.items())
                          if r["source"] == "model" and isinstance(r["turns"], list)
                          and holds_final_stage_only(r["text"] or "", r["turns"])},
        model_costs=model_costs_of((r["model"], r["task_id"], r["usage"])
                                   for r in rows["responses"] if r["source"] == "model"),
        grader_cost=grader_cost_of(config_id, ((_int(g["prompt_tokens"]),
                                                _int(g["completion_tokens"]),
                                                _float(g["cost_usd"])) for g in mine)))


def recompute(folder: Path, *, config_id: int, judge: str = GRADER,
              by: tuple[str, ...] = BY, ks: tuple[int, ...] = (1, 5),
              answered_only: bool = False) -> Results:
    """Every results table from the exports in `folder` (see `study_data`)."""
    return compute(study_data(folder, config_id=config_id), judge=judge, by=by, ks=ks,
                   answered_only=answered_only)
