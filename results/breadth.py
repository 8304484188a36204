"""Breadth against depth: per broad benchmark (MMLU-Pro, DrVD-Bench, ...; `nmb breadth
import`), how a model's breadth score relates to its depth here, across the models that have
both, as the paper's claim "breadth is not depth" needs it.

Depth is each model's overall row of the results (`Results.overall`: pass@1, the mean over
tasks, and the mean rubric score), under the same judge and view as every other table. A
breadth score is matched to a results row by the exact model name (MODEL@CONDITION rows are
conditions, matched only when the CSV names them so). Per benchmark: Spearman's rho and
Kendall's tau-b between breadth and depth pass@1 (and depth rubric score), each with its
permutation p (exact up to 8 models) and its bootstrap interval over models
(`stats.rank_correlation`), the number of models, and each model's rank gap: breadth rank
minus depth rank (rank 1 = best on that axis; a positive gap: the model ranks better in depth
than in breadth).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from results.leaderboard import Cell
from stats.correlation import ranks
from stats.rank_correlation import RankCorrelation, rank_correlation


@dataclass
class BreadthScoreIn:
    """A stored breadth score, as the results read it (db.models.BreadthScore)."""

    model: str
    benchmark: str
    score: float
    n: int | None = None
    source: str | None = None


@dataclass
class BreadthRow:
    model: str
    breadth: float
    depth: float  # pass@1
    rubric: float | None
    breadth_rank: float
    depth_rank: float
    rank_gap: float  # breadth rank - depth rank
    source: str | None = None


@dataclass
class BreadthAxis:
    benchmark: str
    models: int
    pass_at_1: RankCorrelation
    rubric: RankCorrelation | None
    rows: list[BreadthRow]
    unmatched: list[str] = field(default_factory=list)  # models of the CSV with no depth row


def breadth_axes(overall: Iterable[Cell], scores: Iterable[BreadthScoreIn]) -> list[BreadthAxis]:
    """One `BreadthAxis` per benchmark, in name order (see the module's docstring)."""
    depth = {c.who: c for c in overall
             if c.group == "model" and 1 in c.pass_at and c.pass_at[1].value is not None}
    by_bench: dict[str, list[BreadthScoreIn]] = {}
    for b in scores:
        by_bench.setdefault(b.benchmark, []).append(b)
    out = []
    for bench, items in sorted(by_bench.items()):
        matched = sorted((b for b in items if b.model in depth), key=lambda b: b.model)
        x = np.array([b.score for b in matched], float)
        y = np.array([depth[b.model].pass_at[1].value for b in matched], float)
        rub = [depth[b.model].score.value for b in matched]
        rx, ry = (ranks(x, descending=True), ranks(y, descending=True)) if matched else ([], [])
        rows = [BreadthRow(b.model, b.score, float(yv), rv, float(bx), float(dy),
                           float(bx - dy), b.source)
                for b, yv, rv, bx, dy in zip(matched, y, rub, rx, ry, strict=True)]
        rubric = None
        if matched and all(v is not None for v in rub):
            rubric = rank_correlation(x, np.array(rub, float))
        out.append(BreadthAxis(bench, len(matched), rank_correlation(x, y), rubric,
                               sorted(rows, key=lambda r: (r.depth_rank, r.model)),
                               sorted({b.model for b in items} - set(depth))))
    return out
