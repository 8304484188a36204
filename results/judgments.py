"""Which judgment of a response counts: the experts' consensus where experts scored it, the
grader's grade otherwise.

Consensus of the submitted expert scores of one response (any number of experts):
- correct: a strict majority of the experts judged the final answer correct; a tie (e.g. one
  of two experts) counts as not correct, so a split panel never raises pass@k;
- overall: the mean of the experts' overall scores (0-1);
- error tags: the classes a strict majority of the experts tagged (a tie: not tagged).
The rank of the reference diagnosis and the stage judgments come from the grader alone (the
expert's form does not ask for them). Every judgment names its `source`, so each table can say
how many responses each source decided.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

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
    stages: tuple[tuple[bool, bool], ...] = ()  # (correct, changed) per answer, first first
    expert_tags: tuple[str, ...] | None = None  # the experts' consensus tags, if scored
    grader_tags: tuple[str, ...] | None = None  # the grader's tags, if graded
    response_id: str = ""
    case_id: str = ""  # the task's case (the resampling unit of the intervals); "" = the task

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
    prompt asked for it (a null rank is then ABSENT), the stages where it gave them."""
    tags = tuple(error_tags or ())
    return Judgment(who, is_model, task.task_id, task.family, task.level, bool(correct),
                    float(overall), tags, person=person, source=GRADER,
                    rank=(rank or ABSENT) if asked.rank else None,
                    stages=tuple((bool(x["correct"]), bool(x["changed"])) for x in stages or ()),
                    grader_tags=tags, response_id=response_id, case_id=task.case_id or "")


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


def expert_scores(s: Session) -> dict[str, list[tuple[bool, float, list[str]]]]:
    """Every submitted expert score, by response: (correct, overall, error tags)."""
    out: dict[str, list[tuple[bool, float, list[str]]]] = defaultdict(list)
    for rid, correct, overall, tags in s.exec(
            select(Assignment.response_id, ExpertScore.correct_diagnosis, ExpertScore.overall,
                   ExpertScore.error_tags)
            .join(ExpertScore, ExpertScore.assignment_id == Assignment.id)
            .where(ExpertScore.status == "submitted")):
        out[rid].append((bool(correct), float(overall), list(tags or [])))
    return out


def counted_judgments(s: Session, *, config_id: int,
                      reveal: bool = False) -> tuple[list[Judgment], int]:
    """The judgment that counts for every judged response: the experts' consensus where
    experts scored it, the config's grade otherwise; and the number of expert ties."""
    graded = {j.response_id: j for j in grader_judgments(s, config_id=config_id, reveal=reveal)}
    scored = expert_scores(s)
    out, ties = [], 0
    for rid, j in graded.items():
        if rid not in scored:
            out.append(j)
            continue
        c = consensus(scored.pop(rid))
        ties += c.tie
        out.append(replace(j, correct=c.correct, overall=c.overall, error_tags=c.error_tags,
                           source=EXPERTS, expert_tags=c.error_tags))
    if scored:  # expert-scored, never graded by this config: the experts alone
        rows = s.exec(select(Response.response_id, Response.source, Response.model,
                             Response.user_id, User.name, Task)
                      .join(Task, Task.task_id == Response.task_id)
                      .join(User, User.id == Response.user_id, isouter=True)
                      .where(Response.response_id.in_(list(scored))))
        for rid, source, model, uid, name, task in rows:
            c = consensus(scored[rid])
            ties += c.tie
            out.append(Judgment(model if source == "model" else source, source == "model",
                                task.task_id, task.family, task.level, c.correct, c.overall,
                                c.error_tags, person=pseudonym(uid, name, reveal),
                                source=EXPERTS, expert_tags=c.error_tags, response_id=rid,
                                case_id=task.case_id))
    return out, ties


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
