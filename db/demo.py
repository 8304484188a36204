"""`nmb demo`: the synthetic demo study, offline, for trying every screen.

It imports the synthetic bundle (db.demo_bundle), adds the demo accounts (password `demo`),
the rubric, a calibration subset assigned to the three demo experts, and synthetic expert
scores (marked synthetic) so the calibration pages have something to show; `demo-expert1`
keeps some items unscored to try. Nothing here is patient data.
"""

import tempfile
from pathlib import Path

import numpy as np
from sqlmodel import Session, select

from db.assignments import assign, draw_calibration
from db.audit import record
from db.bundle import import_bundle
from db.demo_bundle import demo_truth, write_demo_bundle
from db.engine import session, upgrade
from db.models import Assignment, Case, ExpertScore, Response, ScoreRevision, Setting, Task, User
from db.rubrics import ensure_rubric
from db.users import add_user
from rubric import Rubric

DEMO_PASSWORD = "demo"
DEMO_USERS = [("demo-admin", "admin"), ("demo-expert1", "expert"), ("demo-expert2", "expert"),
              ("demo-expert3", "expert"), ("demo-physician", "physician"),
              ("demo-student", "student")]
EXPERTS = [name for name, role in DEMO_USERS if role == "expert"]
CALIBRATION_ITEMS = 120
LEFT_FOR_EXPERT1 = 8


def load_demo(*, if_empty: bool = False, resolution_mm: int = 1, seed: int = 0) -> str:
    upgrade()
    with session() as s:
        if if_empty and s.exec(select(Case)).first() is not None:
            return "the study already holds cases: demo not loaded"
    with tempfile.TemporaryDirectory() as tmp:
        bundle = write_demo_bundle(Path(tmp) / "neural-medbench-demo", resolution_mm=resolution_mm,
                                   seed=seed)
        with session() as s:
            summary = import_bundle(s, bundle, actor="demo")
    with session() as s:
        _demo_study(s, seed)
        s.commit()
    return f"demo study loaded (synthetic data): {summary}"


def _demo_study(s: Session, seed: int) -> None:
    for name, role in DEMO_USERS:
        if s.exec(select(User).where(User.name == name)).first() is None:
            add_user(s, name=name, role=role, password=DEMO_PASSWORD, demo=True, actor="demo")
    s.merge(Setting(key="demo", value="1"))
    rubric = ensure_rubric(s, "neurology-v1", actor="demo")
    s.flush()
    if s.exec(select(Assignment)).first() is not None:
        return
    n = min(CALIBRATION_ITEMS, len(s.exec(select(Response.response_id)).all()))
    draw_calibration(s, n=n, seed=seed, actor="demo")
    s.flush()
    assign(s, rubric_hash=rubric.content_hash, raters=EXPERTS, overlap=3,
           selection="calibration", seed=seed, actor="demo")
    s.flush()
    _synthetic_expert_scores(s, rubric, seed)
    record(s, "demo.load", actor="demo")


def synthetic_levels(
    rubric: Rubric, family: str, correct: bool, tags: list[str], rng: np.random.Generator,
    noise: float,
) -> dict[str, int | None]:
    """Plausible criterion levels for a response of known quality, plus rater noise."""
    lo, hi = rubric.scale.min, rubric.scale.max
    base = hi - 0.6 if correct else lo + 1.2
    base -= 0.7 * len(tags)
    return {c.key: int(np.clip(round(base + rng.normal(0, noise)), lo, hi))
            for c in rubric.applicable_criteria(family)}


def _synthetic_expert_scores(s: Session, rubric: Rubric, seed: int) -> None:
    truth = demo_truth(seed)
    raters = {u.name: u for u in s.exec(select(User).where(User.name.in_(EXPERTS)))}
    rows = s.exec(select(Assignment, Task.family).join(Response).join(Task)
                  .order_by(Assignment.rater_id, Assignment.position)).all()
    left = {raters["demo-expert1"].id: LEFT_FOR_EXPERT1}
    queue_len: dict[int, int] = {}
    for a, _ in rows:
        queue_len[a.rater_id] = queue_len.get(a.rater_id, 0) + 1
    for a, family in rows:
        if a.position >= queue_len[a.rater_id] - left.get(a.rater_id, 0):
            continue  # left for the user to score
        rng = np.random.default_rng([seed, a.rater_id, a.id])
        t = truth.get(a.response_id, {"correct": True, "error_tags": []})
        tags = list(t["error_tags"]) if rng.random() > 0.15 else []
        correct = bool(t["correct"]) if rng.random() > 0.05 else not t["correct"]
        criteria = synthetic_levels(rubric, family, correct, tags, rng, noise=0.45)
        values = {"criteria": criteria, "correct_diagnosis": correct, "error_tags": tags,
                  "comment": ("Synthetic demo comment: " + ", ".join(tags)) if tags else "",
                  "confidence": int(rng.integers(3, 6))}
        clean = rubric.validate_score(values, family=family)
        score = ExpertScore(assignment_id=a.id, rubric_hash=rubric.content_hash,
                            status="submitted", revision=1, synthetic=True,
                            active_seconds=float(rng.integers(60, 400)),
                            overall=clean["overall"],
                            **{k: clean[k] for k in ("criteria", "correct_diagnosis", "error_tags",
                                                     "comment", "confidence")})
        score.submitted_at = score.updated_at
        s.add(score)
        s.flush()
        s.add(ScoreRevision(score_id=score.id, revision=1, rater_id=a.rater_id, content=clean,
                            changes={}))
