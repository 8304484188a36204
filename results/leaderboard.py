"""pass@k, top-k and the mean rubric score per model and human group, from judgments.

For a task with n judged samples of which c are correct, pass@k is the unbiased estimator of
Chen et al. 2021 ("Evaluating Large Language Models Trained on Code", eq. 1),
1 - C(n-c, k) / C(n, k), computed as a product so no large binomial is formed. A model's pass@k
is its mean over tasks, reported only when every task it answered has at least k judged samples
(so every k averages the same tasks). Top-k differential accuracy is the share of responses
whose differential holds the reference diagnosis among its first k entries (the grader's
`diagnosis_rank`), on the differential tasks whose grader was asked for the rank; a model's is
the mean over tasks of its per-task share. Human groups (physicians, students: one answer per
person and task) get pass@1 and top-k as the mean over people of each person's share, the mean
rubric score (0-1) likewise; a model's is the mean over tasks of each task's mean score.
Intervals: `stats.resample` (cases resampled with their tasks for a model; people and cases
for a human group; none below `stats.intervals.MIN_CASES` cases). `cells` works on judgments
from anywhere: the study's grades (`leaderboard`), the counted judgments of `nmb results`, or
a package's grades (`nmb package grade`); `summarize` gives its rows as the dicts the
leaderboard and packages print.
"""

import math
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sqlmodel import Session, select

from db.models import Task
from errors import UserError, one_line
from grading.config import get_config
from results.fairness import MISSING, answers, missing_judgments, self_grading
from results.judgments import Judgment, grader_judgments
from stats import resample
from stats.resample import NONE, TOO_FEW, Estimate

__all__ = ["BY", "Cell", "Judgment", "cells", "display_rows", "leaderboard", "parse_by", "pass_at_k",
           "summarize", "top_k"]

BY = ("family", "level")
MAX_K = 1000  # as `nmb leaderboard --k` (and `nmb package grade --k`)
RESAMPLES = resample.RESAMPLES


def pass_at_k(n: int, c: int, k: int) -> float:
    """Probability that at least one of k samples drawn without replacement from n, of which
    c are correct, is correct."""
    if not (0 <= c <= n and 1 <= k <= n):
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")
    if n - c < k:
        return 1.0
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


def top_k(rank: int | None, k: int) -> float | None:
    """1.0 when the reference diagnosis is among the first k entries of the differential, 0.0
    when it is not, None when the rank was not asked for."""
    return None if rank is None else float(1 <= rank <= k)


def parse_by(by: str | None) -> tuple[str, ...]:
    """"family", "level", "family,level" (or None) as a tuple of cell keys."""
    keys = tuple(k.strip() for k in (by or "").split(",") if k.strip())
    if any(k not in BY for k in keys) or len(set(keys)) != len(keys):
        raise UserError(f"--by {by!r} is not one of family, level, family,level")
    return keys


@dataclass
class Cell:
    """One row of a results table: a model, a human group or one person, in one cell (`keys`:
    family and/or level, empty for overall; a person's also names their group as `role`)."""

    who: str
    group: str  # "model", "human" (a group of people) or "person"
    keys: dict[str, Any]
    tasks: int
    people: int | None
    min_samples: int
    score: Estimate
    pass_at: dict[int, Estimate]
    top: dict[int, Estimate]
    top_tasks: int  # tasks behind top-k (differential tasks whose rank was asked)
    wrong: int
    errors_among_wrong: dict[str, float]
    sources: dict[str, int] = field(default_factory=dict)  # responses decided by each source
    cases: int = 0  # the cases behind the estimates (the unit their intervals resample)
    bertscore: Estimate | None = None  # secondary similarity (results.bertscore), when asked
    missing: int = 0  # answers without the grader's judgment (results.fairness): counted wrong
    # in the default view, left out in "answered tasks only"
    self_graded: str | None = None  # "same model" / "same family (..)" as the grader's model

    def row(self) -> dict[str, Any]:
        """The row as the leaderboard and `nmb package grade` print it."""
        out: dict[str, Any] = {"who": self.who, "group": self.group, **self.keys,
                               "tasks": self.tasks, "cases": self.cases,
                               "people": self.people,
                               "min_samples": self.min_samples,
                               "overall_mean": self.score.value,
                               "overall_mean 95% CI": self.score.ci}
        for name, estimates in (("pass", self.pass_at), ("top", self.top)):
            for k, e in estimates.items():
                out[f"{name}@{k}"], out[f"{name}@{k} 95% CI"] = e.value, e.ci
        out.update({"top_tasks": self.top_tasks, "wrong": self.wrong,
                    "errors among wrong": self.errors_among_wrong, "sources": self.sources,
                    "missing": self.missing, "self-graded": self.self_graded})
        if self.bertscore is not None:
            out["bertscore"], out["bertscore 95% CI"] = self.bertscore.value, self.bertscore.ci
        return out


class _Rows:
    """The judgments of one row, and its estimator: over tasks (a model, one person) or over
    people and their tasks (a human group; an answer without a person is its own person)."""

    def __init__(self, js: list[Judgment], by_person: bool) -> None:
        self.by_person = by_person
        self.js = sorted(js, key=lambda j: (j.task_id, j.person or "", j.response_id))
        self.tasks: dict[str, list[Judgment]] = defaultdict(list)
        for j in self.js:
            self.tasks[j.task_id].append(j)

    def mean(self, value: Callable[[Judgment], float | None]) -> Estimate:
        """The row's estimate of a per-response value (responses where it is None left out)."""
        kept = [(j, v) for j in self.js if (v := value(j)) is not None]
        return resample.group_mean([j.task_id for j, _ in kept], [v for _, v in kept],
                                   [j.person for j, _ in kept] if self.by_person else None,
                                   cases=[j.case for j, _ in kept])

    def per_task(self, value: Callable[[list[Judgment]], float]) -> Estimate:
        """The mean over tasks of a per-task value (a model's pass@k), cases resampled."""
        return resample.over_cases(np.array([value(v) for v in self.tasks.values()]),
                                   [v[0].case for v in self.tasks.values()])


def _cell(who: str, group: str, keys: dict[str, Any], js: list[Judgment],
          ks: tuple[int, ...], bertscore: Mapping[str, float] | None = None) -> Cell:
    rows = _Rows(js, by_person=group == "human")
    min_samples = min(len(v) for v in rows.tasks.values())
    pass_at = {}
    for k in ks:
        if k > min_samples or (group != "model" and k > 1):
            pass_at[k] = NONE
        elif k == 1:
            pass_at[k] = rows.mean(lambda j: float(j.correct))
        else:
            pass_at[k] = rows.per_task(
                lambda v, k=k: pass_at_k(len(v), sum(j.correct for j in v), k))
    top = {k: rows.mean(lambda j, k=k: top_k(j.rank, k)) for k in ks}
    wrong = [j for j in rows.js if not j.correct and j.source != MISSING]  # judged wrong
    tags = sorted({t for j in wrong for t in j.error_tags})
    return Cell(
        who=who, group=group, keys=keys, tasks=len(rows.tasks),
        people=len({j.person for j in js}) if group != "model" else None,
        min_samples=min_samples, score=rows.mean(lambda j: j.overall), pass_at=pass_at,
        top=top, top_tasks=len({j.task_id for j in js if j.rank is not None}),
        wrong=len(wrong),
        errors_among_wrong={t: round(sum(t in j.error_tags for j in wrong) / len(wrong), 4)
                            for t in tags},
        sources=dict(sorted(Counter(j.source for j in js).items())),
        cases=len({j.case for j in js}), missing=sum(j.source == MISSING for j in js),
        bertscore=None if bertscore is None else rows.mean(lambda j: bertscore.get(j.response_id)))


def cells(rows: Iterable[Judgment], *, ks: tuple[int, ...] = (1,),
          by: tuple[str, ...] = (), people: bool = False,
          bertscore: Mapping[str, float] | None = None) -> list[Cell]:
    """One cell per model and human group (and per cell of `by`), models first, each part
    sorted by pass@ks[0] (then mean overall score), best first. With `people`, one cell per
    person instead of per human group (models as usual). With `bertscore` (response id ->
    BERTScore F1), each cell also estimates its mean BERTScore like the rubric score."""
    if not ks or min(ks) < 1:
        raise UserError(f"--k must be at least 1, got {list(ks)}")
    if max(ks) > MAX_K:
        raise UserError(f"--k must be at most {MAX_K}, got {one_line(str(list(ks)), 80)}")
    groups: dict[tuple, list[Judgment]] = defaultdict(list)
    for j in rows:
        group = "model" if j.is_model else ("person" if people else "human")
        keys = (("role", j.who),) if group == "person" else ()
        who = j.person if group == "person" and j.person is not None else j.who
        groups[(group, who, keys + tuple((k, getattr(j, k)) for k in by))].append(j)
    out = [_cell(who, group, dict(keys), js, ks, bertscore) for (group, who, keys), js in groups.items()]
    first = ks[0]

    def order(c: Cell) -> tuple:
        best = c.pass_at[first].value
        return (c.group != "model", tuple(str(v) for v in c.keys.values()),
                -(best if best is not None else -1), -(c.score.value or 0), c.who)

    return sorted(out, key=order)


def summarize(rows: Iterable[Judgment], *, ks: tuple[int, ...] = (1,),
              by: tuple[str, ...] = (), bertscore: Mapping[str, float] | None = None) -> list[dict]:
    """`cells` as rows: who, group, the cell keys, tasks, cases, people, min_samples, the mean
    overall score, pass@k and top@k with their 95% intervals, the tasks behind top-k, the error
    classes among the wrong responses (share of wrong responses tagged with each; a response
    may carry several) and the number of responses each source decided (and BERTScore, when
    given)."""
    return [c.row() for c in cells(rows, ks=ks, by=by, bertscore=bertscore)]


def leaderboard(s: Session, *, config_id: int, ks: tuple[int, ...] = (1,),
                by: str | None = None) -> list[dict]:
    """`summarize` of the config's grades, missing answers counted wrong and self-grading
    marked as in `nmb results` (`results.fairness`)."""
    config = get_config(s, config_id)
    grades = grader_judgments(s, config_id=config_id)
    missing, _ = missing_judgments(grades, answers(s), s.exec(select(Task)).all(),
                                   prompt_version=config.prompt_version)
    rows = cells(grades + missing, ks=ks, by=parse_by(by))
    for c in rows:
        c.self_graded = self_grading(config.model, c.who) if c.group == "model" else None
    return [c.row() for c in rows]


def display_rows(rows: list[dict]) -> list[dict[str, Any]]:
    """`summarize` rows for reading, one rule for every number: scores and rates (0-1, the
    rubric's mean) as text to 2 decimals, their 95% intervals as "[low, high]" to 2 decimals,
    shares of wrong responses as percentages to 1 decimal, counts as integers; a missing score
    or interval as "–", the missing interval of a score as "too few cases" (the only reason a
    score has none), a missing count as None."""
    def cell(key: str, value: Any, row: dict) -> Any:
        if key.endswith("95% CI"):
            if value is None:
                return TOO_FEW if row.get(key.removesuffix(" 95% CI")) is not None else "–"
            return f"[{value[0]:.2f}, {value[1]:.2f}]"
        if key == "errors among wrong":
            return ", ".join(f"{t.replace('_', ' ')} {100 * v:.1f}%" for t, v in value.items())
        if key == "sources":
            return ", ".join(f"{source} {n}" for source, n in value.items())
        if key == "overall_mean" or key.startswith(("pass@", "top@")):
            return "–" if value is None else f"{value:.2f}"
        return value

    return [{key: cell(key, value, row) for key, value in row.items()} for row in rows]
