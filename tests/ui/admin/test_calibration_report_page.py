"""The calibration report on /calibrate shows what the HTML report shows (calibration/html.py):
the clustering unit, the items the ICCs dropped listwise, the Alt-Test's sensitivity to epsilon
and the GRRAS checklist."""

import numpy as np
from sqlmodel import Session, select

from calibration import grras
from db.engine import engine_for
from db.models import Assignment, Response, Task
from db.raters.assignments import assign, draw_calibration
from db.raters.scoring import submit
from db.rubrics import ensure_rubric
from tests.apptest import make_user, page
from tests.factories import grade_all, make_study
from ui.plain_text import escape_markdown


def _scored_study(url: str) -> None:
    """20 cases x 2 models, 37 of the 40 responses in the dev part, scored by three experts
    around a true level the grader sees with noise; expert3 leaves two items unscored."""
    rng = np.random.default_rng(0)
    with Session(engine_for(url), expire_on_commit=False) as s:
        make_study(s, n_tasks=20, samples=1)
        rubric = ensure_rubric(s, "neurology-v1")
        draw_calibration(s, n=40, dev_fraction=0.9, seed=0)
        assign(s, rubric_hash=rubric.content_hash, raters=["expert1", "expert2", "expert3"],
               overlap=3, selection="calibration", seed=0)
        family = dict(s.exec(select(Response.response_id, Task.family).join(Task)).all())
        level = {rid: int(rng.integers(0, 5)) for rid in family}
        grade_all(s, lambda r: level[r.response_id] >= 3,
                  overall=lambda right: 0.8 if right else 0.3)
        skipped = 0
        for a in s.exec(select(Assignment).order_by(Assignment.id)).all():
            if a.rater_id == 3 and skipped < 2:  # expert3: two items left unscored
                skipped += 1
                continue
            q = int(np.clip(level[a.response_id] + rng.integers(-1, 2), 0, 4))
            crit = {c.key: q for c in rubric.applicable_criteria(family[a.response_id])}
            submit(s, rater_id=a.rater_id, assignment_id=a.id,
                   values={"criteria": crit, "correct_diagnosis": q >= 3, "error_tags": [],
                           "comment": "", "confidence": 3})
        s.commit()


def test_the_report_names_its_clustering_dropped_items_epsilon_sensitivity_and_grras(
        sqlite_url: str) -> None:
    _scored_study(sqlite_url)
    at = page("pages/calibrate.py", make_user("admin1", "admin"), timeout=120).run()
    next(n for n in at.number_input if n.label == "Bootstrap resamples").set_value(200)
    next(b for b in at.button if b.label == "Compute report").click().run()
    assert not at.exception, at.exception
    assert any("gate" in s.value and "dev part" in s.value for s in at.subheader)
    captions = " ".join(c.value for c in at.caption)  # markdown, escaped as the page shows it
    for line in ("Clustering unit: the case (20 cases). Every interval resamples whole cases",
                 "ICC(2,1) of the grader against the experts' mean (the gate's) on 37 items, "
                 "0 dropped listwise", "raters on 35 of 37 items, 2 dropped listwise"):
        assert escape_markdown(line) in captions, captions
    frames = [df.value for df in at.dataframe]
    [alt] = [df for df in frames if list(df.columns) == ["epsilon", "winning rate", "verdict"]]
    assert list(alt["epsilon"]) == ["0.100", "0.150", "0.200"]
    assert alt["winning rate"].str.fullmatch(r"[01]\.\d{3}").all()
    assert set(alt["verdict"]) <= {"pass", "FAIL"}
    [checklist] = [df for df in frames if "GRRAS item" in df.columns]
    assert len(checklist) == len(grras.ITEMS) == 15
