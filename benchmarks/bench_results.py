"""nmb results' statistics at the scale of a large study, and the pigeonhole bootstrap against a
loop that draws people and tasks one resample at a time.

Study: 8 models x 900 tasks (3 families x 3 levels x 100) x 5 samples, and 2 human groups of
40 people answering 90 of the tasks each. Ours: `results.leaderboard.cells` per model and
group, overall and per family x level cell (pass@1, pass@5, top-1, top-5, rubric score, 2,000
resamples each). Baseline for the human interval: the pigeonhole bootstrap written as the
definition reads (per resample, draw people and tasks, then each drawn person's mean over the
drawn tasks they answered), on one group.
"""

import numpy as np

from benchmarks.timing import median_seconds
from results.judgments import Judgment
from results.leaderboard import cells
from stats.resample import RESAMPLES, over_people

FAMILIES, LEVELS = ("differential", "lesion", "rationale"), (1, 2, 3)
MODELS, TASKS, SAMPLES, PEOPLE, HUMAN_TASKS = 8, 900, 5, 40, 90


def judgments(seed: int = 0) -> list[Judgment]:
    rng = np.random.default_rng(seed)
    out = []
    for t in range(TASKS):
        family, level = FAMILIES[t % 3], LEVELS[(t // 3) % 3]
        rank = (lambda: int(rng.integers(0, 6))) if family == "differential" else (lambda: None)
        for m in range(MODELS):
            for _ in range(SAMPLES):
                out.append(Judgment(f"model-{m}", True, f"t{t}", family, level,
                                    bool(rng.random() < 0.5), float(rng.random()), rank=rank(),
                                    case_id=f"c{t // 3}"))
        if t < HUMAN_TASKS:
            for group in ("student", "physician"):
                for p in range(PEOPLE):
                    out.append(Judgment(group, False, f"t{t}", family, level,
                                        bool(rng.random() < 0.6), float(rng.random()),
                                        person=f"{group}-{p}", rank=rank(),
                                        case_id=f"c{t // 3}"))
    return out


def loop_pigeonhole(person: np.ndarray, task: np.ndarray, values: np.ndarray, resamples: int,
                    seed: int) -> np.ndarray:
    """The same bootstrap as a loop over resamples: draw people and tasks, then each drawn
    person's mean over the drawn tasks they answered."""
    rng = np.random.default_rng(seed)
    people, tasks = np.unique(person), np.unique(task)
    answers = {(p, t): v for p, t, v in zip(person, task, values, strict=True)}
    out = np.empty(resamples)
    for b in range(resamples):
        drawn_tasks = tasks[rng.integers(0, tasks.size, tasks.size)]
        means = []
        for p in people[rng.integers(0, people.size, people.size)]:
            kept = [answers[p, t] for t in drawn_tasks if (p, t) in answers]
            if kept:
                means.append(np.mean(kept))
        out[b] = np.mean(means)
    return out


def main() -> None:
    js = judgments()
    print(f"{len(js):,} judgments; {RESAMPLES} resamples per interval")
    overall = median_seconds(lambda: cells(js, ks=(1, 5)), repeat=3, warmup=1)
    by_cell = median_seconds(lambda: cells(js, ks=(1, 5), by=("family", "level")), repeat=3,
                             warmup=1)
    print(f"cells, overall (10 rows):            {overall:7.2f} s")
    print(f"cells, family x level (90 rows):     {by_cell:7.2f} s")
    group = [j for j in js if j.who == "student"]
    person = np.array([j.person for j in group], dtype=object)
    task = np.array([j.task_id for j in group], dtype=object)
    values = np.array([float(j.correct) for j in group])
    ours = median_seconds(lambda: over_people(person, task, values), repeat=5, warmup=1)
    loop = median_seconds(lambda: loop_pigeonhole(person, task, values, RESAMPLES, 0), repeat=1,
                          warmup=0)
    print(f"pigeonhole bootstrap, {PEOPLE} people x {HUMAN_TASKS} tasks: ours {ours * 1000:.1f} ms, "
          f"loop {loop * 1000:.1f} ms, ratio {loop / ours:.1f}x")
