"""pass@k leaderboard from one grader config's correct-diagnosis judgments.

For a task with n graded samples of which c are judged correct, pass@k is the unbiased
estimator of Chen et al. 2021 ("Evaluating Large Language Models Trained on Code", eq. 1),
1 - C(n-c, k) / C(n, k), computed as a product so no large binomial is formed. A model's pass@k
is its mean over tasks, reported only when every task it answered has at least k graded samples
(so every k averages the same tasks). Human groups (physicians, students: one answer per person
and task) get pass@1 only: the share of correct answers per task, averaged over tasks. The mean
overall rubric score (0-1) is over all graded responses of the row.
"""

import math
from collections import defaultdict

import numpy as np
from sqlmodel import Session, select

from calibration.agreement import bootstrap_weights, percentile_ci
from calibration.grader_config import get_config
from db.models import GraderScore, Response, Task
from errors import UserError

BY = (None, "family", "level")
RESAMPLES = 2000


def pass_at_k(n: int, c: int, k: int) -> float:
    """Probability that at least one of k samples drawn without replacement from n, of which
    c are correct, is correct."""
    if not (0 <= c <= n and 1 <= k <= n):
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")
    if n - c < k:
        return 1.0
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


def leaderboard(s: Session, *, config_id: int, ks: tuple[int, ...] = (1,),
                by: str | None = None) -> list[dict]:
    """One row per model and human group (and per family or level with `by`), models first,
    each part sorted by pass@ks[0] (then mean overall score), best first."""
    if not ks or min(ks) < 1:
        raise UserError(f"--k must be at least 1, got {list(ks)}")
    if by not in BY:
        raise UserError(f"--by {by!r} is not one of family, level")
    get_config(s, config_id)
    graded = s.exec(select(Response.source, Response.model, Task.task_id, Task.family, Task.level,
                           GraderScore.correct_diagnosis, GraderScore.overall)
                    .join(GraderScore, GraderScore.response_id == Response.response_id)
                    .join(Task, Task.task_id == Response.task_id)
                    .where(GraderScore.config_id == config_id))
    groups: dict[tuple, dict[str, list[tuple[bool, float]]]] = defaultdict(lambda: defaultdict(list))
    for source, model, task_id, family, level, correct, overall in graded:
        who = model if source == "model" else source
        part = {None: None, "family": family, "level": level}[by]
        groups[(source == "model", who, part)][task_id].append((bool(correct), overall))
    rows = []
    for (is_model, who, part), tasks in groups.items():
        min_samples = min(len(v) for v in tasks.values())
        overall = [o for v in tasks.values() for _, o in v]
        row = {"who": who, "group": "model" if is_model else "human"}
        if by:
            row[by] = part
        row.update(tasks=len(tasks), min_samples=min_samples,
                   overall_mean=round(sum(overall) / len(overall), 4))
        weights = bootstrap_weights(len(tasks), RESAMPLES)
        for k in ks:
            row[f"pass@{k}"] = row[f"pass@{k} 95% CI"] = None
            if k <= min_samples and (is_model or k == 1):
                per_task = np.array([pass_at_k(len(v), sum(c for c, _ in v), k)
                                     for v in tasks.values()])
                means = weights @ per_task / len(per_task)
                row[f"pass@{k}"] = round(float(per_task.mean()), 4)
                row[f"pass@{k} 95% CI"] = [round(q, 4) for q in percentile_ci(means)]
        rows.append(row)
    first = f"pass@{ks[0]}"
    rows.sort(key=lambda r: (r["group"] != "model", str(r.get(by, "")),
                             -(r[first] if r[first] is not None else -1), -r["overall_mean"]))
    return rows
