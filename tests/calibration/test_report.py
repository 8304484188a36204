"""Calibration report and gate on a real database: a faithful grader passes, a noisy one fails."""

import json
from pathlib import Path

import numpy as np
from sqlmodel import Session, select

from calibration import report
from calibration.grader_config import GraderSettings, store_config
from db.assignments import assign, draw_calibration
from db.engine import engine_for
from db.models import (
    Assignment,
    CalibrationItem,
    GraderConfig,
    GraderRun,
    GraderScore,
    Response,
    Task,
    User,
)
from db.rubrics import ensure_rubric
from db.scoring import submit
from tests.factories import make_study


def _study(url: str, grader_noise: float, seed: int = 0) -> tuple[Session, int]:
    s = Session(engine_for(url), expire_on_commit=False)
    make_study(s, n_tasks=30, samples=1)  # 60 responses
    rubric = ensure_rubric(s, "neurology-v1")
    draw_calibration(s, n=60, seed=seed)
    assign(s, rubric_hash=rubric.content_hash, raters=["expert1", "expert2", "expert3"],
           overlap=3, selection="calibration", seed=seed)
    s.commit()
    rng = np.random.default_rng(seed)
    family = dict(s.exec(select(Response.response_id, Task.family).join(Task)).all())
    quality = {rid: int(rng.integers(0, 5)) for rid in family}  # the response's true level
    for a in s.exec(select(Assignment)).all():
        level = int(np.clip(quality[a.response_id] + rng.integers(-1, 2) * (rng.random() < 0.2),
                            0, 4))
        crit = {c.key: level for c in rubric.applicable_criteria(family[a.response_id])}
        submit(s, rater_id=a.rater_id, assignment_id=a.id,
               values={"criteria": crit, "correct_diagnosis": level >= 3, "error_tags": [],
                       "comment": "", "confidence": 3})
    config = store_config(s, GraderSettings(model="test-grader-2024-01-01"))
    run = GraderRun(config_id=config.id, items="calibration")
    s.add(run)
    s.flush()
    for rid, q in quality.items():
        level = int(np.clip(round(q + rng.normal(0, grader_noise)), 0, 4))
        crit = {c.key: level for c in rubric.applicable_criteria(family[rid])}
        clean = rubric.validate_score({"criteria": crit, "correct_diagnosis": level >= 3},
                                      family=family[rid])
        s.add(GraderScore(config_id=config.id, response_id=rid, run_id=run.id, request_hash="x",
                          criteria=clean["criteria"], correct_diagnosis=clean["correct_diagnosis"],
                          error_tags=[], overall=clean["overall"]))
    s.commit()
    return s, config.id


def test_faithful_grader_passes_and_is_validated(database_url: str, tmp_path: Path) -> None:
    s, cid = _study(database_url, grader_noise=0.0)
    data = report.collect(s, config_id=cid, part="heldout")
    held = s.exec(select(CalibrationItem).where(CalibrationItem.part == "heldout")).all()
    assert sorted(data.items) == sorted(c.response_id for c in held)
    results = report.build(data, bootstrap=300)
    assert results["overall"]["pearson"]["r"] > 0.9
    assert results["passed"], results["gate"]
    row = report.save(s, config_id=cid, part="heldout", results=results)
    assert s.get(GraderConfig, cid).validated_report_id == row.id
    from calibration.html import export

    paths = export(data, results, tmp_path / "out", title="test")
    page = paths[0].read_text()
    assert "PASSED" in page and page.count("data:image/png;base64,") == 4
    assert json.loads(paths[1].read_text())["passed"] is True
    s.close()


def test_noisy_grader_fails_the_gate(sqlite_url: str) -> None:
    s, cid = _study(sqlite_url, grader_noise=2.5, seed=1)
    results = report.build(report.collect(s, config_id=cid, part="heldout"), bootstrap=200)
    assert not results["passed"]
    assert not results["gate"]["pearson"]["passed"]
    report.save(s, config_id=cid, part="heldout", results=results)
    assert s.get(GraderConfig, cid).validated_report_id is None
    assert s.exec(select(User)).first() is not None
    s.close()
