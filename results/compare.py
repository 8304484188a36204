"""Paired differences: model A against model B, or a model against a human group (or two
groups), on the tasks both answered, as the paper's claims compare them ("physicians 35.5 % vs
MedGemma 18.3 %").

For each measure (pass@1: the share of correct final answers; the rubric score, 0-1) each side
is estimated as in the main tables (`results.leaderboard`: a model's mean over tasks of its
per-task mean, a human group's mean over people of each person's mean), restricted to the
tasks both sides answered, and the difference A - B gets the interval of
`stats.resample.paired`: the same cases drawn for both sides (a human side's people drawn
too), d +/- t sqrt(v) from the variance of the paired resamples (docs/results.md). Fewer than
`stats.intervals.MIN_CASES` common cases: no interval ("too few cases").

Multiplicity: the differences shown together (every measure of every pair asked for) are one
family; beside each unadjusted 95% interval, `adjust` sets the Holm-adjusted one (Holm 1979,
`stats.intervals.holm`) and both p-values. A difference without an interval is not counted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

from errors import UserError
from results.judgments import Judgment
from stats.intervals import holm
from stats.resample import DIGITS, RESAMPLES, Difference, Estimate, Side, paired

MEASURES: dict[str, Callable[[Judgment], float]] = {
    "pass@1": lambda j: float(j.correct),
    "rubric score": lambda j: j.overall,
}


@dataclass
class Comparison:
    """A - B on the tasks both answered, one `Difference` per measure."""

    a: str
    b: str
    a_group: str  # "model" or "human"
    b_group: str
    differences: dict[str, Difference]


def _side(js: Sequence[Judgment], value: Callable[[Judgment], float]) -> Side:
    return Side([j.task_id for j in js], [j.case for j in js], [value(j) for j in js],
                None if js[0].is_model else [j.person or f"#{j.response_id}" for j in js])


def compare(judgments: Iterable[Judgment], a: str, b: str, *, resamples: int = RESAMPLES,
            seed: int = 0) -> Comparison:
    """`a` - `b` (each a model or a human group, by name), every measure of `MEASURES`."""
    if a == b:
        raise UserError(f"--compare needs two different models or human groups, got {a!r} twice")
    by_who: dict[str, list[Judgment]] = {}
    for j in judgments:
        by_who.setdefault(j.who, []).append(j)
    for name in (a, b):
        if name not in by_who:
            raise UserError(f"--compare: {name!r} is not a model or human group with judged "
                            f"responses; choose from {', '.join(sorted(by_who))}")
    sides = {}
    for name in (a, b):
        sides[name] = sorted(by_who[name], key=lambda j: (j.task_id, j.person or "",
                                                          j.response_id))
    return Comparison(
        a, b, "model" if sides[a][0].is_model else "human",
        "model" if sides[b][0].is_model else "human",
        {m: paired(_side(sides[a], f), _side(sides[b], f), resamples=resamples, seed=seed)
         for m, f in MEASURES.items()})


def adjust(comparisons: list[Comparison]) -> list[Comparison]:
    """The comparisons with every difference's Holm-adjusted interval and p-values, the family
    being every difference that has an interval (`stats.intervals.holm`)."""
    family = [(i, m) for i, c in enumerate(comparisons) for m, d in c.differences.items()
              if d.se is not None and d.difference.ci is not None]
    adjusted = holm([(comparisons[i].differences[m].difference.value,
                      comparisons[i].differences[m].se, comparisons[i].differences[m].df)
                     for i, m in family])
    out = [replace(c, differences=dict(c.differences)) for c in comparisons]
    for (i, m), (ci, p, p_holm) in zip(family, adjusted, strict=True):
        d = out[i].differences[m]
        out[i].differences[m] = replace(
            d, holm=Estimate(d.difference.value, [round(q, DIGITS) for q in ci]),
            p=round(p, DIGITS), p_holm=round(p_holm, DIGITS))
    return out
