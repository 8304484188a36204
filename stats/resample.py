"""A group's mean with a 95% percentile bootstrap interval: over tasks for a model, over people
and tasks together for a human group.

A model answers every task (several samples each): its estimate is the mean over tasks of a
per-task value, and the interval resamples tasks (Efron & Tibshirani 1993, ch. 6 and 13).

A human group's people answer the same exam, so its answers are crossed by person and task:
the estimate is the mean over people of each person's mean over their tasks, and the interval
comes from the pigeonhole bootstrap (Owen 2007, Ann. Appl. Stat. 1:386-411), which draws people
and tasks independently with replacement and keeps the answers of drawn people to drawn tasks
(as often as both were drawn). It carries the spread between people and between tasks, with
task difficulty shared by everyone who answered the task; Owen shows it is mildly conservative
(its variance includes the interaction term more than once), where redrawing tasks within each
person would understate the task term.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from stats.agreement import bootstrap_weights, percentile_ci

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


def pigeonhole(person: Sequence, task: Sequence, values: Sequence[float], *,
               resamples: int = RESAMPLES, seed: int = 0) -> tuple[float, np.ndarray, int]:
    """(the mean over people of each person's mean value, its pigeonhole resamples, the number
    of people); one value per answer. In a resample a person's mean is over the drawn copies of
    the tasks they answered, and a drawn person none of whose tasks was drawn is left out."""
    _, p = np.unique(np.asarray(person, dtype=object), return_inverse=True)
    _, t = np.unique(np.asarray(task, dtype=object), return_inverse=True)
    total = np.zeros((p.max() + 1, t.max() + 1))
    answered = np.zeros_like(total)
    np.add.at(total, (p, t), np.asarray(values, dtype=float))
    np.add.at(answered, (p, t), 1.0)
    rng = np.random.default_rng(seed)
    people = bootstrap_weights(total.shape[0], resamples, rng)
    tasks = bootstrap_weights(total.shape[1], resamples, rng)
    sums, counts = tasks @ total.T, tasks @ answered.T  # (resamples, people)
    drawn = people * (counts > 0)
    means = np.divide(sums, counts, out=np.zeros_like(sums), where=counts > 0)
    with np.errstate(invalid="ignore"):  # no drawn person answered a drawn task: NaN, left out
        resampled = (drawn * means).sum(axis=1) / drawn.sum(axis=1)
    return float(np.mean(total.sum(axis=1) / answered.sum(axis=1))), resampled, total.shape[0]


def over_people(person: Sequence, task: Sequence, values: Sequence[float], *,
                resamples: int = RESAMPLES, seed: int = 0) -> Estimate:
    """The mean over people of each person's mean value, with the pigeonhole interval."""
    if len(values) == 0:
        return NONE
    point, resampled, n_people = pigeonhole(person, task, values, resamples=resamples, seed=seed)
    return Estimate.of(point, resampled, n_people)


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
    who = [p if p is not None else f"#{i}" for i, p in enumerate(people)]
    return over_people(who, tasks, values, resamples=resamples, seed=seed)
