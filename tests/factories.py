"""Small studies built straight into the database (no images) for fast tests."""

import secrets
from collections.abc import Callable

from sqlmodel import Session, select

from db.models import Case, Response, Task
from db.users import add_user

MODELS = ("model-alpha", "model-beta")


def make_study(s: Session, *, n_tasks: int = 6, samples: int = 1, experts: int = 3) -> list[str]:
    """Cases, tasks over all families and levels, model responses and expert accounts.

    Returns the response ids.
    """
    rids = []
    families = ("differential", "lesion", "rationale")
    for t in range(n_tasks):
        cid = f"case{t}"
        s.add(Case(case_id=cid, title=f"Case {t} (synthetic)", ehr="Synthetic record.",
                   scores={"MMSE": 27}, ground_truth={"final_diagnosis": "MS"}, bundle="test"))
        level = 1 + t % 3
        s.add(Task(task_id=f"task{t}", case_id=cid, family=families[t % 3], level=level,
                   prompt=f"Prompt {t}", stages=["More information."] if level == 3 else []))
        s.flush()  # no ORM relationships: parents first
        for model in MODELS:
            for k in range(samples):
                rid = f"r{t}-{model}-{k}"
                s.add(Response(response_id=rid, task_id=f"task{t}", source="model", model=model,
                               sample=k, text=f"Synthetic answer {t} ({model[-4:]}, {k}).",
                               blind_code="R-" + secrets.token_hex(4).upper()))
                rids.append(rid)
    for e in range(1, experts + 1):
        add_user(s, name=f"expert{e}", role="expert", password="pw")
    s.commit()
    return rids


def add_practice_item(s: Session, case_id: str, prompt: str = "Practice.") -> None:
    """A practice task on `case_id` ("zz-practice": last by id) and one model response ("p0")."""
    s.add(Task(task_id="zz-practice", case_id=case_id, family="differential", level=1,
               prompt=prompt, stages=[], practice=True))
    s.flush()
    s.add(Response(response_id="p0", task_id="zz-practice", source="model", model=MODELS[0],
                   sample=0, text="MS.", blind_code="R-PRACTICE01"))


def grade_all(s: Session, correct: Callable[[Response], bool] = lambda r: True, *,
              overall: Callable[[bool], float] = lambda correct: 0.5) -> int:
    """One grader run of a dated test config (stored if new) grading every response without a
    grade of it, straight into the database: `correct(response)` its correct-diagnosis
    judgment, `overall(correct)` its score. Returns the config id; the caller commits."""
    from db.models import GraderRun, GraderScore
    from grading.config import GraderSettings, store_config

    config = store_config(s, GraderSettings(model="test-grader-2024-01-01"))
    run = GraderRun(config_id=config.id, items="all")
    s.add(run)
    s.flush()
    graded = set(s.exec(select(GraderScore.response_id).where(GraderScore.config_id == config.id)))
    for r in s.exec(select(Response)).all():
        if r.response_id not in graded:
            judged = correct(r)
            s.add(GraderScore(config_id=config.id, response_id=r.response_id, run_id=run.id,
                              request_hash="x", criteria={}, correct_diagnosis=judged,
                              error_tags=[], overall=overall(judged)))
    return config.id


def add_series(s: Session, case_ids: list[str]) -> None:
    """A small synthetic T1 volume (a bright ellipsoid) for each case, in NMB_HOME's image store
    under its sha256, as an import stores it."""
    import hashlib

    import nibabel as nib
    import numpy as np

    from db.engine import nmb_home
    from db.models import Series

    for n, case_id in enumerate(case_ids):
        grid = np.indices((24, 28, 20)).astype(np.float32)
        centre = np.array([12, 14 + n % 3, 10])[:, None, None, None]
        volume = (100.0 * (((grid - centre) ** 2).sum(axis=0) < 60 + n)).astype(np.int16)
        data = nib.Nifti1Image(volume, np.diag([2.0, 2.0, 2.0, 1.0])).to_bytes()
        digest = hashlib.sha256(data).hexdigest()
        path = nmb_home() / "images" / f"{digest}.nii"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        s.add(Series(case_id=case_id, position=0, sequence="T1", path=f"images/{digest}.nii",
                     sha256=digest, shape=list(volume.shape), voxel_sizes=[2.0, 2.0, 2.0]))
    s.commit()


def validated_config(s: Session, base_url: str, *, api_key: str = "sk-test",
                     vision: bool = False, look: bool = True) -> int:
    """A config graded by the server at `base_url` whose held-out look passed under a registered
    protocol: 24 responses, all in the calibration subset; three experts whose scores copy the
    grader's (so the gate passes; the gate itself is tested in tests/calibration/test_report).
    The Alt-Test needs 30 items per expert, so this protocol requires r and ICC only.
    `look=False`: everything but the held-out look."""
    from sqlmodel import select

    from calibration import calibrate, protocol
    from db.models import Assignment, GraderScore
    from db.raters.assignments import assign, draw_calibration
    from db.raters.scoring import submit
    from db.rubrics import ensure_rubric
    from grading.config import GraderSettings, store_config
    from grading.grader import grade

    make_study(s, n_tasks=12, samples=1, experts=3)
    if vision:
        add_series(s, [f"case{t}" for t in range(12)])
    rubric = ensure_rubric(s, "neurology-v1")
    draw_calibration(s, n=24, seed=0)
    assign(s, rubric_hash=rubric.content_hash, raters=["expert1", "expert2", "expert3"],
           overlap=3, selection="calibration", seed=0)
    protocol.register(s, accept_weaker=True, gate=protocol.Gate(required=("pearson", "icc2")),
                      statistics=protocol.Statistics(bootstrap=200))
    config = store_config(s, GraderSettings(base_url=base_url, vision=vision,
                                            rubric=rubric.id))  # the experts' rubric
    s.commit()
    assert grade(s, config_id=config.id, api_key=api_key, trust_base_url=base_url).failed == 0
    grades = {g.response_id: g for g in s.exec(select(GraderScore))}
    for a in s.exec(select(Assignment)).all():
        g = grades[a.response_id]
        submit(s, rater_id=a.rater_id, assignment_id=a.id,
               values={"criteria": g.criteria, "correct_diagnosis": g.correct_diagnosis,
                       "error_tags": g.error_tags, "comment": "As the grader.", "confidence": 3})
    s.commit()
    if look:  # else: ready for its held-out look
        outcome = calibrate.run(s, config_id=config.id, part="heldout")
        assert outcome.report.passed, outcome.report.why_failed()
    return config.id


def package_answers(responses: list) -> list:
    """A study's model responses (`db.models.Response`) as a package reads them."""
    from package.format import Answer

    return [Answer(r.response_id, r.task_id, r.text, r.turns or [], r.model) for r in responses]
