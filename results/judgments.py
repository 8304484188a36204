"""Which judgment of a response counts: the experts' consensus where experts scored it, the
grader's grade otherwise.

Consensus of the submitted expert scores of one response (any number of experts):
- correct: a strict majority of the experts judged the final answer correct; a tie (e.g. one
  of two experts) counts as not correct, so a split panel never raises pass@k;
- overall: the mean of the experts' overall scores (0-1);
- error tags: the classes a strict majority of the experts tagged (a tie: not tagged).
- stage judgments (multi-turn items): per answer but the last, a strict majority of the experts
  who judged that answer said correct (a tie: not correct; nobody judged it: unknown).
The rank of the reference diagnosis comes from the grader alone (the expert's form does not ask
for it), and so does whether the leading diagnosis changed between two answers (a property of
the text, which the grader reads off; experts judge only correctness).

One definition of the final answer: a multi-turn response's final answer is its last answer,
and its judgment is the response's correct-diagnosis judgment, the one pass@1 counts. A
judgment's `stages` therefore end with that judgment; the grader's own judgment of its last
stage is kept apart (`last_stage`) so that a grade whose two judgments of the final answer
contradict each other is flagged (`results.anchoring.final_answer_conflicts`), never silently
used. Every judgment names its `source`, so each table can say how many responses each source
decided.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

from sqlmodel import Session, select

from db.models import Assignment, ExpertScore, GraderConfig, GraderScore, Response, Task, User
from errors import UserError
from grading.config import get_config
from rubric.render import Asked

GRADER, EXPERTS = "grader", "experts"
ABSENT = 0  # rank of a reference diagnosis that is not in the response's differential


@dataclass(frozen=True)
class Judgment:
    """One judged response: who answered, the task's cell, and the judgment that counts."""

    who: str  # the model, or the human group ("physician", "student")
    is_model: bool
    task_id: str
    family: str
    level: int
    correct: bool
    overall: float
    error_tags: tuple[str, ...] = ()
    person: str | None = None  # a human's pseudonym (or name); None for models
    source: str = GRADER  # whose judgment counts: GRADER or EXPERTS
    rank: int | None = None  # of the reference diagnosis: 1 leading, ABSENT, None not asked
    # (correct, changed) per answer, first first; None where not judged; the last answer's
    # correct is `correct` (the one final answer); () for single-answer tasks or none given
    stages: tuple[tuple[bool | None, bool | None], ...] = ()
    last_stage: bool | None = None  # the grader's own judgment of the last answer, if given
    response_id: str = ""
    case_id: str = ""
    disconfirming: tuple[bool, ...] = ()  # the task's marks, one per revealed stage

    @property
    def case(self) -> str:
        """The case, the unit intervals resample (the task itself when the case is unknown)."""
        return self.case_id or f"task:{self.task_id}"


@dataclass(frozen=True)
class Consensus:
    correct: bool
    overall: float
    error_tags: tuple[str, ...]
    tie: bool  # the experts split evenly on the correct diagnosis


def consensus(scores: Sequence[tuple[bool, float, Sequence[str]]]) -> Consensus:
    """The experts' consensus of (correct, overall, error tags) scores of one response."""
    n = len(scores)
    if n == 0:
        raise ValueError("consensus of no scores")
    yes = sum(bool(c) for c, _, _ in scores)
    counts: dict[str, int] = defaultdict(int)
    for _, _, tags in scores:
        for t in set(tags):
            counts[t] += 1
    return Consensus(correct=2 * yes > n, overall=sum(o for _, o, _ in scores) / n,
                     error_tags=tuple(sorted(t for t, c in counts.items() if 2 * c > n)),
                     tie=2 * yes == n)


def grade_judgment(*, who: str, is_model: bool, task: Task, correct: bool, overall: float,
                   error_tags: Iterable[str], asked: Asked, rank: int | None,
                   stages: list[dict] | None, person: str | None = None,
                   response_id: str = "") -> Judgment:
    """A grade as a judgment (the study's or a package's): the rank counts only where the
    prompt asked for it (a null rank is then ABSENT), the stages where it gave them (their last
    answer judged by `correct`, the grader's own last-stage judgment kept as `last_stage`)."""
    given = [(bool(x["correct"]), bool(x["changed"])) for x in stages or ()]
    return Judgment(who, is_model, task.task_id, task.family, task.level, bool(correct),
                    float(overall), tuple(error_tags or ()), person=person, source=GRADER,
                    rank=(rank or ABSENT) if asked.rank else None,
                    stages=final_answer(given, bool(correct)),
                    last_stage=given[-1][0] if given else None, response_id=response_id,
                    case_id=task.case_id or "", disconfirming=marks(task))


def final_answer(stages: Sequence[tuple[bool | None, bool | None]],
                 correct: bool) -> tuple[tuple[bool | None, bool | None], ...]:
    """Stage judgments whose last answer is judged `correct` (the response's judgment): the one
    definition of the final answer that pass@1 and the anchoring table share."""
    if not stages:
        return ()
    *before, (_, changed) = stages
    return (*before, (correct, changed))


def marks(task: Task) -> tuple[bool, ...]:
    """The task's disconfirming marks, one per revealed stage (all False when none is marked)."""
    n = len(task.stages or [])
    given = list(getattr(task, "disconfirming", None) or [])
    return tuple(bool(x) for x in given) if len(given) == n else (False,) * n


ALL_MODELS = "all models"


def groups_of(js: Iterable[Judgment]) -> dict[tuple[str, str], list[Judgment]]:
    """The judgments by (who, "model" or "human"), models also together as ALL_MODELS; each
    list in (task, response) order."""
    groups: dict[tuple[str, str], list[Judgment]] = {}
    for j in sorted(js, key=lambda j: (not j.is_model, j.who, j.task_id, j.response_id)):
        group = "model" if j.is_model else "human"
        groups.setdefault((j.who, group), []).append(j)
        if j.is_model:
            groups.setdefault((ALL_MODELS, "model"), []).append(j)
    return groups


def pseudonym(user_id: int | None, name: str | None, reveal: bool) -> str | None:
    """A person as results show them: `user-<id>` (as exports do), or the name with `reveal`."""
    if user_id is None:
        return None
    return name if reveal and name else f"user-{user_id}"


def grader_judgments(s: Session, *, config_id: int, reveal: bool = False) -> list[Judgment]:
    """The config's grades as judgments (every source is the grader)."""
    config = get_config(s, config_id)
    rows = s.exec(select(Response.response_id, Response.source, Response.model,
                         Response.user_id, User.name, Task, GraderScore)
                  .join(GraderScore, GraderScore.response_id == Response.response_id)
                  .join(Task, Task.task_id == Response.task_id)
                  .join(User, User.id == Response.user_id, isouter=True)
                  .where(GraderScore.config_id == config_id))
    return [_from_grade(config, rid, source, model, pseudonym(uid, name, reveal), task, g)
            for rid, source, model, uid, name, task, g in rows]


def _from_grade(config: GraderConfig, rid: str, source: str, model: str | None,
                person: str | None, task: Task, g: GraderScore) -> Judgment:
    return grade_judgment(
        who=model if source == "model" else source, is_model=source == "model", task=task,
        correct=g.correct_diagnosis, overall=g.overall, error_tags=g.error_tags,
        asked=Asked.of(config.prompt_version, task.family, len(task.stages or [])),
        rank=g.diagnosis_rank, stages=g.stages, person=person, response_id=rid)


Vote = tuple[bool, float, list[str], list[bool | None] | None]  # one expert's submitted score


def expert_scores(s: Session, leave_out: Collection[int] = ()) -> dict[str, list[Vote]]:
    """Every submitted expert score but those whose ids `leave_out` names (stale ones,
    db.study.revisions), by response: (correct, overall, error tags, stage judgments)."""
    out: dict[str, list[Vote]] = defaultdict(list)
    for sid, rid, correct, overall, tags, stage_correct in s.exec(
            select(ExpertScore.id, Assignment.response_id, ExpertScore.correct_diagnosis,
                   ExpertScore.overall, ExpertScore.error_tags, ExpertScore.stage_correct)
            .join(ExpertScore, ExpertScore.assignment_id == Assignment.id)
            .where(ExpertScore.status == "submitted")):
        if sid not in leave_out:
            out[rid].append((bool(correct), float(overall), list(tags or []), stage_correct))
    return out


def stage_consensus(votes: Sequence[list[bool | None] | None], n: int) -> list[bool | None]:
    """Per answer but the last (`n` of them), the experts' judgment: a strict majority of those
    who judged it said correct; a tie is not correct; nobody judged it: None."""
    out: list[bool | None] = []
    for i in range(n):
        given = [v[i] for v in votes if v and i < len(v) and v[i] is not None]
        out.append(None if not given else 2 * sum(given) > len(given))
    return out


def expert_judgment(*, who: str, is_model: bool, task: Task, votes: Sequence[Vote],
                    person: str | None, response_id: str,
                    grade: Judgment | None = None) -> tuple[Judgment, bool]:
    """The experts' consensus of one response as a judgment, and whether they tied on the
    correct diagnosis. On multi-turn tasks its stages are the experts' stage judgments, ending
    with their final judgment, and the grader's change flags where `grade` gives them."""
    c = consensus([v[:3] for v in votes])
    n = len(task.stages or [])
    stages: tuple = ()
    if n:
        given = [d for _, d in grade.stages] if grade else []
        changed = given if len(given) == n + 1 else [None] * (n + 1)
        correct = [*stage_consensus([v[3] for v in votes], n), c.correct]
        stages = tuple(zip(correct, changed, strict=True))
    return Judgment(who, is_model, task.task_id, task.family, task.level, c.correct, c.overall,
                    c.error_tags, person=person, source=EXPERTS, stages=stages,
                    response_id=response_id, case_id=task.case_id or "",
                    disconfirming=marks(task)), c.tie


@dataclass(frozen=True)
class Judged:
    """One response and each instrument's judgment of it (None: that one did not judge it)."""

    grader: Judgment | None
    experts: Judgment | None
    expert_tie: bool = False

    @property
    def any(self) -> Judgment:
        return self.experts or self.grader  # type: ignore[return-value]


def judge_responses(rows: Iterable[tuple[str, str, str | None, str | None, Task]],
                    grades: dict[str, Judgment], votes: dict[str, list[Vote]]) -> list[Judged]:
    """Every response that the grader or the experts judged, with both judgments; `rows` are
    (response_id, source, model, person, task) of the responses, `grades` the grader's
    judgments by response, `votes` the submitted expert scores by response."""
    out = []
    for rid, source, model, person, task in rows:
        grade = grades.get(rid)
        if rid not in votes:
            if grade is not None:
                out.append(Judged(grade, None))
            continue
        experts, tie = expert_judgment(
            who=model if source == "model" else source, is_model=source == "model", task=task,
            votes=votes[rid], person=person, response_id=rid, grade=grade)
        out.append(Judged(grade, experts, tie))
    return out


def judged_responses(s: Session, *, config_id: int, reveal: bool = False,
                     leave_out: Collection[int] = ()) -> list[Judged]:
    """Each judged response with the config's grade and the experts' consensus, as far as each
    exists (the expert scores `leave_out` names left out)."""
    grades = {j.response_id: j for j in grader_judgments(s, config_id=config_id, reveal=reveal)}
    votes = expert_scores(s, leave_out)
    rows = s.exec(select(Response.response_id, Response.source, Response.model,
                         Response.user_id, User.name, Task)
                  .join(Task, Task.task_id == Response.task_id)
                  .join(User, User.id == Response.user_id, isouter=True)
                  .order_by(Response.response_id))
    return judge_responses(((rid, source, model, pseudonym(uid, name, reveal), task)
                            for rid, source, model, uid, name, task in rows), grades, votes)


#: How the tables pick one judgment per response.
MIXED = f"{EXPERTS} where scored, else {GRADER}"
GRADER_ON_SUBSET = f"{GRADER} on the expert-scored subset"
JUDGES = (GRADER, EXPERTS)


def pick(judged: Iterable[Judged], how: str) -> list[Judgment]:
    """One judgment per response: GRADER (every graded response), EXPERTS (the expert-scored
    ones only), MIXED (experts where scored, else the grader) or GRADER_ON_SUBSET (the grader
    on the responses experts scored)."""
    if how == GRADER:
        return [j.grader for j in judged if j.grader]
    if how == EXPERTS:
        return [j.experts for j in judged if j.experts]
    if how == MIXED:
        return [j.any for j in judged]
    if how == GRADER_ON_SUBSET:
        return [j.grader for j in judged if j.grader and j.experts]
    raise ValueError(f"unknown judgment {how!r}")


def counted_judgments(s: Session, *, config_id: int,
                      reveal: bool = False) -> tuple[list[Judgment], int]:
    """The experts' consensus where experts scored a response, the config's grade otherwise;
    and the number of expert ties."""
    judged = judged_responses(s, config_id=config_id, reveal=reveal)
    return pick(judged, MIXED), sum(j.expert_tie for j in judged)


def default_config(s: Session, config_id: int | None) -> GraderConfig:
    """`config_id`'s config; without one, the newest validated config, else the newest config
    that has grades (results then say it is not validated)."""
    if config_id is not None:
        return get_config(s, config_id)
    validated = s.exec(select(GraderConfig).where(GraderConfig.validated_report_id.is_not(None))
                       .order_by(GraderConfig.id.desc())).first()
    if validated is not None:
        return validated
    graded = s.exec(select(GraderConfig).join(GraderScore, GraderScore.config_id == GraderConfig.id)
                    .order_by(GraderConfig.id.desc())).first()
    if graded is None:
        raise UserError("no grader config has grades yet (nmb grade), so nothing can be "
                        "reported; give --config N once one has")
    return graded
