"""Breadth scores: each model's published score on broad benchmarks (MMLU-Pro, DrVD-Bench,
...), brought in from a CSV (`nmb breadth import FILE`, /results) so the results can set the
model's breadth beside its depth here (results.breadth).

Columns `model`, `benchmark`, `score` and optional `n` (items the score stands on) and `source`
(a citation or address, kept as text). A score is a finite number of magnitude at most 10^6
(an accuracy in % or as a fraction, an Elo rating: rank correlations need only its order).
Every row is checked before anything is written; a (model, benchmark) already stored is
replaced; one transaction, one audit row (action "breadth-import").
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sqlmodel import Session, select

from db.audit import record
from db.models import BreadthScore, utcnow
from db.sources.csv_table import Rows, parse_number, shown
from db.text_limits import MODEL_NAME, model_name_problem
from errors import counted

MAX_SCORE = 1e6
MAX_N = 10**9
SOURCE = 1_000


@dataclass
class BreadthImported:
    file: str
    scores: int
    models: int
    benchmarks: list[str]
    replaced: int
    dry_run: bool = False

    def __str__(self) -> str:
        verb = "would import" if self.dry_run else "imported"
        return (f"{self.file}: {verb} {counted(self.scores, 'breadth score')} of "
                f"{counted(self.models, 'model')} on {', '.join(self.benchmarks)} "
                f"({self.replaced} replacing earlier ones)")


def import_breadth(s: Session, path: Path, *, actor: str | None = None,
                   dry_run: bool = False) -> BreadthImported:
    """The file's breadth scores, checked, then stored (see the module's docstring)."""
    table = Rows(path, ("model", "benchmark", "score"), ("n", "source"))
    rows: dict[tuple[str, str], dict] = {}
    for line, row in table.rows:
        for column in ("model", "benchmark"):
            if why := model_name_problem(row[column], MODEL_NAME):
                raise table.refuse(line, column, f"{shown(row[column])} {why}")
        try:
            score = parse_number(row["score"], least=-MAX_SCORE, most=MAX_SCORE)
        except ValueError as e:
            raise table.refuse(line, "score", str(e)) from None
        n = None
        if row.get("n"):
            if not row["n"].isdigit() or not 1 <= int(row["n"]) <= MAX_N:
                raise table.refuse(line, "n", f"{shown(row['n'])} is not a whole number from 1 "
                                   f"to {MAX_N:,}")
            n = int(row["n"])
        source = row.get("source") or None
        if source is not None and not source.isprintable():
            raise table.refuse(line, "source", "holds a character that is not printable")
        key = (row["model"], row["benchmark"])
        if key in rows:
            raise table.refuse(line, "benchmark", f"{shown(key[1])} of model {shown(key[0])} is "
                               "on an earlier line too")
        rows[key] = {"model": key[0], "benchmark": key[1], "score": score, "n": n,
                     "source": source}
    stored = {(b.model, b.benchmark): b for b in s.exec(
        select(BreadthScore).where(BreadthScore.model.in_({m for m, _ in rows})))}
    summary = BreadthImported(table.name, len(rows), len({m for m, _ in rows}),
                              sorted({b for _, b in rows}), sum(k in stored for k in rows),
                              dry_run)
    if dry_run:
        return summary
    now = utcnow()
    for key, values in rows.items():
        row_ = stored.get(key) or BreadthScore(model=key[0], benchmark=key[1], score=0.0)
        for k, v in values.items():
            setattr(row_, k, v)
        row_.imported_by, row_.imported_at = actor, now
        s.add(row_)
    record(s, "breadth-import", actor=actor, file=path.name, scores=len(rows),
           benchmarks=summary.benchmarks, replaced=summary.replaced)
    s.commit()
    return summary


def breadth_scores(s: Session) -> list[BreadthScore]:
    """Every stored breadth score, by benchmark and model."""
    return list(s.exec(select(BreadthScore).order_by(BreadthScore.benchmark, BreadthScore.model)))
