"""pass@k leaderboard from one grader config's correct-diagnosis judgments.

For a task with n graded samples of which c are judged correct, pass@k is the unbiased
estimator of Chen et al. 2021 ("Evaluating Large Language Models Trained on Code", eq. 1),
1 - C(n-c, k) / C(n, k), computed as a product so no large binomial is formed. A model's pass@k
is its mean over tasks, reported only when every task it answered has at least k graded samples
(so every k averages the same tasks). Human groups (physicians, students: one answer per person
and task) get pass@1 only: the share of correct answers per task, averaged over tasks. The mean
overall rubric score (0-1) is the mean over tasks of each task's mean score. Intervals are
percentile bootstrap intervals over tasks (Efron & Tibshirani 1993, ch. 13). `summarize` works on
judgments from anywhere: the study's grades (`leaderboard`) or a package's (`nmb package grade`).
"""

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from sqlmodel import Session, select

from calibration.agreement import bootstrap_weights, percentile_ci
from calibration.grader_config import get_config
from db.models import GraderScore, Response, Task
from errors import UserError

BY = ("family", "level")
RESAMPLES = 2000


def pass_at_k(n: int, c: int, k: int) -> float:
    """Probability that at least one of k samples drawn without replacement from n, of which
    c are correct, is correct."""
    if not (0 <= c <= n and 1 <= k <= n):
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")
    if n - c < k:
        return 1.0
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


@dataclass(frozen=True)
class Judgment:
    """One judged response: who answered, the task's cell, and the judgment."""

    who: str  # the model, or the human group ("physician", "student")
    is_model: bool
    task_id: str
    family: str
    level: int
    correct: bool
    overall: float
    error_tags: tuple[str, ...] = ()


def judgments(s: Session, *, config_id: int) -> list[Judgment]:
    """The config's grades as judgments."""
    get_config(s, config_id)
    rows = s.exec(select(Response.source, Response.model, Task.task_id, Task.family, Task.level,
                         GraderScore.correct_diagnosis, GraderScore.overall,
                         GraderScore.error_tags)
                  .join(GraderScore, GraderScore.response_id == Response.response_id)
                  .join(Task, Task.task_id == Response.task_id)
                  .where(GraderScore.config_id == config_id))
    return [Judgment(model if source == "model" else source, source == "model", task_id, family,
                     level, bool(correct), overall, tuple(tags or ()))
            for source, model, task_id, family, level, correct, overall, tags in rows]


def parse_by(by: str | None) -> tuple[str, ...]:
    """"family", "level", "family,level" (or None) as a tuple of cell keys."""
    keys = tuple(k.strip() for k in (by or "").split(",") if k.strip())
    if any(k not in BY for k in keys) or len(set(keys)) != len(keys):
        raise UserError(f"--by {by!r} is not one of family, level, family,level")
    return keys


def summarize(rows: Iterable[Judgment], *, ks: tuple[int, ...] = (1,),
              by: tuple[str, ...] = ()) -> list[dict]:
    """One row per model and human group (and per cell of `by`), models first, each part sorted
    by pass@ks[0] (then mean overall score), best first. Each row: tasks, min_samples, the mean
    overall score with its 95% interval, pass@k with its interval (tasks resampled, percentile
    bootstrap), and the error classes among the wrong responses (share of wrong responses
    tagged with each class; a response may carry several)."""
    if not ks or min(ks) < 1:
        raise UserError(f"--k must be at least 1, got {list(ks)}")
    groups: dict[tuple, dict[str, list[Judgment]]] = defaultdict(lambda: defaultdict(list))
    for j in rows:
        cell = tuple(getattr(j, k) for k in by)
        groups[(j.is_model, j.who, cell)][j.task_id].append(j)
    out = []
    for (is_model, who, cell), by_task in groups.items():
        tasks = dict(sorted(by_task.items()))  # resampled in task order, whatever the input's
        min_samples = min(len(v) for v in tasks.values())
        weights = bootstrap_weights(len(tasks), RESAMPLES)
        per_task_score = np.array([np.mean([j.overall for j in v]) for v in tasks.values()])
        row: dict = {"who": who, "group": "model" if is_model else "human",
                     **dict(zip(by, cell, strict=True)), "tasks": len(tasks),
                     "min_samples": min_samples,
                     "overall_mean": round(float(per_task_score.mean()), 4),
                     "overall_mean 95% CI": _ci(weights @ per_task_score / len(tasks))}
        for k in ks:
            row[f"pass@{k}"] = row[f"pass@{k} 95% CI"] = None
            if k <= min_samples and (is_model or k == 1):
                per_task = np.array([pass_at_k(len(v), sum(j.correct for j in v), k)
                                     for v in tasks.values()])
                row[f"pass@{k}"] = round(float(per_task.mean()), 4)
                row[f"pass@{k} 95% CI"] = _ci(weights @ per_task / len(per_task))
        wrong = [j for v in tasks.values() for j in v if not j.correct]
        tags = sorted({t for j in wrong for t in j.error_tags})
        row["wrong"] = len(wrong)
        row["errors among wrong"] = {t: round(sum(t in j.error_tags for j in wrong) / len(wrong), 4)
                                     for t in tags}
        out.append(row)
    first = f"pass@{ks[0]}"
    out.sort(key=lambda r: (r["group"] != "model", tuple(str(r[k]) for k in by),
                            -(r[first] if r[first] is not None else -1), -r["overall_mean"]))
    return out


def _ci(resampled: np.ndarray) -> list[float] | None:
    ci = percentile_ci(resampled)
    return None if ci is None else [round(q, 4) for q in ci]


def leaderboard(s: Session, *, config_id: int, ks: tuple[int, ...] = (1,),
                by: str | None = None) -> list[dict]:
    """`summarize` of the config's grades."""
    return summarize(judgments(s, config_id=config_id), ks=ks, by=parse_by(by))
