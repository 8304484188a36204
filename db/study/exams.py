"""Exams: students and physicians answer the benchmark's tasks as the human baseline.

A multi-turn (level 3) task reveals its stages one at a time: stage k is shown only after
the answer to stage k-1 is recorded, and recorded answers cannot be changed afterwards, so
later information never leaks into an earlier answer. Nor into another task of the same
patient: a task's second stage is revealed only once the exam's tasks of its patient with
fewer stages are fully answered (`ExamTask.waiting_for`). A patient is a case, or the cases
linked as one (`Case.patient`: a Neural-MedBench case number in several release files), so
that what one case's later stage reveals is not known when the other case's task is answered.
A person answers a task once: a task they answered, or began, in another exam is not asked
again, nor one whose patient they saw more of there, a later stage or a reference answer in
a review (`ExamTask.elsewhere`). A finished attempt turns each fully answered task into a
`Response` (source = the user's role) that experts score blind.

What a taker sees is a data object without the reference answer (`ExamTask`); only after
finishing, and only in an exam opened with `review`, does `review_tasks` return the taker's
own answers beside the reference answers (`ReviewTask`), and not for a task whose case the
taker may still meet (or a case of its patient) in an exam not finished yet; the cases whose reference
answer it hands out are recorded (`ExamAttempt.reviewed_cases`), so that an exam opened later
does not ask their tasks. Neither ever holds another person's answers, a model's response, a
score or a mask.

An exam is closed by an admin (`close_exam`): it takes no new attempt and no new answer; what
was recorded stays, and a taker who began may still finish (their fully answered tasks
become responses). `exam_list` is the admin's view: each exam's state and each taker's
progress (no answer text).
"""

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import func
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, select

from db.audit import record
from db.bundle.importer import new_blind_codes
from db.busy import ANSWER_KEPT, EXAM_DRAFT_KEPT, FINISH_KEPT, person_write
from db.locks import for_share, for_update, take_turns
from db.models import Case, Exam, ExamAttempt, Response, StageAnswer, Task, User, utcnow
from db.queries import fetch_in
from db.raters.response_flags import flag_new
from db.study.cases import case_view, reference_fields
from db.study.practice import practice_tasks
from db.study.reference import has_reference
from db.study.retire import check_task_ids, retired, taken_out
from db.text_limits import ANSWER, NAME, check_length, model_name_problem
from errors import UserError


@dataclass
class ExamTask:
    """What the exam page may show for one task: no reference answer, no other answers."""

    task_id: str
    family: str
    level: int
    prompt: str
    revealed_stages: list[str]  # stages already revealed (one per recorded answer after the first)
    answers: list[str]
    n_stages: int  # answers expected: 1 + len(stages)
    case_title: str
    ehr: str
    scores: dict[str, float]
    series: list[tuple[str, Path]]
    # exam positions (1-based) of the unfinished tasks of the same patient (its case, or a
    # case linked to it) with fewer stages: while there are any, this task's next stage is
    # not revealed (`_waiting_for`)
    waiting_for: list[int] = field(default_factory=list)
    # the other exam in which the taker answered (or began) this task, or saw more of its case
    # (a later stage, or its reference answer in the review): not asked here
    elsewhere: str | None = None
    # the case's key slices, the slices a model under test is shown: the viewer opens there,
    # so a taker sees at least what a model sees
    key_slices: list[dict[str, Any]] = field(default_factory=list)
    # where the viewer opens the case (its hanging protocol or an admin's view)
    opening_view: dict[str, Any] | None = None
    practice: bool = False  # a practice task: first, answered as any other, never counted

    @property
    def answered(self) -> bool:
        """Every stage answered in this attempt."""
        return len(self.answers) >= self.n_stages

    @property
    def done(self) -> bool:
        """Nothing left to answer here: answered, or answered in another exam."""
        return self.answered or self.elsewhere is not None

    @property
    def answerable(self) -> bool:
        """Whether the page may ask for the next answer now (its stage is revealed)."""
        return not self.done and (not self.answers or not self.waiting_for)


@dataclass
class ReviewTask:
    """One task of a finished attempt, for its taker's review: every stage, the taker's own
    answers, and the reference answer as labelled fields (none when the case has none).

    `withheld`: the other exams, not finished by the taker, holding a task of this patient they
    have not answered; while there are any, the reference answer (the case's) and the stages
    the taker did not reach are left out (they may still answer that task, as the human
    baseline)."""

    task_id: str
    family: str
    level: int
    prompt: str
    stages: list[str]
    answers: list[str]
    case_title: str
    reference: list[tuple[str, str]]
    withheld: list[str] = field(default_factory=list)


def ensure_exam(s: Session, *, name: str, task_ids: list[str] | None = None,
                review: bool = False, actor: str | None = None) -> Exam:
    """The exam of that name, opened with `task_ids` (default: every task) if it is new;
    `review`: whether takers may read their answers beside the reference answers once they
    have finished (off by default, as a baseline study expects).

    Raises UserError for an unknown task, or for `task_ids` or `review` other than those of
    the existing exam of that name (an exam's tasks and settings never change once people may
    have taken it)."""
    if not name.strip():
        raise UserError("the exam needs a name")
    check_length("the exam name", name, NAME)
    if why := model_name_problem(name, NAME):  # shown in tables, lists and messages
        raise UserError(f"the exam name {why}")
    if task_ids is not None and (twice := next((t for t in task_ids
                                                if task_ids.count(t) > 1), None)):
        raise UserError(f"exam {name!r}: task {twice!r} is listed twice")
    take_turns(s, "exams")  # a second admin opening this name waits, then finds it
    exam = s.exec(select(Exam).where(Exam.name == name)).first()
    if task_ids is not None:
        known = set(s.exec(select(Task.task_id).where(Task.task_id.in_(task_ids))))
        missing = [t for t in task_ids if t not in known]
        if missing:
            raise UserError(f"exam {name!r}: unknown task{'s' if len(missing) > 1 else ''} "
                            f"{', '.join(map(repr, missing[:5]))}"
                            f"{f' and {len(missing) - 5} more' if len(missing) > 5 else ''}")
        if exam is not None and list(exam.task_ids) != list(task_ids):
            raise UserError(f"exam {name!r} exists with {len(exam.task_ids)} other tasks; an "
                            "exam's tasks do not change: open a new exam under another name")
    if exam is not None and exam.review != review:
        raise UserError(f"exam {name!r} exists with review {'on' if exam.review else 'off'}; "
                        "an exam's settings do not change: open a new exam under another name")
    if exam is None:
        if task_ids is None:
            out = taken_out(s).tasks  # a retired task is not asked in a new exam
            task_ids = [t for t in s.exec(select(Task.task_id).order_by(Task.task_id))
                        if t not in out]
        else:
            check_task_ids(s, task_ids, f"exam {name!r}")
        if not task_ids:
            raise UserError(f"exam {name!r} has no tasks")
        exam = Exam(name=name, task_ids=list(task_ids), review=review)
        s.add(exam)
        s.flush()
        record(s, "exam.add", actor=actor, exam=name, tasks=len(task_ids), review=review)
    return exam


Patient = tuple[str, str]  # ("case", case id) or ("patient", Case.patient)


def patients(s: Session, case_ids: Iterable[str]) -> dict[str, Patient]:
    """{case id: its patient}: the cases linked as one patient (`Case.patient`) share one;
    any other case is a patient of its own."""
    out: dict[str, Patient] = {cid: ("case", cid) for cid in case_ids}
    for cid, label in fetch_in(s, Case.case_id, out, Case.case_id, Case.patient):
        if label:
            out[cid] = ("patient", label)
    return out


def _exam_tasks_by_patient(s: Session, task_ids: list[str]) -> dict[Patient, list[Task]]:
    tasks = list(s.exec(select(Task).where(Task.task_id.in_(task_ids)).order_by(Task.task_id)))
    patient = patients(s, {t.case_id for t in tasks})
    out: dict[Patient, list[Task]] = {}
    for task in tasks:
        out.setdefault(patient[task.case_id], []).append(task)
    return out


def _listed(groups: list[str], noun: str) -> str:
    left = len(groups) - 3
    return "; ".join(groups[:3]) + (f"; {left} more {noun}{'s' if left > 1 else ''}"
                                    if left > 0 else "")


def staged_tasks_sharing_a_case(s: Session, task_ids: list[str]) -> str | None:
    """A one-line warning naming the cases (or the linked cases of one patient) of which two
    or more of `task_ids` reveal stages, or None. No order protects both: whichever task's
    later stages come first (a CSF result, a biopsy) are known when the other is answered,
    though a model answering it never gets them (`_waiting_for` protects a task without
    stages, not a second staged one). Put such tasks in separate exams."""
    shared = []
    for tasks in _exam_tasks_by_patient(s, task_ids).values():
        staged = [t for t in tasks if t.stages]
        if len(staged) > 1:
            cases = sorted({t.case_id for t in staged})
            where = (f"case {cases[0]!r}" if len(cases) == 1 else
                     f"cases {', '.join(map(repr, cases))} (one patient)")
            shared.append((cases, f"{where}: {', '.join(repr(t.task_id) for t in staged)}"))
    if not shared:
        return None
    named = _listed([text for _, text in sorted(shared)], "case")
    return (f"multi-turn tasks of one case in one exam ({named}): the stages one reveals "
            "are known when the other is answered; put them in separate exams")


def linked_cases_in_one_exam(s: Session, task_ids: list[str]) -> str | None:
    """A one-line warning naming the linked cases (one patient, `Case.patient`) of which
    `task_ids` hold tasks, or None. The exam holds a later stage of one back until the
    other's tasks are answered (`_waiting_for`), but a taker answers the second knowing the
    patient from the first, and a review of one hands out the other's answer: separate exams
    keep them apart."""
    linked = []
    for tasks in _exam_tasks_by_patient(s, task_ids).values():
        cases = sorted({t.case_id for t in tasks})
        if len(cases) > 1:
            linked.append(", ".join(map(repr, cases)))
    if not linked:
        return None
    return (f"tasks of linked cases (one patient) in one exam ({_listed(sorted(linked), 'patient')}): "
            "a later stage of one is revealed once the others' tasks are answered; put them "
            "in separate exams to ask each without the other")


def exam_warnings(s: Session, task_ids: list[str]) -> list[str]:
    """What `nmb exam add` and the admin page warn of for an exam of `task_ids`."""
    return [w for w in (staged_tasks_sharing_a_case(s, task_ids),
                        linked_cases_in_one_exam(s, task_ids)) if w]


def exams(s: Session) -> list[Exam]:
    return list(s.exec(select(Exam).order_by(Exam.name)))


def _exam_named(s: Session, name: str) -> Exam:
    exam = s.exec(select(Exam).where(Exam.name == name)).first()
    if exam is None:
        known = ", ".join(repr(e.name) for e in exams(s)[:5]) or "none yet"
        raise UserError(f"no exam named {name!r} (exams: {known})")
    return exam


def close_exam(s: Session, *, name: str, actor: str | None = None) -> bool:
    """Close the exam: from the commit on, it takes no new attempt and no new answer (an
    answer being recorded meanwhile is waited for: the exam's row is locked, and answers
    share-lock it). What was recorded stays; a taker may still finish. Audited. Returns False
    (nothing written) when it was closed already. The caller commits."""
    exam = s.exec(for_update(select(Exam).where(Exam.id == _exam_named(s, name).id))).one()
    if exam.closed_at is not None:
        return False
    exam.closed_at, exam.closed_by = utcnow(), actor
    s.add(exam)
    unfinished = len(s.exec(select(ExamAttempt.id).where(
        ExamAttempt.exam_id == exam.id, ExamAttempt.finished_at.is_(None))).all())
    record(s, "exam.close", actor=actor, exam=name, unfinished_attempts=unfinished)
    return True


def _open_exam(s: Session, exam_id: int) -> Exam:
    """The exam as stored now, share-locked until the commit (a close waits, or is waited
    for); UserError once closed."""
    exam = s.exec(for_share(select(Exam).where(Exam.id == exam_id))).one()
    if exam.closed_at is not None:
        raise UserError(f"the exam {exam.name!r} is closed: it takes no new answers")
    return exam


@dataclass(frozen=True)
class TakerProgress:
    """One taker of an exam as the admin sees it: how far, never what they wrote."""

    name: str
    role: str
    answered: int  # tasks fully answered in this exam
    elsewhere: int  # tasks not asked here (answered, or more of their case seen, elsewhere)
    total: int
    started_at: datetime
    finished_at: datetime | None
    # of the above, the practice tasks (db.study.practice) asked of them here, and answered
    practice: int = 0
    practice_answered: int = 0


@dataclass(frozen=True)
class ExamSummary:
    name: str
    closed: bool
    tasks: int
    review: bool
    takers: list[TakerProgress]
    closed_at: datetime | None = None
    closed_by: str | None = None

    @property
    def state(self) -> str:
        return "closed" if self.closed else "open"

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready (`nmb exam list --json`): times in ISO 8601."""
        def when(t: datetime | None) -> str | None:
            return t.isoformat() if t is not None else None

        return {"name": self.name, "state": self.state, "tasks": self.tasks,
                "review": self.review, "closed_at": when(self.closed_at),
                "closed_by": self.closed_by,
                "takers": [{"name": p.name, "role": p.role, "answered": p.answered,
                            "not_asked": p.elsewhere, "total": p.total,
                            "started_at": when(p.started_at),
                            "finished_at": when(p.finished_at)} for p in self.takers]}


def exam_list(s: Session, *, name: str | None = None) -> list[ExamSummary]:
    """Every exam (by name), or the one named `name`, with its state and each taker's
    progress: tasks fully answered of the exam's total, tasks not asked there, when they
    started and finished, and how many of those are practice tasks."""
    out, practice = [], practice_tasks(s)
    for exam in exams(s) if name is None else [_exam_named(s, name)]:
        takers = []
        for attempt, user in s.exec(select(ExamAttempt, User)
                                    .join(User, User.id == ExamAttempt.user_id)
                                    .where(ExamAttempt.exam_id == exam.id)
                                    .order_by(User.name)):
            answers = _answers(s, attempt.id)
            stages = {t: 1 + len(stages or []) for t, stages in s.exec(
                select(Task.task_id, Task.stages).where(Task.task_id.in_(exam.task_ids)))}
            done = {t for t in exam.task_ids if len(answers.get(t, [])) >= stages[t]}
            elsewhere = ({} if attempt.finished_at is not None
                         else _answered_elsewhere(s, attempt, exam, answers))
            asked = [t for t in exam.task_ids if t in practice and t not in elsewhere]
            takers.append(TakerProgress(user.name, user.role, len(done), len(elsewhere),
                                        len(exam.task_ids), attempt.started_at,
                                        attempt.finished_at, len(asked),
                                        len(done.intersection(asked))))
        out.append(ExamSummary(exam.name, exam.closed_at is not None, len(exam.task_ids),
                               exam.review, takers, exam.closed_at, exam.closed_by))
    return out


@person_write("the exam is not opened yet")
def attempt_for(s: Session, *, exam_id: int, user_id: int) -> ExamAttempt:
    """The user's attempt at the exam, started now if it does not exist yet. Physicians and
    students take exams (their answers are responses whose source is their role)."""
    q = select(ExamAttempt).where(ExamAttempt.exam_id == exam_id, ExamAttempt.user_id == user_id)
    attempt = s.exec(q).first()
    if attempt is None:
        if (role := s.get(User, user_id).role) not in ("physician", "student"):
            raise UserError(f"only physicians and students take exams; this account is {role!r}")
        exam = s.exec(for_share(select(Exam).where(Exam.id == exam_id))).one()
        if exam.closed_at is not None:
            raise UserError(f"the exam {exam.name!r} is closed: it takes no new attempts")
        attempt = ExamAttempt(exam_id=exam_id, user_id=user_id)
        s.add(attempt)
        try:
            s.commit()
        except IntegrityError:  # another tab of the same user started it meanwhile: use it
            s.rollback()
            attempt = s.exec(q).one()
    return attempt


def _answers(s: Session, attempt_id: int,
             task_ids: Iterable[str] | None = None) -> dict[str, list[str]]:
    """{task id: the attempt's recorded answers, stage by stage}, of the tasks `task_ids`
    only when given."""
    query = select(StageAnswer).where(StageAnswer.attempt_id == attempt_id)
    if task_ids is not None:
        query = query.where(StageAnswer.task_id.in_(list(task_ids)))
    answers: dict[str, list[str]] = {}
    for a in s.exec(query.order_by(StageAnswer.stage)):
        answers.setdefault(a.task_id, []).append(a.text)
    return answers


def offered_task_ids(s: Session, *, exam: Exam, attempt_id: int) -> list[str]:
    """The exam's tasks as the attempt asks them: without the tasks retired (with their case,
    db.study.retire) when it began, i.e. at its first recorded answer, or now when it has none
    yet. A begun attempt's tasks do not change under its taker. The practice tasks come first
    (db.study.practice), the others in the exam's order."""
    began = s.exec(select(func.min(StageAnswer.answered_at))
                   .where(StageAnswer.attempt_id == attempt_id)).one()
    out, practice = taken_out(s, retired(s, as_of=began)).tasks, practice_tasks(s)
    return sorted((t for t in exam.task_ids if t not in out), key=lambda t: t not in practice)


def exam_tasks(s: Session, *, attempt: ExamAttempt) -> list[ExamTask]:
    exam = s.get(Exam, attempt.exam_id)
    answers = _answers(s, attempt.id)
    elsewhere = _answered_elsewhere(s, attempt, exam, answers)
    tasks = [s.get(Task, task_id)
             for task_id in offered_task_ids(s, exam=exam, attempt_id=attempt.id)]
    patient = patients(s, {t.case_id for t in tasks})
    out = []
    for position, task in enumerate(tasks):
        case = case_view(s, case_id=task.case_id)  # its ground truth stays here
        given = answers.get(task.task_id, [])
        stages = list(task.stages or [])
        waiting = _waiting_for(tasks, answers, position, elsewhere, patient)
        shown = len(given) - 1 if waiting and given else len(given)  # the next one held back
        out.append(ExamTask(task.task_id, task.family, task.level, task.prompt,
                            stages[:shown], given, 1 + len(stages), case.title, case.ehr,
                            case.scores, case.series, waiting, elsewhere.get(task.task_id),
                            case.key_slices, case.opening_view, task.practice))
    return out


def _answered_by(s: Session, user_id: int, *, besides: int | None = None,
                 task_ids: Iterable[str] | None = None) -> dict[str, str]:
    """{task id: the first exam in which the user answered it (or began to)}, their attempt
    `besides` left out; of the tasks `task_ids` only when given."""
    query = (select(StageAnswer.task_id, Exam.name)
             .join(ExamAttempt, ExamAttempt.id == StageAnswer.attempt_id)
             .join(Exam, Exam.id == ExamAttempt.exam_id)
             .where(ExamAttempt.user_id == user_id).order_by(StageAnswer.id))
    if besides is not None:
        query = query.where(ExamAttempt.id != besides)
    if task_ids is not None:
        query = query.where(StageAnswer.task_id.in_(list(task_ids)))
    seen: dict[str, str] = {}
    for task_id, name in s.exec(query):
        seen.setdefault(task_id, name)
    return seen


def _answered_elsewhere(s: Session, attempt: ExamAttempt, exam: Exam,
                        answers: dict[str, list[str]],
                        kin: list[Task] | None = None,
                        patient_tasks: list[Task] | None = None) -> dict[str, str]:
    """{task id: the other exam} for this exam's tasks, not begun in this attempt (`answers`),
    that the taker answered or began in another exam, or whose patient they saw more of there:
    a stage of a task of the patient with more stages (what `_waiting_for` holds back within
    one exam), or a reference answer of the patient, handed out by that exam's review. A
    person answers a task once, and before more of its patient is known: a second answer,
    written after its stages (or its review) were seen, is no baseline answer, and the
    results would count the person twice on the task.

    `kin`: only these of the exam's tasks, all of one patient whose tasks are
    `patient_tasks` (`_patient_tasks`): what the taker did elsewhere is then read for the
    patient's tasks alone (a patient's tasks decide each other's, no other task does)."""
    among = None if patient_tasks is None else [t.task_id for t in patient_tasks]
    seen = _answered_by(s, attempt.user_id, besides=attempt.id, task_ids=among)
    reviewed = _reviewed_cases(s, attempt.user_id, besides=attempt.id)
    if not seen and not reviewed:
        return {}
    before = [s.get(Task, task_id) for task_id in seen]
    mine = ([s.get(Task, task_id) for task_id in exam.task_ids if task_id not in answers]
            if kin is None else [t for t in kin if t.task_id not in answers])
    patient = patients(s, {t.case_id for t in (*before, *mine)} | set(reviewed))
    reviewed_patients: dict[Patient, str] = {}
    for case_id, name in reviewed.items():
        reviewed_patients.setdefault(patient[case_id], name)
    out: dict[str, str] = {}
    for task in mine:
        where = next((seen[t.task_id] for t in before if t.task_id == task.task_id or (
            patient[t.case_id] == patient[task.case_id]
            and len(t.stages or []) > len(task.stages or []))),
            reviewed_patients.get(patient[task.case_id]))
        if where is not None:
            out[task.task_id] = where
    return out


def _reviewed_cases(s: Session, user_id: int, *, besides: int) -> dict[str, str]:
    """{case id: the first exam whose review handed the user the case's reference answer},
    their attempt `besides` left out."""
    out: dict[str, str] = {}
    for cases, name in s.exec(select(ExamAttempt.reviewed_cases, Exam.name)
                              .join(Exam, Exam.id == ExamAttempt.exam_id)
                              .where(ExamAttempt.user_id == user_id, ExamAttempt.id != besides,
                                     ExamAttempt.reviewed_cases.is_not(None))
                              .order_by(ExamAttempt.finished_at)):
        for case_id in cases:
            out.setdefault(case_id, name)
    return out


def _waiting_for(tasks: list[Task], answers: dict[str, list[str]], position: int,
                 elsewhere: dict[str, str], patient: dict[str, Patient]) -> list[int]:
    """The exam positions (1-based) of the tasks of the same patient as `tasks[position]`
    (its case, or a case linked to it: `patient`, from `patients`) that have fewer stages and
    are not fully answered. A stage revealed later is information about the patient (a CSF
    result, a biopsy) that a model answering the other task never gets, so it waits until
    those are answered; a single-stage task never waits. Two staged tasks of one patient
    cannot both be protected (`staged_tasks_sharing_a_case` warns of them)."""
    me = tasks[position]
    return [k + 1 for k, t in enumerate(tasks)
            if k != position and patient[t.case_id] == patient[me.case_id]
            and len(t.stages or []) < len(me.stages or [])
            and t.task_id not in elsewhere
            and len(answers.get(t.task_id, [])) < 1 + len(t.stages or [])]


def _locked_attempt(s: Session, attempt_id: int) -> ExamAttempt:
    """The attempt as stored now, locked until the commit (PostgreSQL: a row lock; SQLite: the
    engine's write transaction), refused once finished: the writes of two tabs or sessions of
    one taker queue here and each sees what the other recorded."""
    attempt = s.exec(for_update(select(ExamAttempt).where(ExamAttempt.id == attempt_id))).one()
    if attempt.finished_at is not None:
        raise UserError("this exam attempt is finished; answers can no longer change")
    return attempt


def _taker_turn(s: Session, user_id: int) -> None:
    """Until the commit, the taker's answers (in any exam) and reviews take turns: an answer
    sees the cases a review handed out, a review the tasks an answer began."""
    take_turns(s, f"exam.taker.{user_id}")


def _enabled_taker(s: Session, attempt: ExamAttempt) -> None:
    """UserError when the taker's account is disabled, read share-locked as stored now: a
    disable being committed is waited for and refuses the write (or waits for it)."""
    taker = s.exec(for_share(select(User).where(User.id == attempt.user_id))).one()
    if taker.disabled:
        raise UserError("this account is disabled")


def _exam_task(s: Session, exam: Exam, task_id: str, offered: Iterable[str]) -> Task:
    """The task, UserError unless `offered` (`offered_task_ids`) holds it."""
    if task_id not in offered:
        raise UserError(f"task {task_id!r} is not part of this exam"
                        + (" (it is retired)" if task_id in exam.task_ids else ""))
    return s.get(Task, task_id)


def _patient_tasks(s: Session, task: Task) -> list[Task]:
    """Every task of the task's patient (its case, or the cases linked to it as one patient,
    `patients`), in task id order: read through the indexes on `Case.patient` and
    `Task.case_id`, whatever the size of the study or the exam."""
    label = s.exec(select(Case.patient).where(Case.case_id == task.case_id)).one()
    cases = (select(Case.case_id).where(Case.patient == label) if label
             else select(Case.case_id).where(Case.case_id == task.case_id))
    return list(s.exec(select(Task).where(Task.case_id.in_(cases)).order_by(Task.task_id)))


def _next_stage(s: Session, attempt: ExamAttempt, task: Task, shown: int | None) -> int:
    """The task's stage waiting for an answer; UserError when the task is fully answered or
    when `shown` (the stage the page showed) is not it: answered meanwhile in another tab or
    session, so the text was written without what that answer revealed."""
    stage = len(s.exec(select(StageAnswer.stage).where(
        StageAnswer.attempt_id == attempt.id, StageAnswer.task_id == task.task_id)).all())
    if stage > len(task.stages or []):
        raise UserError(f"task {task.task_id!r} is already fully answered")
    if shown is not None and shown != stage:
        raise UserError(f"stage {shown + 1} of task {task.task_id!r} was already answered (in "
                        "another tab or session); reload the page to see what it revealed")
    return stage


@person_write(ANSWER_KEPT)
def answer_stage(s: Session, *, attempt: ExamAttempt, task_id: str, text: str,
                 seconds: float = 0.0, stage: int | None = None) -> int:
    """Record the answer to the task's next stage; returns the stage number answered.
    `stage` (0-based): the stage the taker was shown; the answer is refused when that stage
    is answered already (two tabs of one taker), never recorded as a later stage's."""
    if not any(c.isprintable() and not c.isspace() for c in text):  # blanks, zero-width marks
        raise UserError("the answer is empty (it has no visible character)")
    check_length("the answer", text.strip(), ANSWER)
    current = _locked_attempt(s, attempt.id)
    _enabled_taker(s, current)
    _taker_turn(s, current.user_id)  # their tabs of other exams, and reviews, queue too
    exam = _open_exam(s, current.exam_id)
    offered = {t: k for k, t in enumerate(offered_task_ids(s, exam=exam,
                                                           attempt_id=current.id))}
    task = _exam_task(s, exam, task_id, offered)
    stage = _next_stage(s, current, task, stage)
    # the rules below concern the task's patient alone: only the exam's tasks of that patient
    # (and the taker's answers to them) are read, so an answer costs the same in any exam
    patient_tasks = _patient_tasks(s, task)
    kin = sorted((t for t in patient_tasks if t.task_id in offered),
                 key=lambda t: offered[t.task_id])
    answers = _answers(s, current.id, [t.task_id for t in kin])
    elsewhere = _answered_elsewhere(s, current, exam, answers, kin, patient_tasks)
    if task_id in elsewhere:
        raise UserError(f"in the exam {elsewhere[task_id]!r} you answered this task, or saw "
                        "more of its case (a later stage, or its reference answer); a task is "
                        "answered once, before more of its case is known")
    mine = [t.task_id for t in kin].index(task_id)
    if stage and (waiting := [offered[kin[k - 1].task_id] + 1 for k in _waiting_for(
            kin, answers, mine, elsewhere, patients(s, {t.case_id for t in kin}))]):
        raise UserError(f"stage {stage + 1} of this task is revealed once task"
                        f"{'s' if len(waiting) > 1 else ''} {', '.join(map(str, waiting))} of "
                        "this exam, about the same patient, "
                        f"{'are' if len(waiting) > 1 else 'is'} answered")
    s.add(StageAnswer(attempt_id=current.id, task_id=task_id, stage=stage, text=text.strip(),
                      seconds=max(seconds, 0.0)))
    current.drafts = {k: v for k, v in (current.drafts or {}).items() if k != task_id}
    s.add(current)
    record(s, "exam.answer", actor=None, attempt=current.id, task=task_id, stage=stage)
    s.commit()
    return stage


@person_write(EXAM_DRAFT_KEPT)
def save_draft(s: Session, *, attempt: ExamAttempt, task_id: str, text: str,
               stage: int | None = None) -> None:
    """Keep the answer being written, so a closed tab or a reload loses nothing. `stage`: the
    stage it answers (refused once that stage is answered, so a stale tab's text does not
    become the next stage's draft)."""
    check_length("the answer", text, ANSWER)
    current = _locked_attempt(s, attempt.id)
    _enabled_taker(s, current)
    exam = _open_exam(s, current.exam_id)
    task = _exam_task(s, exam, task_id, set(offered_task_ids(s, exam=exam,
                                                             attempt_id=current.id)))
    if stage is not None:
        _next_stage(s, current, task, stage)
    current.drafts = {**(current.drafts or {}), task_id: text}
    s.add(current)
    s.commit()


@person_write(FINISH_KEPT)
def finish(s: Session, *, attempt: ExamAttempt, actor: str | None = None) -> int:
    """Close the attempt and turn each fully answered task into a human response; one that
    names a model or its maker is redacted and held for review, as a model's response is
    (`db.raters.response_flags`): "[name removed]" must not mark model answers alone."""
    try:
        current = _locked_attempt(s, attempt.id)
    except UserError:
        raise UserError("this exam attempt is already finished") from None
    _enabled_taker(s, current)
    user = s.get(User, current.user_id)
    answered = [t for t in exam_tasks(s, attempt=current) if t.answered]
    rows = [{"response_id": f"human-{current.id}-{t.task_id}", "model": None,
             "text": t.answers[0], "turns": t.answers[1:] or None} for t in answered]
    flags = flag_new(s, rows)  # a model named in an answer: redacted and held, as a model's
    for t, row, code in zip(answered, rows, new_blind_codes(s, len(answered)), strict=True):
        s.add(Response(task_id=t.task_id, source=user.role, user_id=user.id, sample=0,
                       blind_code=code, **row))
    s.flush()
    s.add_all(flags)
    current.finished_at = attempt.finished_at = utcnow()
    s.add(current)
    record(s, "exam.finish", actor=actor, attempt=current.id, responses=len(answered))
    s.commit()
    return len(answered)


@person_write("the review is not shown yet")
def review_tasks(s: Session, *, attempt: ExamAttempt) -> list[ReviewTask]:
    """The finished attempt's tasks with the taker's answers and the reference answers, the
    cases whose reference answer they hold added to `ExamAttempt.reviewed_cases` (committed
    before anything is returned).

    Raises UserError unless the attempt is finished and its exam allows review: the reference
    answer is read here and nowhere else on the exam's way to a page. A task whose case has a
    task the taker may still answer in another exam they have not finished is `withheld` (no
    reference, only the stages the taker reached) until that exam is finished."""
    attempt = s.exec(for_update(select(ExamAttempt).where(ExamAttempt.id == attempt.id))).one()
    _taker_turn(s, attempt.user_id)  # before it reads the exams and answers it decides on
    exam = s.get(Exam, attempt.exam_id)
    if not exam.review:
        raise UserError(f"exam {exam.name!r} does not show reference answers")
    if attempt.finished_at is None:
        raise UserError("finish the exam to review it")
    answers = _answers(s, attempt.id)
    pending = _still_to_answer(s, exam=exam, user_id=attempt.user_id)
    tasks = [s.get(Task, task_id)
             for task_id in offered_task_ids(s, exam=exam, attempt_id=attempt.id)]
    patient = patients(s, {t.case_id for t in tasks})
    out, shown = [], []
    for task in tasks:
        task_id = task.task_id
        case = case_view(s, case_id=task.case_id)
        given, stages = answers.get(task_id, []), list(task.stages or [])
        withheld = pending.get(patient[task.case_id], [])
        truth = case.ground_truth if has_reference(case.ground_truth) and not withheld else None
        if truth is not None:
            shown.append(task.case_id)
        out.append(ReviewTask(task_id, task.family, task.level, task.prompt,
                              stages[:len(given)] if withheld else stages, given, case.title,
                              [(k, v) for k, v in reference_fields(truth) if v], withheld))
    recorded = list(attempt.reviewed_cases or [])
    if new := sorted(set(shown) - set(recorded)):
        attempt.reviewed_cases = recorded + new
        s.add(attempt)
        record(s, "exam.review", actor=None, attempt=attempt.id, cases=new)
    s.commit()
    return out


def _still_to_answer(s: Session, *, exam: Exam, user_id: int) -> dict[Patient, list[str]]:
    """{patient: names of the other exams, not finished by the user nor closed, holding a task of
    that patient (`patients`) the user may still answer there: not fully answered in that exam's
    attempt, nor answered or begun in another}: a review must not hand a reference answer of
    the patient to someone who may still answer one of its tasks, or go on with one they
    began."""
    finished = set(s.exec(select(ExamAttempt.exam_id).where(
        ExamAttempt.user_id == user_id, ExamAttempt.finished_at.is_not(None))))
    given: dict[tuple[int, str], int] = {}  # (exam id, task id): stages answered there
    begun: dict[str, set[int]] = {}  # task id: the exams where it was begun
    for exam_id, task_id, n in s.exec(
            select(ExamAttempt.exam_id, StageAnswer.task_id, func.count())
            .join(ExamAttempt, ExamAttempt.id == StageAnswer.attempt_id)
            .where(ExamAttempt.user_id == user_id)
            .group_by(ExamAttempt.exam_id, StageAnswer.task_id)):
        given[(exam_id, task_id)] = n
        begun.setdefault(task_id, set()).add(exam_id)
    out: dict[Patient, list[str]] = {}
    patient: dict[str, Patient] = {}
    for other in exams(s):
        if other.id == exam.id or other.id in finished or other.closed_at is not None:
            continue  # (a closed exam asks nothing more)
        tasks = [s.get(Task, task_id) for task_id in other.task_ids]
        patient |= patients(s, {t.case_id for t in tasks} - set(patient))
        for task in tasks:
            task_id = task.task_id
            if (given.get((other.id, task_id), 0) > len(task.stages or [])
                    or begun.get(task_id, set()) - {other.id}):
                continue  # answered there, or not asked there (begun in another exam)
            names = out.setdefault(patient[task.case_id], [])
            if other.name not in names:
                names.append(other.name)
    return out
