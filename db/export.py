"""`nmb export`: responses, tasks, expert scores, grader scores, exam answers and the long
agreement table (item, rater, score: what `nmb agreement` reads) as CSV, JSONL or Parquet.

Every column a results table is computed from is exported (the grader's `diagnosis_rank` and
stage judgments, the experts' stage judgments, the tasks' disconfirming marks), so `nmb
results` can be recomputed from exports alone (`results.recompute`, docs/results.md).

Exports are for admins and scripts, and the one place where model names and blind codes
meet. Rows recorded on a retired item are marked `retired`; judgments and answers made against
an earlier revision of their case or task (db.study.revisions) are marked `stale`; rows of a
practice task (db.study.practice: never counted) are marked `practice`, and the agreement table
leaves them out (it is what `nmb agreement` counts). Raters and
examinees appear as pseudonyms (`rater-<user id>`, `user-<user id>`) unless
`reveal_raters`. Nested values (criteria, turns, tags, usage) are JSON text in CSV, JSON in JSONL;
in Parquet, lists stay lists and objects become JSON text.

CSV is opened in spreadsheets, which run a cell starting with `=`, `+`, `-`, `@`, tab or
carriage return as a formula (`=HYPERLINK(...)`, `=cmd|...`), and skip blanks and control
characters before the `=` (`"  =1+1"`): such text cells get a leading single quote (the OWASP
"CSV injection" rule, `neutralise`, which every CSV writer of the project uses). Only text is
touched: numbers stay numbers, so a negative score is still `-1.5`. JSONL and Parquet keep the
text as it is.
"""

import json
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd
from sqlalchemy.orm import aliased
from sqlmodel import Session, select

from db.files import replacing
from db.models import (
    Assignment,
    CalibrationItem,
    CollectedResponse,
    Exam,
    ExamAttempt,
    ExpertScore,
    GraderConfig,
    GraderScore,
    Response,
    StageAnswer,
    Task,
    User,
)
from db.study.practice import practice_responses, practice_tasks
from db.study.retire import taken_out
from db.study.revisions import Windows, windows
from errors import UserError

FORMATS = ("csv", "jsonl", "parquet")
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
#: What starts a formula after leading blanks and control characters (full-width forms too).
FORMULA_CHARS = frozenset("=+-@\uff1d\uff0b\uff0d\uff20")


def _who(prefix: str, user_id: int | None, name: str | None, reveal: bool) -> str | None:
    if user_id is None:
        return None
    return name if reveal else f"{prefix}-{user_id}"


def _responses(s: Session, reveal: bool) -> list[dict[str, Any]]:
    rows = s.exec(
        select(Response, Task.case_id, Task.family, Task.level, User.name, CollectedResponse)
        .join(Task, Task.task_id == Response.task_id)
        .join(User, User.id == Response.user_id, isouter=True)
        .join(CollectedResponse, CollectedResponse.response_id == Response.response_id,
              isouter=True)
        .order_by(Response.task_id, Response.source, Response.model, Response.sample,
                  Response.response_id)
    ).all()
    out, w, practice = taken_out(s).responses, windows(s), practice_tasks(s)
    return [{
        "response_id": r.response_id, "task_id": r.task_id, "case_id": case_id,
        "family": family, "level": level, "source": r.source, "model": r.model,
        "condition": r.condition,
        "user": _who("user", r.user_id, name, reveal), "sample": r.sample, "text": r.text,
        "turns": r.turns, "usage": r.usage or (collected.usage() if collected else None),
        "blind_code": r.blind_code, "created_at": r.created_at,
        "retired": r.response_id in out, "stale": not w.response_counts(r.task_id, r.created_at),
        "practice": r.task_id in practice,
    } for r, case_id, family, level, name, collected in rows]


def _stale(w: Windows, r: Response, judged_at: datetime | None) -> bool:
    """A judgment made against an earlier revision of the response's task or case, or of a
    response made against one (db.study.revisions)."""
    return not (w.response_counts(r.task_id, r.created_at)
                and w.judgment_counts(r.task_id, judged_at))


def _expert_scores(s: Session, reveal: bool) -> list[dict[str, Any]]:
    rows = s.exec(
        select(ExpertScore, Assignment, Response, User.name)
        .join(Assignment, Assignment.id == ExpertScore.assignment_id)
        .join(Response, Response.response_id == Assignment.response_id)
        .join(User, User.id == Assignment.rater_id)
        .order_by(ExpertScore.id)
    ).all()
    out, w, practice = taken_out(s).responses, windows(s), practice_tasks(s)
    return [{
        "score_id": e.id, "response_id": r.response_id, "blind_code": r.blind_code,
        "task_id": r.task_id, "source": r.source, "model": r.model,
        "rater": _who("rater", a.rater_id, name, reveal), "design_id": a.design_id,
        "rubric_hash": e.rubric_hash, "status": e.status, "revision": e.revision,
        "criteria": e.criteria, "correct_diagnosis": e.correct_diagnosis,
        "stage_correct": e.stage_correct, "error_tags": e.error_tags, "comment": e.comment,
        "confidence": e.confidence,
        "overall": e.overall, "active_seconds": e.active_seconds, "synthetic": e.synthetic,
        "imported": e.imported, "submitted_at": e.submitted_at, "updated_at": e.updated_at,
        "retired": r.response_id in out, "stale": _stale(w, r, e.submitted_at),
        "practice": r.task_id in practice,
    } for e, a, r, name in rows]


def _grader_scores(s: Session, reveal: bool) -> list[dict[str, Any]]:
    rows = s.exec(
        select(GraderScore, GraderConfig, Response)
        .join(GraderConfig, GraderConfig.id == GraderScore.config_id)
        .join(Response, Response.response_id == GraderScore.response_id)
        .order_by(GraderScore.id)
    ).all()
    out, w, practice = taken_out(s), windows(s), practice_tasks(s)
    return [{
        "grade_id": g.id, "config_id": c.id, "config": c.name, "config_hash": c.config_hash,
        "grader_model": c.model, "prompt_version": c.prompt_version, "run_id": g.run_id,
        "response_id": r.response_id, "blind_code": r.blind_code, "task_id": r.task_id,
        "source": r.source, "model": r.model, "criteria": g.criteria,
        "correct_diagnosis": g.correct_diagnosis, "diagnosis_rank": g.diagnosis_rank,
        "stages": g.stages, "error_tags": g.error_tags, "justification": g.justification,
        "overall": g.overall,
        "model_returned": g.model_returned, "system_fingerprint": g.system_fingerprint,
        "prompt_tokens": g.prompt_tokens, "completion_tokens": g.completion_tokens,
        "latency_s": g.latency_s, "cost_usd": g.cost_usd, "created_at": g.created_at,
        "retired": r.response_id in out.responses or g.run_id in out.grader_runs,
        "stale": _stale(w, r, g.created_at), "practice": r.task_id in practice,
    } for g, c, r in rows]


def _tasks(s: Session, reveal: bool) -> list[dict[str, Any]]:
    out = taken_out(s).tasks
    return [{"task_id": t.task_id, "case_id": t.case_id, "family": t.family, "level": t.level,
             "n_stages": len(t.stages or []), "disconfirming": t.disconfirming,
             "retired": t.task_id in out, "practice": t.practice}
            for t in s.exec(select(Task).order_by(Task.task_id))]


def _exam_answers(s: Session, reveal: bool) -> list[dict[str, Any]]:
    examinee = aliased(User)
    rows = s.exec(
        select(StageAnswer, ExamAttempt, Exam.name, examinee.name, examinee.role)
        .join(ExamAttempt, ExamAttempt.id == StageAnswer.attempt_id)
        .join(Exam, Exam.id == ExamAttempt.exam_id)
        .join(examinee, examinee.id == ExamAttempt.user_id)
        .order_by(ExamAttempt.id, StageAnswer.task_id, StageAnswer.stage)
    ).all()
    out, w, practice = taken_out(s).tasks, windows(s), practice_tasks(s)
    return [{
        "exam": exam, "attempt_id": at.id, "user": _who("user", at.user_id, name, reveal),
        "role": role, "task_id": a.task_id, "stage": a.stage, "text": a.text,
        "seconds": a.seconds, "answered_at": a.answered_at, "started_at": at.started_at,
        "finished_at": at.finished_at, "retired": a.task_id in out,
        "stale": not w.response_counts(a.task_id, a.answered_at),
        "practice": a.task_id in practice,
    } for a, at, exam, name, role in rows]


def _agreement(s: Session, reveal: bool) -> list[dict[str, Any]]:
    """The long table `nmb agreement` reads: one row per submitted expert score and per grade
    (rater `grader-<config id>`), the overall score on 0-1, and the calibration part; none of
    a practice task (never counted: db.study.practice)."""
    part = dict(s.exec(select(CalibrationItem.response_id, CalibrationItem.part)).all())
    practice = practice_responses(s)
    experts = s.exec(
        select(ExpertScore.overall, Assignment.response_id, Assignment.rater_id, User.name)
        .join(Assignment, Assignment.id == ExpertScore.assignment_id)
        .join(User, User.id == Assignment.rater_id)
        .where(ExpertScore.status == "submitted", ExpertScore.overall.is_not(None))
        .order_by(Assignment.response_id, Assignment.rater_id)).all()
    grades = s.exec(select(GraderScore.overall, GraderScore.response_id, GraderScore.config_id)
                    .order_by(GraderScore.response_id, GraderScore.config_id)).all()
    return ([{"item": rid, "rater": _who("rater", uid, name, reveal), "score": overall,
              "part": part.get(rid)} for overall, rid, uid, name in experts
             if rid not in practice]
            + [{"item": rid, "rater": f"grader-{cid}", "score": overall, "part": part.get(rid)}
               for overall, rid, cid in grades if rid not in practice])


COLUMNS: dict[str, tuple[str, ...]] = {
    "responses": ("response_id", "task_id", "case_id", "family", "level", "source", "model",
                  "condition", "user", "sample", "text", "turns", "usage", "blind_code", "created_at",
                  "retired", "stale", "practice"),
    "tasks": ("task_id", "case_id", "family", "level", "n_stages", "disconfirming", "retired",
              "practice"),
    "expert-scores": ("score_id", "response_id", "blind_code", "task_id", "source", "model",
                      "rater", "design_id", "rubric_hash", "status", "revision", "criteria",
                      "correct_diagnosis", "stage_correct", "error_tags", "comment", "confidence", "overall",
                      "active_seconds", "synthetic", "imported", "submitted_at", "updated_at",
                      "retired", "stale", "practice"),
    "grader-scores": ("grade_id", "config_id", "config", "config_hash", "grader_model",
                      "prompt_version", "run_id", "response_id", "blind_code", "task_id",
                      "source", "model", "criteria", "correct_diagnosis", "diagnosis_rank",
                      "stages", "error_tags", "justification", "overall",
                      "model_returned", "system_fingerprint", "prompt_tokens",
                      "completion_tokens", "latency_s", "cost_usd", "created_at", "retired",
                      "stale", "practice"),
    "exam-answers": ("exam", "attempt_id", "user", "role", "task_id", "stage", "text", "seconds",
                     "answered_at", "started_at", "finished_at", "retired", "stale", "practice"),
    "agreement": ("item", "rater", "score", "part"),
}
KINDS: dict[str, Callable[[Session, bool], list[dict[str, Any]]]] = {
    "responses": _responses,
    "tasks": _tasks,
    "expert-scores": _expert_scores,
    "grader-scores": _grader_scores,
    "exam-answers": _exam_answers,
    "agreement": _agreement,
}


def _to_json(v: Any) -> Any:
    return json.dumps(v, ensure_ascii=False) if isinstance(v, dict | list) else v


def _first_visible(text: str) -> str:
    """The first character of `text` that is not a blank, control or format character."""
    return next((c for c in text if not c.isspace() and c.isprintable()), "")


def neutralise(v: Any) -> Any:
    """A text cell a spreadsheet would run as a formula, quoted ("'=1+1", "'  =1+1");
    anything else as is."""
    if isinstance(v, str) and (v.startswith(FORMULA_START) or _first_visible(v) in FORMULA_CHARS):
        return "'" + v
    return v


def _frame(rows: list[dict[str, Any]], columns: tuple[str, ...], fmt: str) -> pd.DataFrame:
    df = pd.DataFrame(rows, columns=list(columns))
    if fmt == "jsonl":
        return df
    nested = (dict, list) if fmt == "csv" else (dict,)
    for name in df.columns:
        if df[name].dtype == object and any(isinstance(v, nested) for v in df[name]):
            df[name] = df[name].map(_to_json)
        if fmt == "csv" and (df[name].dtype == object or isinstance(df[name].dtype, pd.StringDtype)):
            df[name] = df[name].map(neutralise)  # text columns only: numbers stay numbers
    return df


def _write(df: pd.DataFrame, fmt: str, out: Path) -> None:
    if fmt == "csv":  # RFC 4180 line ends: a CR or LF inside a cell then gets it quoted
        df.to_csv(out, index=False, lineterminator="\r\n")
    elif fmt == "jsonl":
        df.to_json(out, orient="records", lines=True, date_format="iso", force_ascii=False)
    else:
        df.to_parquet(out, index=False)


def export(s: Session, kind: str, *, fmt: str, out: Path, reveal_raters: bool = False) -> int:
    """Write every row of `kind` to `out` in format `fmt`; return the number of rows written.

    The file appears whole or not at all (written to a temporary name, then renamed).
    """
    if kind not in KINDS:
        raise UserError(f"unknown export kind {kind!r}; choose one of {', '.join(KINDS)}")
    if fmt not in FORMATS:
        raise UserError(f"unknown export format {fmt!r}; choose one of {', '.join(FORMATS)}")
    out = Path(out)
    if out.is_dir():
        raise UserError(f"cannot write {out}: it is a folder")
    rows = KINDS[kind](s, reveal_raters)
    df = _frame(rows, COLUMNS[kind], fmt)
    try:
        with replacing(out) as partial:
            _write(df, fmt, partial)
    except OSError as e:
        raise UserError(f"cannot write {out}: {e.strerror or e}") from None
    return len(df)
