"""What makes a comparison of models unfair, made visible on every row it touches: a model
graded by its own family, and answers a row does not stand on.

**Self-grading.** A grader favours text like its own (self-preference: Panickssery et al. 2024,
"LLM Evaluators Recognize and Favor Their Own Generations", NeurIPS; Zheng et al. 2023, "Judging
LLM-as-a-Judge", sec. 3.3). A model under test whose family (`model_family`) is the grader
config's model's family is marked "same model" or "same family (<family>)" on each of its rows.

**Coverage.** Under the grader (`nmb results --judge grader`, the default), a model answers
every task of the study as often as it answered the task it answered most (its samples per
task); a slot without a response (a failed collection, a task never asked) and a response the
grader did not grade (a failed or pending grade) is a *missing* answer. By default a missing
answer counts as wrong: correct false, rubric score 0, the reference not among the top k (where
asked), so pass@1, pass@k (Chen et al. 2021's estimator over all the task's samples, missing
ones failed), top-k and the rubric score all stand on the same tasks for every model. A human's
response the grader did not grade is missing too (people answer the exams they were given, so a
task a person was not given is not). `missing_judgments` builds these judgments; the view
"answered tasks only" leaves them out and says so. Under the experts' judge the tables cover the
expert-scored subset by design (flagged), so nothing is added.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from sqlmodel import Session, select

from db.models import Response, Task, User
from results.judgments import ABSENT, Judgment, marks, pseudonym
from rubric.render import Asked

MISSING = "missing"  # the source of a judgment that stands in for a missing answer
SAME_MODEL = "same model"


def model_family(name: str) -> str:
    """A model's family, by one deliberately wide rule (a false alarm costs less than an
    unmarked self-grade): lower-cased, the provider or organisation path dropped (everything up
    to the last "/"), then the first run of letters, i.e. the name before its first version
    token or separator. "gpt-4o", "gpt-4o-mini-2024-07-18" and "openai/gpt-4.1" are "gpt";
    "claude-3-5-sonnet" is "claude"; "Qwen2-VL-7B" is "qwen"; "o1-mini" and "o3" are "o". Names
    that begin with the same generic word ("model-a", "model-b") are one family too. A name
    without letters is its own family."""
    base = name.strip().lower().rsplit("/", 1)[-1]
    letters = re.search(r"[a-z]+", base)
    return letters.group(0) if letters else base


def self_grading(grader_model: str | None, model: str) -> str | None:
    """"same model" when `model` is the grader's model (case and provider path aside; a
    MODEL@CONDITION is its MODEL), "same family (<family>)" when they share `model_family`,
    else None."""
    if not grader_model:
        return None
    from db.study.model_cards import base_model

    model = base_model(model)
    g, m = (x.strip().lower().rsplit("/", 1)[-1] for x in (grader_model, model))
    if g == m:
        return SAME_MODEL
    family = model_family(model)
    return f"same family ({family})" if family == model_family(grader_model) else None


@dataclass(frozen=True)
class Answer:
    """A response as the results see it, judged or not."""

    response_id: str
    who: str  # the model, or the human group
    is_model: bool
    person: str | None
    task: Task


@dataclass
class Coverage:
    """What one model or human group should stand on, and what is missing."""

    who: str
    group: str  # "model" or "human"
    expected: int  # answers the row stands on when missing ones count as wrong
    missing: int  # of them, without the grader's judgment
    no_response: int  # missing: a task x sample slot of a model without a response
    not_graded: int  # missing: a response the grader did not grade


def _stand_in(who: str, is_model: bool, task: Task, response_id: str, person: str | None,
              prompt_version: str) -> Judgment:
    asked = Asked.of(prompt_version, task.family, len(task.stages or []))
    return Judgment(who, is_model, task.task_id, task.family, task.level, False, 0.0,
                    person=person, source=MISSING, rank=ABSENT if asked.rank else None,
                    response_id=response_id, case_id=task.case_id or "",
                    disconfirming=marks(task))


def missing_judgments(judged: Iterable[Judgment], answers: Sequence[Answer],
                      tasks: Sequence[Task], *, prompt_version: str
                      ) -> tuple[list[Judgment], list[Coverage]]:
    """The grader's missing answers as wrong judgments (source MISSING), and the coverage of
    each model and human group: a model's samples per task are the most responses it has on
    any task; every task of `tasks` short of them, and every response of `answers` that
    `judged` lacks, is missing. A slot without a response gets the id
    "missing:<model>:<task>:<n>"."""
    graded = {j.response_id for j in judged}
    out: list[Judgment] = []
    coverage: dict[tuple[str, str], Coverage] = {}
    by_model: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for a in answers:
        group = "model" if a.is_model else "human"
        row = coverage.setdefault((a.who, group), Coverage(a.who, group, 0, 0, 0, 0))
        row.expected += 1
        if a.is_model:
            by_model[a.who][a.task.task_id] += 1
        if a.response_id not in graded:
            row.missing += 1
            row.not_graded += 1
            out.append(_stand_in(a.who, a.is_model, a.task, a.response_id, a.person,
                                 prompt_version))
    for model, per_task in by_model.items():
        samples = max(per_task.values())
        row = coverage[(model, "model")]
        for task in tasks:
            for n in range(per_task.get(task.task_id, 0), samples):
                row.expected += 1
                row.missing += 1
                row.no_response += 1
                out.append(_stand_in(model, True, task, f"missing:{model}:{task.task_id}:{n}",
                                     None, prompt_version))
    rows = sorted(coverage.values(), key=lambda c: (c.group != "model", c.who))
    return sorted(out, key=lambda j: j.response_id), rows


def coverage_flag(c: Coverage, *, answered_only: bool) -> str:
    """The flag line of a row with missing answers, e.g. "m: 3 of 200 answers missing (...),
    counted wrong"."""
    why = ", ".join(part for part in (
        f"{c.no_response} without a response" if c.no_response else "",
        f"{c.not_graded} not graded" if c.not_graded else "") if part)
    how = ("left out: this view (answered tasks only) ranks it on the rest" if answered_only
           else "counted wrong")
    return f"{c.who}: {c.missing} of {c.expected} answers missing ({why}), {how}"


def answers(s: Session, *, reveal: bool = False) -> list[Answer]:
    """Every response of the study, judged or not (what `results.fairness` counts)."""
    rows = s.exec(select(Response.response_id, Response.source, Response.model,
                         Response.user_id, User.name, Task)
                  .join(Task, Task.task_id == Response.task_id)
                  .join(User, User.id == Response.user_id, isouter=True)
                  .order_by(Response.response_id))
    return [Answer(rid, model if source == "model" else source, source == "model",
                   pseudonym(uid, name, reveal), task)
            for rid, source, model, uid, name, task in rows]
