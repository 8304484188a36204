"""Synthetic students and physicians take the demo exam, so the results show human baselines.

Each one is a demo account (flagged `demo`, disabled once it has taken the exam: nobody logs
in as them) named `synthetic-student-N` / `synthetic-physician-N`. They answer every task of
the demo exam through the exam's own functions (`db.study.exams.answer_stage`, stage by
stage, then `finish`), with answers assembled from the same hand-written variants as the
fictional models' (each text says it is synthetic), drawn from a per-role mix scaled by a
per-person skill (demo.content.HUMAN_PROFILES, HUMAN_SKILLS). `take_exam` returns what each
answer was written to be, as `demo_truth` does for the models, so synthetic expert scores and
grades can follow it.
"""

from __future__ import annotations

import random

from sqlmodel import Session, select

from db.models import Exam, User
from db.study.exams import answer_stage, attempt_for, exam_tasks, finish
from db.users import add_user
from demo.bundle import compose, pick, variant_truth
from demo.content import HUMAN_PROFILES, HUMAN_SKILLS, TASKS

STYLES = ("prose", "impression")


def takers() -> list[tuple[str, str, float]]:
    """(name, role, skill) of every synthetic exam taker."""
    return [(f"synthetic-{role}-{i}", role, skill) for role, skills in HUMAN_SKILLS.items()
            for i, skill in enumerate(skills, 1)]


def _profile(role: str, skill: float) -> dict[str, float]:
    return {k: w * skill if k.startswith("correct") else w
            for k, w in HUMAN_PROFILES[role].items()}


def _answers(name: str, role: str, skill: float, task_ids: list[str],
             seed: int) -> list[tuple[str, str, list[str]]]:
    """(task, variant, [answer per stage]) of one person, the same for the same seed."""
    tasks = {t.task_id: t for t in TASKS}
    out = []
    for task_id in task_ids:
        rng = random.Random(f"{seed}|{name}|{task_id}")
        key = pick(_profile(role, skill), rng)
        text, turns = compose(tasks[task_id], key, STYLES, rng)
        out.append((task_id, key, [text, *turns]))
    return out


def take_exam(s: Session, *, exam: Exam, password: str, seed: int) -> dict[str, dict]:
    """Every synthetic taker's finished attempt at `exam` (taken now if not yet), and the truth
    of each resulting response id. Commits (the exam functions do)."""
    tasks = {t.task_id: t for t in TASKS}
    truth: dict[str, dict] = {}
    for name, role, skill in takers():
        user = s.exec(select(User).where(User.name == name)).first()
        if user is None:
            user = add_user(s, name=name, role=role, password=password, demo=True, actor="demo")
            s.flush()
        attempt = attempt_for(s, exam_id=exam.id, user_id=user.id)
        answers = _answers(name, role, skill, exam.task_ids, seed)
        for task_id, key, _ in answers:
            truth[f"human-{attempt.id}-{task_id}"] = variant_truth(tasks[task_id], key)
        if attempt.finished_at is None:  # (a demo load stopped half-way resumes here)
            user.disabled = False  # the exam's writes refuse a disabled account; the demo is
            s.add(user)  # loaded before the app serves it
            given = {t.task_id: len(t.answers) for t in exam_tasks(s, attempt=attempt)}
            for task_id, _, stages in answers:
                for text in stages[given[task_id]:]:
                    answer_stage(s, attempt=attempt, task_id=task_id, text=text, seconds=60.0)
            finish(s, attempt=attempt, actor="demo")
        user.disabled = True  # nobody logs in as them
        s.add(user)
        s.commit()
    return truth
