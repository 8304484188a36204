"""A synthetic study at a multiple of a real Neural-MedBench study, for the scale benchmarks.

1x = 120 cases, 200 tasks (3 families x 3 levels, level 3 with one revealed stage), 16 models
x 5 samples = 16,000 model responses, every response graded by one grader config, 6 experts
with 3 of them scoring a calibration subset (300 responses at 1x, each by 3 raters), and one
admin. `scale` multiplies cases, tasks and so responses; `responses` instead sets the number of
responses directly (tasks x 16 models x 5 samples rounded, for the grading benchmark).

Written with direct multi-row inserts into a migrated database (`python -m benchmarks.study
URL SCALE`): a 4x study (64,000 responses) takes seconds, not the minutes of `nmb import`.
Texts are short synthetic strings of realistic length; no images (the pages show the case
without a viewer). Not patient data.
"""

from __future__ import annotations

import hashlib
import math
import random
import sys
import time
from typing import Any

from sqlalchemy import insert
from sqlmodel import Session, select

from db.models import (
    Assignment,
    AssignmentDesign,
    Case,
    ExpertScore,
    GraderRun,
    GraderScore,
    Response,
    Task,
    utcnow,
)

CASES, TASKS, MODELS, SAMPLES = 120, 200, 16, 5
EXPERTS, SCORING_EXPERTS, SCORED = 6, 3, 300  # per 1x
FAMILIES = ("differential", "lesion", "rationale")
EHR = ("A 58-year-old woman with three weeks of progressive left arm weakness and word-finding "
       "difficulty; history of hypertension and smoking. Examination: left pronator drift, mild "
       "expressive aphasia. ") * 3
ANSWER = ("The imaging shows a ring-enhancing lesion in the right frontal lobe with surrounding "
          "vasogenic oedema and mass effect. Differential: glioblastoma, metastasis, abscess, "
          "tumefactive demyelination. Most likely glioblastoma given age and course. ") * 2


def _rows(table: Any, rows: list[dict], s: Session, chunk: int = 2000) -> None:
    conn = s.connection()
    for i in range(0, len(rows), chunk):
        conn.execute(insert(table), rows[i:i + chunk])


def make_study(s: Session, *, scale: float = 1.0, responses: int | None = None,
               base_url: str | None = None, graded: bool = True) -> dict[str, int]:
    """Write the study into the (migrated, empty) database of `s`; returns its counts. The
    grader config is `grading.config`'s default, with `base_url` if given."""
    from db.rubrics import store_rubric
    from db.users import add_user
    from grading.config import GraderSettings, store_config
    from rubric import DEFAULT_RUBRIC
    from rubric.loader import load_rubric

    n_tasks = (max(1, math.ceil(responses / (MODELS * SAMPLES))) if responses is not None
               else max(3, round(TASKS * scale)))
    n_cases = max(1, round(n_tasks * CASES / TASKS))
    rng, now = random.Random(0), utcnow()
    _rows(Case, [{"case_id": f"case{c:05d}", "title": f"Synthetic case {c}", "ehr": EHR,
                  "scores": {"MMSE": 20 + c % 10}, "bundle": "bench", "created_at": now,
                  "ground_truth": {"final_diagnosis": f"diagnosis {c % 40}",
                                   "differential": ["glioblastoma", "metastasis"],
                                   "lesion": "right frontal", "reasoning": "enhancing lesion"}}
                 for c in range(n_cases)], s)
    tasks = []
    for t in range(n_tasks):
        level = 1 + (t // 3) % 3
        tasks.append({"task_id": f"task{t:05d}", "case_id": f"case{t % n_cases:05d}",
                      "family": FAMILIES[t % 3], "level": level,
                      "prompt": f"Task {t}: give the most likely diagnosis and a differential.",
                      "stages": ["CSF: oligoclonal bands absent."] if level == 3 else []})
    _rows(Task, tasks, s)
    rows, n = [], 0
    for t in tasks:
        for m in range(MODELS):
            for k in range(SAMPLES):
                if responses is not None and n >= responses:
                    break
                rows.append({"response_id": f"r-{t['task_id']}-m{m:02d}-{k}",
                             "task_id": t["task_id"], "source": "model", "model": f"model-{m:02d}",
                             "sample": k, "text": f"{ANSWER} (sample {n})",
                             "turns": ["Revised: glioblastoma."] if t["stages"] else None,
                             "blind_code": f"R-{n:08X}", "created_at": now})
                n += 1
    _rows(Response, rows, s)
    rubric = store_rubric(s, load_rubric(DEFAULT_RUBRIC))
    experts = [add_user(s, name=f"expert{e}", role="expert", password="pw")
               for e in range(max(SCORING_EXPERTS, round(EXPERTS * scale)))]
    add_user(s, name="admin", role="admin", password="pw")
    s.flush()
    config = store_config(s, GraderSettings(base_url=base_url))
    if graded:
        run = GraderRun(config_id=config.id, items="all", status="finished", n_items=len(rows),
                        graded=len(rows), finished_at=now)
        s.add(run)
        s.flush()
        _rows(GraderScore, [{
            "config_id": config.id, "response_id": r["response_id"], "run_id": run.id,
            "request_hash": hashlib.sha256(r["response_id"].encode()).hexdigest(),
            "criteria": {}, "correct_diagnosis": rng.random() < 0.5, "error_tags": [],
            "justification": "Synthetic grade.", "overall": rng.random(), "prompt_tokens": 2400,
            "completion_tokens": 60, "latency_s": 0.5, "cost_usd": 0.0066, "created_at": now}
            for r in rows], s)
    design = AssignmentDesign(rubric_hash=rubric.content_hash, selection="all", overlap=3, seed=0)
    s.add(design)
    s.flush()
    scored = rng.sample([r["response_id"] for r in rows], min(len(rows), round(SCORED * scale)))
    assignments = [{"design_id": design.id, "rater_id": e.id, "response_id": rid, "position": p}
                   for e in experts[:SCORING_EXPERTS] for p, rid in enumerate(scored)]
    _rows(Assignment, assignments, s)
    ids = s.exec(select(Assignment.id).order_by(Assignment.id)).all()
    _rows(ExpertScore, [{
        "assignment_id": a, "rubric_hash": rubric.content_hash, "status": "submitted",
        "criteria": {}, "correct_diagnosis": rng.random() < 0.5, "error_tags": [],
        "overall": rng.random(), "active_seconds": 60.0, "updated_at": now, "submitted_at": now}
        for a in ids[::2]], s)  # half of every rater's queue submitted
    s.commit()
    return {"cases": n_cases, "tasks": n_tasks, "responses": len(rows),
            "experts": len(experts), "assignments": len(assignments), "config": config.id}


if __name__ == "__main__":
    from db.engine import engine_for, upgrade

    url, scale = sys.argv[1], float(sys.argv[2])
    upgrade(url)
    start = time.perf_counter()
    with Session(engine_for(url), expire_on_commit=False) as session:
        print(make_study(session, scale=scale), f"{time.perf_counter() - start:.1f} s")
