"""What went wrong in the wrong responses: the error classes among them, by the table's judge,
and the experts' tags beside the grader's on the same responses.

A wrong response is one whose judgment says its final answer is not correct. Each wrong
response counts once: a response tagged with several classes splits its weight equally among
them, and one tagged with none counts as `untagged`, so the shares of one row add up to 1 (as
in the Neural-MedBench paper's breakdown of 100 wrong answers). `error_rows` uses one judge's
judgments and tags throughout (`nmb results --judge`). `compared_error_rows` compares the two
instruments only where both judged: the responses the grader graded and the experts scored,
and both judged wrong (a response only one of them judged wrong is counted as `disputed`, not
compared). Intervals: the results' rule (`stats.intervals`) on resamples in which the
responses of one case are drawn together (a cluster bootstrap over cases; Davison & Hinkley
1997, sec. 3.8), each share a ratio of resampled sums; none below five cases.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from results.judgments import ALL_MODELS, EXPERTS, GRADER, Judged, Judgment, groups_of
from stats.intervals import one_way_variance
from stats.resample import RESAMPLES, Estimate, bootstrap_weights

UNTAGGED = "untagged"


@dataclass
class ErrorRow:
    """The error classes among one group's wrong responses, as tagged by one source."""

    who: str
    group: str  # "model" or "human"
    source: str  # EXPERTS or GRADER
    wrong: int  # wrong responses this source tagged
    shares: dict[str, Estimate]  # class (and UNTAGGED) -> share of the wrong responses
    disputed: int | None = None  # compared rows: both judged, only one of them judged wrong


def allocation(tags: Sequence[str], classes: Sequence[str]) -> np.ndarray:
    """One response's weight over `classes` + [UNTAGGED]: split equally among its tags."""
    out = np.zeros(len(classes) + 1)
    known = [classes.index(t) for t in set(tags) if t in classes]
    if known:
        out[known] = 1 / len(known)
    else:
        out[-1] = 1.0
    return out


def shares(cases: Sequence[str], tagsets: Sequence[Sequence[str]], classes: Sequence[str], *,
           resamples: int = RESAMPLES, seed: int = 0) -> dict[str, Estimate]:
    """Each class's share of the wrong responses (`tagsets`, one per response, `cases` its
    case) with the results' interval from case-cluster resamples (`Estimate.share`)."""
    alloc = np.array([allocation(t, classes) for t in tagsets])
    weights = bootstrap_weights(len(cases), resamples, seed, clusters=np.array(cases))
    with np.errstate(invalid="ignore", divide="ignore"):
        resampled = (weights @ alloc) / weights.sum(axis=1, keepdims=True)
    point = alloc.mean(axis=0)
    n = len(set(cases))
    return {c: Estimate.share(point[i], one_way_variance(resampled[:, i], n), n - 1, cases=n,
                              answers=alloc[:, i])
            for i, c in enumerate([*classes, UNTAGGED])}


def _order(r: ErrorRow) -> tuple:
    return (r.group != "model", r.who == ALL_MODELS, r.who, r.source)


def error_rows(judgments: Iterable[Judgment], classes: Sequence[str],
               source: str = GRADER) -> list[ErrorRow]:
    """Per model, per human group and for all models together, the error classes among the
    responses `judgments` (one judge's, named `source`) say are wrong, by their own tags."""
    out = [ErrorRow(who, group, source, len(js),
                    shares([j.case for j in js], [j.error_tags for j in js], classes))
           for (who, group), js in groups_of(j for j in judgments if not j.correct).items()]
    return sorted(out, key=_order)


def compared_error_rows(judged: Iterable[Judged], classes: Sequence[str]) -> list[ErrorRow]:
    """The experts' and the grader's tags on the same responses: those both judged, and both
    judged wrong; per model, per human group and for all models."""
    both = [x for x in judged if x.grader is not None and x.experts is not None]
    wrong = {x.grader.response_id: x for x in both if not x.grader.correct and not x.experts.correct}
    disputed = groups_of(x.grader for x in both if x.grader.correct != x.experts.correct)
    out = []
    for (who, group), js in groups_of(wrong[rid].grader for rid in wrong).items():
        for source in (EXPERTS, GRADER):
            tags = [getattr(wrong[j.response_id], source).error_tags for j in js]
            out.append(ErrorRow(who, group, source, len(js),
                                shares([j.case for j in js], tags, classes),
                                len(disputed.get((who, group), []))))
    return sorted(out, key=_order)
