"""What went wrong in the wrong responses: the error classes among them, from the experts' tags
and from the grader's, side by side.

A wrong response is one whose counted judgment (`results.judgments`) says its final answer
is not correct. Each wrong response counts once: a response tagged with several classes splits
its weight equally among them, and one tagged with none counts as `untagged`, so the shares of
one row add up to 1 (as in the Neural-MedBench paper's breakdown of 100 wrong answers). The
expert column uses the consensus tags of the wrong responses experts scored, the grader column
the grader's tags of the wrong responses it graded. Intervals: the results' rule
(`stats.intervals`) on resamples in which the responses of one case are drawn together (a
cluster bootstrap over cases; Davison & Hinkley 1997, sec. 3.8), each share a ratio of
resampled sums; none below five cases.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from results.judgments import EXPERTS, GRADER, Judgment
from stats.agreement import bootstrap_weights
from stats.intervals import one_way_variance
from stats.resample import RESAMPLES, Estimate

UNTAGGED = "untagged"
ALL_MODELS = "all models"


@dataclass
class ErrorRow:
    """The error classes among one group's wrong responses, as tagged by one source."""

    who: str
    group: str  # "model" or "human"
    source: str  # EXPERTS or GRADER
    wrong: int  # wrong responses this source tagged
    shares: dict[str, Estimate]  # class (and UNTAGGED) -> share of the wrong responses


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
    return {c: Estimate.share(point[i], one_way_variance(resampled[:, i], n), n - 1, cases=n)
            for i, c in enumerate([*classes, UNTAGGED])}


def error_rows(judgments: Iterable[Judgment], classes: Sequence[str]) -> list[ErrorRow]:
    """Per model, per human group and for all models together, from each source that tagged
    some of its wrong responses."""
    wrong = [j for j in judgments if not j.correct]
    groups: dict[tuple[str, str], list[Judgment]] = {}
    for j in sorted(wrong, key=lambda j: (not j.is_model, j.who, j.task_id, j.response_id)):
        group = "model" if j.is_model else "human"
        groups.setdefault((j.who, group), []).append(j)
        if j.is_model:
            groups.setdefault((ALL_MODELS, "model"), []).append(j)
    out = []
    for (who, group), js in groups.items():
        for source, tagsets in ((EXPERTS, [(j.case, j.expert_tags) for j in js]),
                                (GRADER, [(j.case, j.grader_tags) for j in js])):
            tagged = [(task, tags) for task, tags in tagsets if tags is not None]
            if tagged:
                out.append(ErrorRow(who, group, source, len(tagged),
                                    shares([t for t, _ in tagged], [g for _, g in tagged],
                                           classes)))
    return sorted(out, key=lambda r: (r.group != "model", r.who == ALL_MODELS, r.who, r.source))
