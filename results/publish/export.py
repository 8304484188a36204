"""`nmb results` output: the results in one format on stdout, and a folder with every format,
a self-contained HTML report (figures embedded, like the calibration report) and the PNGs."""

from __future__ import annotations

import base64
import json
from dataclasses import asdict
from pathlib import Path

from calibration.html import prepare_out
from calibration.terms import TERMS_NOT_RECORDED
from db.files import write_file
from errors import counted
from results.publish.leaderboard_layout import split_tables
from results.publish.tables import PAGES, Table, csv_text, latex, markdown, tables
from results.results import Results

FORMATS = ("json", "md", "csv", "latex")
STYLE = ("body{font-family:sans-serif;max-width:1200px;margin:2em auto}"
         "table{border-collapse:collapse;margin:1em 0;font-size:13px}td,th{border:1px solid #ccc;"
         "padding:3px 8px;text-align:right}td:first-child{text-align:left}.flag{color:#a60}"
         ".note{color:#555;font-size:12px}img{margin:8px;max-width:100%}")


def as_text(results: Results, fmt: str, ts: list[Table] | None = None) -> str:
    """The results in `fmt`: JSON (everything), Markdown or LaTeX (every table), CSV (the main
    table: per family x level cell, or overall without cells)."""
    ts = tables(results) if ts is None else ts
    if fmt == "json":
        return json.dumps(results.to_json(), indent=1)
    if fmt == "md":
        return markdown(ts, results)
    if fmt == "latex":
        return latex(ts)
    if fmt == "csv":
        return csv_text(next((t for t in ts if t.name == "cells"), ts[0]))
    raise ValueError(f"unknown format {fmt!r}")


def comparison_text(results: Results, fmt: str) -> str:
    """Only the paired differences (`nmb results --compare`), in `fmt`."""
    ts = [t for t in tables(results) if t.name == "compare"]
    if fmt == "json":
        return json.dumps([asdict(c) for c in results.comparisons], indent=1)
    return csv_text(ts[0]) if fmt == "csv" else as_text(results, fmt, ts)


def _validation(grader: dict) -> str:
    """The grader's validation in words, with its terms."""
    if not grader["validated"]:
        return "not validated"
    return f"validated under {grader.get('validation_terms') or TERMS_NOT_RECORDED}"


def render_html(results: Results, figures: dict[str, bytes], ts: list[Table]) -> str:
    return PAGES.get_template("results.html").render(
        title="Neural-MedBench results", style=STYLE, results=results, g=results.grader,
        validation=_validation(results.grader), tables=ts,
        judged=counted(results.sources[results.judge], "response"),
        ties=counted(results.expert_ties, "expert tie"),
        figures=[(name, base64.b64encode(data).decode()) for name, data in figures.items()])


JUDGMENT_COLUMNS = ["response_id", "who", "group", "person", "task_id", "case_id", "family",
                    "level", "judge", "correct", "overall", "diagnosis_rank", "error_tags",
                    "stages", "last_stage", "self_graded"]


def judgments_csv(results: Results) -> str:
    """One row per response the tables stand on: who answered, the task, the judge of the
    response and its judgment (stages as JSON [correct, changed] pairs, first answer first);
    a missing answer counted wrong has judge "missing" (results.fairness); a model graded by
    its own family is marked in `self_graded`."""
    rows = [[j.response_id, j.who, "model" if j.is_model else "human", j.person, j.task_id,
             j.case_id, j.family, j.level, j.source, j.correct, j.overall, j.rank,
             json.dumps(list(j.error_tags)), json.dumps([list(x) for x in j.stages]),
             j.last_stage, results.self_graded.get(j.who) if j.is_model else None]
            for j in results.judgments]
    return csv_text(Table("judgments", "Judgments", JUDGMENT_COLUMNS, rows))


def export(out: Path, results: Results, figures: dict[str, bytes]) -> list[Path]:
    """Write results.json, results.md, results.tex, one CSV per table (the split tables too,
    when the results have splits), judgments.csv (the judgment of every response the tables
    stand on), results.html and the figures into `out`."""
    prepare_out(out)
    ts = tables(results) + split_tables(results)
    files = {"results.json": as_text(results, "json", ts), "results.md": markdown(ts, results),
             "results.tex": latex(ts), "results.html": render_html(results, figures, ts),
             **{f"{t.name}.csv": csv_text(t) for t in ts},
             "judgments.csv": judgments_csv(results)}
    written = []
    for name, data in {**files, **{f"{k}.png": v for k, v in figures.items()}}.items():
        written.append(write_file(out / name, data))
    return written
