"""A group's mean with a 95% percentile bootstrap interval: over tasks for a model, over people
and then their tasks for a human group.

A model answers every task (several samples each): its estimate is the mean over tasks of a
per-task value, and the interval resamples tasks (Efron & Tibshirani 1993, ch. 6 and 13).

A human group is two-stage data, people and the tasks each answered (one answer per task): the
estimate is the mean over people of each person's mean over their tasks, and the interval comes
from the two-stage bootstrap that draws people with replacement and then, for every person
drawn, that person's tasks with replacement (Davison & Hinkley 1997, sec. 3.8, strategy 2;
Field & Welsh 2007, JRSS B 69:369-390), so it carries the spread between people as well as
between tasks. The people of a group answer the same exam, a crossed design; redrawing tasks
within each person treats task difficulty as varying per person, which can make the interval
narrower than a crossed (pigeonhole) bootstrap would (Owen 2007, Ann. Appl. Stat. 1:386-411).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from calibration.agreement import bootstrap_weights, percentile_ci

RESAMPLES = 2000
DIGITS = 4


@dataclass(frozen=True)
class Estimate:
    """A point estimate with its 95% interval (None where undefined)."""

    value: float | None
    ci: list[float] | None = None

    @classmethod
    def of(cls, value: float, resampled: np.ndarray, units: int = 2) -> Estimate:
        """`value` and the percentile interval of its resamples; no interval from fewer than
        two resampling units (one task, or one person, has no spread to resample)."""
        ci = percentile_ci(resampled) if units >= 2 else None
        return cls(round(float(value), DIGITS),
                   None if ci is None else [round(q, DIGITS) for q in ci])


NONE = Estimate(None)


@lru_cache(maxsize=16)
def _task_weights(n: int, resamples: int, seed: int) -> np.ndarray:
    """`bootstrap_weights` shared by every measure of the same number of tasks (read-only)."""
    weights = bootstrap_weights(n, resamples, seed)
    weights.flags.writeable = False
    return weights


def over_tasks(per_task: np.ndarray, *, resamples: int = RESAMPLES, seed: int = 0) -> Estimate:
    """The mean of per-task values, tasks resampled."""
    per_task = np.asarray(per_task, dtype=float)
    if per_task.size == 0:
        return NONE
    weights = _task_weights(per_task.size, resamples, seed)
    return Estimate.of(per_task.mean(), weights @ per_task / per_task.size, per_task.size)


def _two_level_draws(person: np.ndarray, resamples: int,
                     seed: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """For each person, their rows and the rows' resampling counts (resamples, n_p): people
    drawn with replacement, then, for each person drawn, as many of their rows as they have,
    with replacement (a person drawn k times gets k x n_p draws among their n_p rows)."""
    _, unit = np.unique(np.asarray(person), return_inverse=True)
    n_people = int(unit.max()) + 1 if unit.size else 0
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, n_people, size=(resamples, n_people))
    picks += (np.arange(resamples) * n_people)[:, None]  # row b counts in b*P .. b*P+P-1
    copies = np.bincount(picks.ravel(), minlength=resamples * n_people).reshape(
        resamples, n_people)
    for p in range(n_people):
        rows = np.flatnonzero(unit == p)
        which = np.repeat(np.arange(resamples), copies[:, p] * rows.size) * rows.size
        which += rng.integers(0, rows.size, size=which.size)
        yield rows, np.bincount(which, minlength=resamples * rows.size).reshape(resamples,
                                                                                rows.size)


def two_level_weights(person: np.ndarray, *, resamples: int = RESAMPLES,
                      seed: int = 0) -> np.ndarray:
    """Resampling counts of the rows (one per answer), shape (resamples, rows), of the
    two-stage bootstrap (`_two_level_draws`)."""
    weights = np.zeros((resamples, np.asarray(person).size))
    for rows, counts in _two_level_draws(person, resamples, seed):
        weights[:, rows] = counts
    return weights


def person_means(person: np.ndarray, values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Per resample (a row of `weights`), the mean over people drawn of each one's mean:
    sum over people of (their weighted row sum / their row count), over the number of people."""
    person, values = np.asarray(person), np.asarray(values, dtype=float)
    _, unit = np.unique(person, return_inverse=True)
    n_rows = np.bincount(unit)
    return weights @ (values / n_rows[unit]) / n_rows.size


def over_people(person: np.ndarray, values: np.ndarray, *, resamples: int = RESAMPLES,
                seed: int = 0) -> Estimate:
    """The mean over people of each person's mean value, with the two-stage interval
    (`person_means` of `two_level_weights`, a person at a time)."""
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        return NONE
    n_people = len(set(person))
    resampled = np.zeros(resamples)
    for rows, counts in _two_level_draws(person, resamples, seed):
        resampled += counts @ values[rows] / rows.size
    point = person_means(person, values, np.ones((1, values.size)))[0]
    return Estimate.of(point, resampled / n_people, n_people)


def group_mean(tasks: Sequence[str], values: Sequence[float],
               people: Sequence[str | None] | None = None, *, resamples: int = RESAMPLES,
               seed: int = 0) -> Estimate:
    """A row's estimate of per-response values: without `people` (a model, or one person), the
    mean over tasks of each task's mean (`over_tasks`); with them (a human group), the mean over
    people of each person's mean (`over_people`; a response without a person is its own)."""
    if people is None:
        per_task: dict[str, list[float]] = defaultdict(list)
        for task, v in zip(tasks, values, strict=True):
            per_task[task].append(v)
        return over_tasks(np.array([sum(v) / len(v) for v in per_task.values()]),
                          resamples=resamples, seed=seed)
    who = np.array([p if p is not None else f"#{i}" for i, p in enumerate(people)], dtype=object)
    return over_people(who, np.array(values, dtype=float), resamples=resamples, seed=seed)
