"""nmb results on real databases: which judgment counts, the prompt version's new fields, the
same numbers as the leaderboard and a package, cost, and the demo's whole story."""

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from sqlmodel import Session, select

from db.engine import engine_for
from db.models import (
    Assignment,
    CollectedResponse,
    CollectionRun,
    GraderScore,
    Response,
    Task,
)
from db.raters.assignments import assign
from db.raters.scoring import submit
from db.rubrics import ensure_rubric
from errors import UserError
from grading.config import GraderSettings, load_settings, store_config
from grading.grader import grade
from package.freeze import freeze
from package.grade import grade_responses, summary
from package.verify import verify
from results import results
from results.cost import model_costs, response_cost
from results.judgments import EXPERTS, GRADER, counted_judgments, grader_judgments
from results.leaderboard import leaderboard
from rubric import load_rubric
from rubric.render import PROMPT_V1
from tests.factories import make_study, package_answers, validated_config
from tests.openai_server import OpenAIServer

ROOT = Path(__file__).resolve().parents[2]
KEY = "sk-test-results-0000"


@pytest.fixture
def server():
    with OpenAIServer() as srv:
        yield srv


@pytest.mark.slow
def test_prompt_v2_grades_store_the_rank_and_the_stages(sqlite_url: str,
                                                        server: OpenAIServer) -> None:
    with Session(engine_for(sqlite_url), expire_on_commit=False) as s:
        make_study(s, n_tasks=3)  # task0 differential L1, task1 lesion L2, task2 rationale L3
        v2 = store_config(s, GraderSettings(base_url=server.base_url))
        v1 = store_config(s, GraderSettings(base_url=server.base_url, prompt_version=PROMPT_V1))
        s.commit()
        for config in (v2, v1):
            assert grade(s, config_id=config.id, api_key=KEY,
                         trust_base_url=server.base_url).failed == 0
        grades = {(g.config_id, g.response_id[:2]): g for g in s.exec(select(GraderScore))}
        board_v2 = {r["who"]: r for r in leaderboard(s, config_id=v2.id, ks=(1, 3))}
        board_v1 = {r["who"]: r for r in leaderboard(s, config_id=v1.id, ks=(1, 3))}
    assert isinstance(grades[v2.id, "r0"].diagnosis_rank, int)
    assert grades[v2.id, "r1"].diagnosis_rank is None and grades[v2.id, "r1"].stages is None
    stages = grades[v2.id, "r2"].stages
    assert len(stages) == 2 and set(stages[1]) == {"leading_diagnosis", "correct", "changed"}
    assert grades[v1.id, "r0"].diagnosis_rank is None and grades[v1.id, "r2"].stages is None
    assert board_v2["model-alpha"]["top@1"] is not None and board_v2["model-alpha"]["top_tasks"] == 1
    assert board_v1["model-alpha"]["top@1"] is None and board_v1["model-alpha"]["top_tasks"] == 0


def test_a_config_file_names_a_known_prompt_version(tmp_path: Path) -> None:
    path = tmp_path / "g.toml"
    path.write_text('prompt_version = "nmb-grader-1"\n')
    assert load_settings(path).prompt_version == PROMPT_V1
    path.write_text('prompt_version = "mine"\n')
    with pytest.raises(UserError, match="prompt_version 'mine' is not one of"):
        load_settings(path)


@pytest.mark.slow
def test_leaderboard_results_and_package_grade_agree(sqlite_url: str, server: OpenAIServer,
                                                     tmp_path: Path) -> None:
    """The same grader answers give the same rows through the study's leaderboard, nmb results
    (judged by the grader) and a frozen package; judged by the experts, whose consensus here
    copies the grader, the same pass@1 and scores, every response counted as the experts' and
    no top-k (the experts are not asked for the rank)."""
    with Session(engine_for(sqlite_url), expire_on_commit=False) as s:
        cid = validated_config(s, server.base_url, api_key=KEY)
        freeze(s, config_id=cid, out=tmp_path / "g.zip")
        responses = package_answers(s.exec(select(Response).order_by(Response.response_id)))
        board = leaderboard(s, config_id=cid, ks=(1,), by="family,level")
        graded = results.build(s, config_id=cid, ks=(1,), judge=GRADER)
        counted = results.build(s, config_id=cid, ks=(1,), judge=EXPERTS)
    rows = grade_responses(verify(tmp_path / "g.zip"), responses, base_url=server.base_url,
                           api_key=KEY)
    package = summary(verify(tmp_path / "g.zip"), rows)
    assert [c.row() for c in graded.cells] == board == package["by_family_level"]
    assert [c.row() for c in graded.overall] == package["overall"]
    assert graded.sources == {EXPERTS: 0, GRADER: 24}
    assert counted.sources == {EXPERTS: 24, GRADER: 0} and counted.expert_ties == 0
    for a, b in zip(counted.cells, graded.cells, strict=True):
        assert (a.pass_at, a.score) == (b.pass_at, b.score)
        assert all(e.value is None for e in a.top.values())
        assert a.sources == {EXPERTS: b.sources[GRADER]}
    assert any(c.top[1].value is not None for c in graded.cells)  # the rank went through


@pytest.mark.slow
def test_the_experts_consensus_counts_where_experts_scored(sqlite_url: str,
                                                           server: OpenAIServer) -> None:
    with Session(engine_for(sqlite_url), expire_on_commit=False) as s:
        make_study(s, n_tasks=3, experts=2)
        config = store_config(s, GraderSettings(base_url=server.base_url))
        s.commit()
        grade(s, config_id=config.id, api_key=KEY, limit=5,  # r2-model-beta-0 stays ungraded
              trust_base_url=server.base_url)
        rubric = ensure_rubric(s, "neurology-v1")
        s.flush()
        assign(s, rubric_hash=rubric.content_hash, raters=["expert1", "expert2"], overlap=2,
               selection="all", seed=0)
        verdicts = {"r0-model-alpha-0": (True, True), "r1-model-alpha-0": (True, False),
                    "r2-model-beta-0": (False, False)}
        for a in s.exec(select(Assignment).order_by(Assignment.id)):
            if a.response_id not in verdicts:
                continue
            first = a.rater_id == min(x.rater_id for x in s.exec(
                select(Assignment).where(Assignment.response_id == a.response_id)))
            correct = verdicts[a.response_id][0 if first else 1]
            submit(s, rater_id=a.rater_id, assignment_id=a.id, values={
                "criteria": _criteria(s, a.response_id, correct), "correct_diagnosis": correct,
                "error_tags": [] if correct else ["knowledge_gap"],
                "comment": "" if correct else "Wrong.", "confidence": 3})
        judged, ties = counted_judgments(s, config_id=config.id)
    by_id = {j.response_id: j for j in judged}
    assert len(judged) == 6 and ties == 1
    assert (by_id["r0-model-alpha-0"].source, by_id["r0-model-alpha-0"].correct) == (EXPERTS, True)
    assert by_id["r0-model-alpha-0"].overall == 1.0
    assert by_id["r1-model-alpha-0"].correct is False  # 1-1: a tie counts as not correct
    beta = by_id["r2-model-beta-0"]  # experts only: never graded
    assert (beta.source, beta.correct, beta.error_tags, beta.rank) == (
        EXPERTS, False, ("knowledge_gap",), None)
    assert by_id["r0-model-beta-0"].source == GRADER


def _criteria(s: Session, response_id: str, correct: bool) -> dict:
    """Every applicable criterion at the top level (correct) or at level 1."""
    task = s.get(Task, s.get(Response, response_id).task_id)
    return {c.key: 4 if correct else 1
            for c in load_rubric("neurology-v1").applicable_criteria(task.family)}


@pytest.mark.slow
def test_cost_from_usage_or_the_price_table(sqlite_url: str) -> None:
    prices = {"models": {"priced-model": {"input": 2.0, "output": 10.0}}}
    assert response_cost("x", {"cost_usd": 0.5, "prompt_tokens": 9}, prices) == 0.5
    assert response_cost("priced-model", {"prompt_tokens": 1000, "completion_tokens": 100},
                         prices) == pytest.approx((1000 * 2 + 100 * 10) / 1e6)
    assert response_cost("unpriced", {"prompt_tokens": 1000}, prices) is None
    assert response_cost("priced-model", {"images": 2}, prices) is None
    with Session(engine_for(sqlite_url)) as s:
        make_study(s, n_tasks=2, samples=2)  # 2 tasks x 2 samples per model
        for r, usage in zip(s.exec(select(Response).where(Response.model == "model-alpha")
                                   .order_by(Response.response_id)),
                            ({"cost_usd": 0.01, "images": 2}, {"cost_usd": 0.03, "images": 4},
                             {"prompt_tokens": 100}, None), strict=True):
            r.usage = usage
            s.add(r)
        run = CollectionRun(model="model-beta", settings={}, template_version="t",
                            template_hash="h")
        s.add(run)
        s.flush()
        s.add(CollectedResponse(response_id="r0-model-beta-0", run_id=run.id, template_version="t",
                                template_hash="h", request_hashes=["x"],
                                image_sha256=["a", "b", "c"], prompt_tokens=200,
                                completion_tokens=20, cost_usd=0.004))
        s.commit()
        alpha, beta = model_costs(s, prices)
    assert (alpha.model, alpha.responses, alpha.tasks, alpha.with_usage, alpha.priced) == (
        "model-alpha", 4, 2, 3, 2)
    assert (alpha.images, alpha.prompt_tokens, alpha.cost_per_response) == (3.0, 100.0, 0.02)
    assert alpha.cost_per_task == 0.04  # two responses per task
    # model-beta: one response collected by nmb collect (its provenance is its usage)
    assert (beta.with_usage, beta.images, beta.prompt_tokens) == (1, 3.0, 200.0)
    assert (beta.cost_per_response, beta.cost_per_task) == (0.004, 0.008)


def _nmb(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cli", *args], cwd=ROOT, env=dict(os.environ),
                          capture_output=True, text=True, timeout=300)


def test_demo_results_tell_the_whole_story(demo_study: Path, tmp_path: Path) -> None:
    out = _nmb("results", "--format", "json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    models = {"meridian-med-2", "cortex-lm-34b", "nimbus-vision-pro", "aurora-vl-7b"}
    assert {c["who"] for c in data["overall"]} == models | {"physician", "student"}
    cells = {(c["who"], c["keys"]["family"], c["keys"]["level"]): c for c in data["cells"]}
    assert len(cells) == 6 * 9  # every family x level cell for 4 models and 2 human groups
    for (who, family, _), c in cells.items():
        assert c["pass_at"]["1"]["value"] is not None and c["score"]["value"] is not None
        if who in models:
            assert c["pass_at"]["5"]["value"] is not None
        else:
            assert c["people"] >= 4
        # every demo cell stands on one or two cases: no interval, "too few cases"
        assert c["cases"] <= 2 and c["pass_at"]["1"]["ci"] is None
        assert c["pass_at"]["1"]["note"] == "too few cases"
        assert (c["top"]["1"]["value"] is not None) == (family == "differential")
    assert all(c["pass_at"]["1"]["ci"] and c["cases"] == 10 for c in data["overall"])
    assert len(data["people"]) == 9 and all(p["who"].startswith("user-") for p in data["people"])
    assert {p["keys"]["role"] for p in data["people"]} == {"physician", "student"}
    assert {(e["who"], e["source"]) for e in data["errors"]} == {
        (m, GRADER) for m in models | {"all models", "physician", "student"}}
    assert {(e["who"], e["source"]) for e in data["errors_compared"]} >= {
        (m, src) for m in models | {"all models"} for src in (EXPERTS, GRADER)}
    anchoring = {r["who"]: r for r in data["anchoring"]}
    assert set(anchoring) == models | {"all models", "physician", "student"}
    assert all(r["conversations"] and r["marked"] == r["conversations"]
               and r["shares"]["correct_end_wrong_first"]["estimate"]["value"] is not None
               for r in anchoring.values())
    assert data["judge"] == GRADER and data["sources"] == {EXPERTS: 0, GRADER: 348}
    assert all(sum(c["sources"].values()) > 0 for c in data["cells"])
    assert {m["model"] for m in data["model_costs"]} == models
    assert all(m["cost_per_task"] > 0 and m["images"] > 0 for m in data["model_costs"])
    assert any("synthetic demo exam takers" in f for f in data["flags"])

    victim = tmp_path / "victim"  # a link another user planted in a shared --out folder at
    victim.write_text("precious")  # the name of the write test, which truncated the file
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / ".nmb-write-test").symlink_to(victim)
    latex = _nmb("results", "--format", "latex", "--by", "level", "--k", "1", "--reveal",
                 "--out", str(tmp_path / "out"))
    assert latex.returncode == 0, latex.stderr
    assert victim.read_text() == "precious"
    assert latex.stdout.count(r"\toprule") == 13 and "synthetic-student-1" in latex.stdout
    written = {p.name for p in (tmp_path / "out").iterdir()}
    assert written >= {"results.html", "results.json", "results.md", "results.tex",
                       "cells.csv", "matrix.csv", "errors.png", "anchoring.png",
                       "sensitivity.csv", "judgments.csv", "coverage.csv"}
    assert "heat_map.png" not in written  # by level only: no family x level map
    assert "<img" in (tmp_path / "out" / "results.html").read_text()

    md = _nmb("results", "--format", "md")
    doc = (ROOT / "docs" / "results.md").read_text()
    for start in ("| who | group | tasks | cases | people |", "| who | differential 1"):
        table = doc[doc.index(start):doc.index("\n\n", doc.index(start))]
        assert table in md.stdout  # the docs show tables generated from the demo, as it is now

    for args, message in ((("--by", "case"), "nmb: --by 'case' is not one of"),
                          (("--config", "99"), "nmb: no grader config with id 99"),
                          (("--k", "0"), "nmb: --k must be at least 1"),
                          (("--k", "1", "99999999999999999999"), "nmb: --k must be at most 1000")):
        bad = _nmb("results", *args)
        assert bad.returncode == 2 and bad.stderr.startswith(message), bad.stderr
        assert len(bad.stderr.strip().splitlines()) == 1


def test_self_grading_and_missing_answers_are_flagged_on_the_demo(demo_study: Path,
                                                                  tmp_path: Path) -> None:
    """The demo with its grader renamed into meridian's family, aurora-vl-7b's grades of one
    task lost (a failed grade) and cortex-lm-34b's responses to another never collected: the
    self-graded rows are marked in the tables, the CLI, the site and the exports; the missing
    answers count wrong (pass@1 by hand, over all 12 tasks) and are counted per model; the view
    "answered tasks only" stands on 11 tasks and says so; the exports reproduce both views."""
    from sqlalchemy import delete

    from db.engine import database_url
    from db.export import export as export_kind
    from db.models import Assignment, GraderConfig
    from results.fairness import MISSING
    from results.publish.export import judgments_csv
    from results.publish.site import study_version, write_site
    from results.publish.tables import tables
    from results.recompute import recompute
    from results.splits import SPLITS

    engine = engine_for(database_url())
    with Session(engine) as s:
        config = s.exec(select(GraderConfig)).one()
        config.model, config_id = "meridian-med-3", config.id
        assigned = set(s.exec(select(Assignment.response_id)).all())
        rows = s.exec(select(Response).where(Response.model == "cortex-lm-34b")).all()
        never = next(t for t in sorted({r.task_id for r in rows})
                     if not any(r.response_id in assigned for r in rows if r.task_id == t))
        gone = [r.response_id for r in rows if r.task_id == never]
        failed = s.exec(select(Response.response_id).where(
            Response.model == "aurora-vl-7b", Response.task_id == never)).all()
        s.exec(delete(GraderScore).where(GraderScore.response_id.in_(gone + failed)))
        s.exec(delete(CollectedResponse).where(CollectedResponse.response_id.in_(gone)))
        s.exec(delete(Response).where(Response.response_id.in_(gone)))
        s.commit()

    md = _nmb("results", "--by", "", "--k", "1", "5")
    assert md.returncode == 0, md.stderr
    assert ("> self-grading: the grader's model meridian-med-3 is the same family (meridian) as "
            "meridian-med-2") in md.stdout
    assert "> aurora-vl-7b: 5 of 60 answers missing (5 not graded), counted wrong" in md.stdout
    assert ("> cortex-lm-34b: 5 of 60 answers missing (5 without a response), counted wrong"
            in md.stdout)
    sections = {t.split("\n", 1)[0]: t for t in md.stdout.split("### ")[1:]}
    overall = sections["Overall, per model and human group"]
    assert "| missing | self-graded |" in overall and "| 5 | – |" in overall
    for title, table in sections.items():  # every row it touches, "all models" included
        if title.startswith("Cost and size"):
            continue  # what answering cost: no judgment in it
        for line in table.splitlines():
            if line.startswith("| meridian-med-2 |"):
                assert line.endswith("| same family (meridian) |"), title
            if line.startswith("| all models |"):
                assert line.endswith("| includes meridian-med-2 |"), title

    with Session(engine) as s:
        res = results.build(s, ks=(1, 5), splits=dict(SPLITS))
        answered = results.build(s, ks=(1, 5), answered_only=True)
        grades = grader_judgments(s, config_id=config_id)
        write_site(tmp_path / "site", res, study_version(s, res))
    by_who = {c.who: c for c in res.overall}
    for who in ("aurora-vl-7b", "cortex-lm-34b"):
        c = by_who[who]
        per_task = {t: [j.correct for j in grades if j.who == who and j.task_id == t]
                    for t in {j.task_id for j in grades}}
        by_hand = sum(sum(v) / 5 for v in per_task.values()) / 12
        assert (c.tasks, c.missing, c.min_samples) == (12, 5, 5)
        assert c.pass_at[1].value == round(by_hand, 4)
        a = next(x for x in answered.overall if x.who == who)
        assert (a.tasks, a.missing) == (11, 5) and a.pass_at[1].value == round(
            sum(sum(v) / 5 for v in per_task.values() if v) / 11, 4)
    assert by_who["meridian-med-2"].self_graded == "same family (meridian)"
    assert all(c.self_graded is None for c in res.overall if c.who != "meridian-med-2")
    assert any("answered tasks only" in t.note for t in tables(answered))
    assert any(f.startswith("view: answered tasks only") for f in answered.flags)
    site = (tmp_path / "site" / "index.html").read_text()
    assert "same family (meridian)" in site and "<button type=button>missing</button>" in site
    assert "counted wrong" in site
    site_json = json.loads((tmp_path / "site" / "leaderboard.json").read_text())
    assert site_json["self_graded"] == {"meridian-med-2": "same family (meridian)"}
    export_csv = judgments_csv(res)
    assert export_csv.count(",missing,") == 10 and "same family (meridian)" in export_csv

    exports = tmp_path / "exports"
    exports.mkdir()
    with Session(engine) as s:
        for kind in ("responses", "tasks", "grader-scores", "expert-scores"):
            export_kind(s, kind, fmt="csv", out=exports / f"{kind}.csv")
    for view in (False, True):
        with Session(engine) as s:
            built = results.build(s, answered_only=view)
        again = recompute(exports, config_id=config_id, answered_only=view)
        for a, b in zip(tables(built), tables(again), strict=True):
            assert (a.name, a.header, a.rows, a.note) == (b.name, b.header, b.rows, b.note)
        assert sum(j.source == MISSING for j in again.judgments) == (0 if view else 10)


def test_compare_gives_the_paired_difference_of_a_direct_loop(demo_study: Path) -> None:
    """The paper's headline comparison from one command, physicians - a model and a model -
    a model on the tasks both answered, against a loop over the same seeded resamples
    (`tests/stats/test_intervals.py`) on the default judge's judgments (the grader's)."""
    from db.engine import session
    from results.judgments import default_config
    from stats.resample import RESAMPLES, Side
    from tests.stats.test_intervals import _loop_difference

    pairs = [("physician", "meridian-med-2"), ("nimbus-vision-pro", "aurora-vl-7b")]
    out = _nmb("results", "--compare", *pairs[0], "--compare", *pairs[1], "--format", "json")
    assert out.returncode == 0, out.stderr
    got = {(c["a"], c["b"]): c["differences"] for c in json.loads(out.stdout)}
    with session() as s:
        judged = grader_judgments(s, config_id=default_config(s, None).id)
    for a, b in pairs:
        for measure, value in (("pass@1", lambda j: float(j.correct)),
                               ("rubric score", lambda j: j.overall)):
            sides = []
            for who in (a, b):
                js = sorted((j for j in judged if j.who == who),
                            key=lambda j: (j.task_id, j.person or "", j.response_id))
                sides.append(Side([j.task_id for j in js], [j.case_id for j in js],
                                  [value(j) for j in js],
                                  None if js[0].is_model else [j.person for j in js]))
            d, ci = _loop_difference(*sides, RESAMPLES, 0)
            row = got[a, b][measure]
            assert (row["tasks"], row["cases"]) == (12, 10)
            assert row["difference"]["value"] == round(d, 4)
            assert row["difference"]["ci"] == [round(q, 4) for q in ci]
    md = _nmb("results", "--compare", *pairs[0], "--compare", *pairs[1])
    doc = (ROOT / "docs" / "results.md").read_text()
    start = doc.index("| A | B | measure |")
    assert doc[start:doc.index("\n\n", start)] in md.stdout  # the docs' table, as it is now
    bad = _nmb("results", "--compare", "physicians", "meridian-med-2")
    assert bad.returncode == 2 and bad.stderr.startswith(
        "nmb: --compare: 'physicians' is not a model or human group with judged responses")
    assert len(bad.stderr.strip().splitlines()) == 1
    both = _nmb("results", "--compare", *pairs[0], "--layout", "leaderboard")
    assert both.returncode == 2 and both.stderr == (  # before: --compare won, silently
        "nmb: --compare prints the comparison instead of the tables: leave out --layout "
        "leaderboard (or --compare)\n") and not both.stdout


def test_every_format_renders_text_from_a_bundle_as_text(sqlite_url: str) -> None:
    from db.models import GraderRun
    from db.study.retire import retire
    from results.publish.export import as_text, render_html
    from results.publish.tables import tables

    hostile = "=1+2|<img src=x>_$\\textbf{x}"
    reason = "a typo\n# Results are void ![x](http://e.example/x.png)"  # typed to nmb retire
    with Session(engine_for(sqlite_url)) as s:
        make_study(s, n_tasks=3, experts=0)
        retire(s, kind="task", item_id="task2", reason=reason)
        config = store_config(s, GraderSettings(model="test-grader-2024-01-01"))
        run = GraderRun(config_id=config.id, items="all")
        s.add(run)
        s.flush()
        for r in s.exec(select(Response)).all():
            r.model = hostile if r.model == "model-alpha" else r.model
            s.add(GraderScore(config_id=config.id, response_id=r.response_id, run_id=run.id,
                              request_hash="x", criteria={}, correct_diagnosis=True,
                              error_tags=[], overall=0.5))
        s.commit()
        res = results.build(s, config_id=config.id)
    ts = tables(res)
    md, tex, csv = (as_text(res, f, ts) for f in ("md", "latex", "csv"))
    page = render_html(res, {}, ts)
    assert hostile not in md and "=1+2\\|\\<img src=x\\>\\_$\\\\textbf{x}" in md
    assert "<img src=x>" not in page and "&lt;img src=x&gt;" in page
    assert (r"=1+2\textbar{}\textless{}img src=x\textgreater{}\_\$\textbackslash{}textbf\{x\}"
            in tex)
    assert "'=1+2|<img src=x>" in csv and "\n=1+2" not in csv
    assert "a typo \\# Results are void \\!\\[x\\](http://e.example/x.png)" in md  # one line
    assert not [line for line in md.splitlines() if line.startswith("# ")]


def test_too_few_cases_is_shown_instead_of_an_interval_in_every_format() -> None:
    from results.publish.tables import Table, csv_text, fmt, html_table, latex, markdown
    from stats.resample import TOO_FEW, Estimate

    few, some = Estimate(0.5, None, TOO_FEW), Estimate(0.25, [0.1, 0.4])
    t = Table("cells", "Cells", ["who", "pass@1"], [["m", few], ["n", some]])
    assert fmt(few) == "0.500 (too few cases)" and fmt(some) == "0.250 [0.100, 0.400]"
    assert csv_text(t).splitlines() == ["who,pass@1,pass@1 low,pass@1 high",
                                        "m,0.5,too few cases,too few cases", "n,0.25,0.1,0.4"]
    assert r"0.50 {\footnotesize(too few cases)}" in latex([t])
    assert "<td>0.500 (too few cases)</td>" in html_table(t)
    header = SimpleNamespace(grader={"id": 1, "name": "g", "prompt_version": "p"}, flags=[],
                             judge="grader", judged_by="the grader")
    assert "| m | 0.500 (too few cases) |" in markdown([t], header)  # type: ignore[arg-type]
