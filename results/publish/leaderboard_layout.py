"""`nmb results --layout leaderboard`: the published leaderboard's layout, one table per split
(`results.splits`) with pass@k, BERTScore (secondary) and the rubric score with their 95%
intervals, models and human groups as rows. The numbers are the `Results` object's split cells;
this module only lays them out (and prints them in the formats of `results.publish.tables`)."""

from __future__ import annotations

import json

from results.publish.tables import (
    BERTSCORE,
    MISSING_COLUMN,
    SELF_GRADED,
    Table,
    bertscore_note,
    csv_text,
    latex,
    markdown,
)
from results.results import Results
from results.splits import Split


def columns(results: Results) -> list[str]:
    return ["who", "group", "tasks", "people", *(f"pass@{k}" for k in results.ks), BERTSCORE,
            "rubric score", MISSING_COLUMN, SELF_GRADED]


def _row(c) -> list:
    return [c.who, c.group, c.tasks, c.people, *c.pass_at.values(), c.bertscore, c.score,
            c.missing, c.self_graded]


def _note(results: Results, split: Split) -> str:
    levels = "+".join(str(lv) for lv in split.levels)
    similar = bertscore_note(results) or (f"{BERTSCORE}: not computed (give --bertscore-model "
                                          "DIR).")
    return (f"Tasks of level {levels}. Judgments: {results.judged_by}; rows stand on "
            f"{results.view}. Human groups answer each task once: pass@1 only. {similar}")


def split_tables(results: Results) -> list[Table]:
    """One table per split, in the splits' order."""
    return [Table(f"split-{sp.name}", f"{sp.title} (level {'+'.join(map(str, sp.levels))})",
                  columns(results), [_row(c) for c in sp.cells], _note(results, sp))
            for sp in results.splits]


def as_text(results: Results, fmt: str) -> str:
    """The split tables in `fmt`: Markdown, LaTeX, CSV (one table, a `split` column first) or
    JSON (the splits' cells and what BERTScore was computed with)."""
    ts = split_tables(results)
    if fmt == "md":
        return markdown(ts, results)
    if fmt == "latex":
        return latex(ts)
    if fmt == "csv":
        return csv_text(Table("leaderboard", "Leaderboard", ["split", *columns(results)],
                              [[t.name.removeprefix("split-"), *row] for t in ts for row in t.rows]))
    if fmt == "json":
        data = results.to_json()
        return json.dumps({"grader": data["grader"], "judged_by": data["judged_by"],
                           "view": results.view, "self_graded": data["self_graded"],
                           "coverage": data["coverage"], "ks": data["ks"], "flags": data["flags"],
                           "bertscore": data["bertscore"], "splits": data["splits"]}, indent=1)
    raise ValueError(f"unknown format {fmt!r}")
