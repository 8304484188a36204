"""The synthetic demo inside a study: whether the study holds it, the refusal of real cases
beside it (`refuse_beside_demo`), and its removal (`nmb demo remove`, `remove_demo`).

The demo's cases are those of the demo bundle (`DEMO_BUNDLE`) whose ids start with `syn-`; its
accounts are the users flagged `demo` (demo-admin, demo-expert1..3, demo-physician,
demo-student and the disabled synthetic exam takers). Everything that hangs off them goes with
them; what the study holds besides the demo stays. When the demo was the whole study, the study
is left empty (but for accounts that are not the demo's, and the audit log).
"""

from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import delete, func, true
from sqlmodel import Session, col, select

from db.audit import record
from db.bundle.store import Workspace
from db.engine import nmb_home, session
from db.models import (
    Assignment,
    AssignmentDesign,
    CalibrationItem,
    CalibrationProtocol,
    CalibrationReport,
    Case,
    CollectedResponse,
    CollectionFailure,
    CollectionRun,
    Exam,
    ExamAttempt,
    ExpertScore,
    FrozenPackage,
    GraderCache,
    GraderConfig,
    GraderFailure,
    GraderRun,
    GraderScore,
    HeldoutLook,
    LoginFailure,
    LoginToken,
    Mask,
    ModelCache,
    Response,
    ResponseFlag,
    Rubric,
    ScoreRevision,
    Series,
    Setting,
    StageAnswer,
    Task,
    User,
)
from db.queries import chunks
from db.study.cases import DEMO_BUNDLE
from errors import UserError, counted

DEMO_SETTING = "demo"  # the `Setting` that `nmb demo` sets once the demo study is complete
SYNTHETIC_GRADER_URL = "synthetic://demo"  # the base URL of the demo's synthetic grader


def _demo_cases():
    return select(Case.case_id).where(Case.bundle == DEMO_BUNDLE, col(Case.case_id).like("syn-%"))


def _demo_tasks():
    return select(Task.task_id).where(col(Task.case_id).in_(_demo_cases()))


def _demo_responses():
    return select(Response.response_id).where(col(Response.task_id).in_(_demo_tasks()))


def _demo_users():
    return select(User.id).where(User.demo)


def demo_case_count(s: Session) -> int | None:
    """The number of the demo's cases when the study holds the demo (its setting, or a
    half-loaded demo's cases), else None."""
    n = s.exec(select(func.count()).select_from(Case).where(col(Case.case_id).in_(_demo_cases()))).one()
    flag = s.get(Setting, DEMO_SETTING)
    return n if n or (flag is not None and flag.value == "1") else None


def refuse_beside_demo(s: Session, *, with_demo: bool) -> None:
    """A UserError when the study holds the demo and cases are imported without `with_demo`
    (read before anything is written)."""
    if with_demo or (n := demo_case_count(s)) is None:
        return
    raise UserError(f"the study holds the synthetic demo ({counted(n, 'case')}): remove it first "
                    "(nmb demo remove) or import beside it with --with-demo; nothing was imported")


@dataclass
class DemoRemoval:
    """What `remove_demo` removed, table by table, and the images it left for the sweep."""

    removed: dict[str, int] = field(default_factory=dict)
    images: list[str] = field(default_factory=list)  # store paths no longer referenced

    def __str__(self) -> str:
        first = ("case", "series", "mask", "task", "response", "account")
        order = [*first, *(k for k in self.removed if k not in first)]
        shown = ", ".join(counted(self.removed[k], k, "series" if k == "series" else None)
                          for k in order if self.removed.get(k))
        return f"demo removed: {shown or 'nothing left of it'}"


def _ids(s: Session, query) -> set:
    return set(s.exec(query).all())


def _refusal(s: Session, responses: set[str], tasks: set[str], users: set[int]) -> str | None:
    """Why the demo cannot be removed without touching what is not the demo's, or None."""
    exams = s.exec(select(Exam)).all()
    mixed = [e.name for e in exams if set(e.task_ids or []) & tasks and set(e.task_ids) - tasks]
    if mixed:
        return f"the exam {mixed[0]!r} holds demo tasks and other tasks"
    demo_exams = {e.id for e in exams if e.task_ids and set(e.task_ids) <= tasks}
    items = {i.response_id for i in s.exec(select(CalibrationItem))}
    if items & responses and items - responses:
        return "the calibration subset holds demo responses and other responses"
    if users:
        theirs = s.exec(select(Response.response_id).where(
            col(Response.user_id).in_(sorted(users)),
            col(Response.response_id).not_in(_demo_responses()))).first()
        rated = s.exec(select(Assignment.response_id).where(
            col(Assignment.rater_id).in_(sorted(users)),
            col(Assignment.response_id).not_in(_demo_responses()))).first()
        took = s.exec(select(ExamAttempt.exam_id).where(
            col(ExamAttempt.user_id).in_(sorted(users)),
            col(ExamAttempt.exam_id).not_in(sorted(demo_exams) or [-1]))).first()
        if theirs or rated or took is not None:
            return ("a demo account answered, was assigned or took an exam beyond the demo "
                    f"({theirs or rated or f'exam {took}'})")
    return None


def _delete(s: Session, removed: dict[str, int], name: str, table, *where) -> None:
    n = s.exec(select(func.count()).select_from(table).where(*where)).one()
    if n:
        s.exec(delete(table).where(*where))
    removed[name] = removed.get(name, 0) + n


def _delete_in(s: Session, removed: dict[str, int], name: str, key, keys: set) -> None:
    for chunk in chunks(sorted(keys), 900):
        _delete(s, removed, name, key.class_, col(key).in_(chunk))
    removed.setdefault(name, 0)


def _remove(s: Session, *, actor: str | None) -> DemoRemoval:
    """Delete the demo's rows in `s` (not committed); a UserError, with nothing written, when
    the study holds no demo or when removing it would touch what is not the demo's."""
    if demo_case_count(s) is None:
        raise UserError("the study holds no demo: nothing was removed")
    cases, tasks = _ids(s, _demo_cases()), _ids(s, _demo_tasks())
    responses, users = _ids(s, _demo_responses()), _ids(s, _demo_users())
    if (why := _refusal(s, responses, tasks, users)) is not None:
        raise UserError(f"the demo cannot be removed: {why}; nothing was removed")
    whole = not s.exec(select(Case.case_id).where(col(Case.case_id).not_in(cases))).first()
    out = DemoRemoval()
    out.images = sorted({*s.exec(select(Series.path).where(col(Series.case_id).in_(cases))),
                         *s.exec(select(Mask.path).where(col(Mask.case_id).in_(cases)))})
    rm = out.removed
    items = {i.response_id for i in s.exec(select(CalibrationItem))}
    calibration_is_demo = bool(items) and items <= responses or whole

    # the runs that are the demo's, read before their items go
    synthetic = _ids(s, select(GraderConfig.id).where(GraderConfig.base_url == SYNTHETIC_GRADER_URL))
    grader_items = {(r, x) for r, x in s.exec(select(GraderScore.run_id, GraderScore.response_id))}
    grader_items |= set(s.exec(select(GraderFailure.run_id, GraderFailure.response_id)).all())
    graded: dict[int, list[bool]] = {}
    for run_id, rid in grader_items:
        graded.setdefault(run_id, []).append(rid in responses)
    grader_runs = {r.id for r in s.exec(select(GraderRun))
                   if r.config_id in synthetic or whole
                   or (all(graded[r.id]) if r.id in graded else False)}
    demo_configs = {r.config_id for r in s.exec(select(GraderRun)) if r.id in grader_runs}
    collected = dict(s.exec(select(CollectedResponse.response_id, CollectionRun.id).join(
        CollectionRun, CollectionRun.id == CollectedResponse.run_id)).all())
    collection_rows: dict[int, list[bool]] = {}
    for rid, run_id in collected.items():
        collection_rows.setdefault(run_id, []).append(rid in responses)
    for run_id, task_id in s.exec(select(CollectionFailure.run_id, CollectionFailure.task_id)):
        collection_rows.setdefault(run_id, []).append(task_id in tasks)
    collection_runs = {r for r in _ids(s, select(CollectionRun.id))
                       if whole or (r in collection_rows and all(collection_rows[r]))}
    model_keys = {k for c in s.exec(select(CollectedResponse).where(
        col(CollectedResponse.response_id).in_(_demo_responses()))) for k in c.request_hashes}
    grader_keys = set(s.exec(select(GraderScore.request_hash).where(
        col(GraderScore.response_id).in_(_demo_responses()))).all())
    exams = {e.id for e in s.exec(select(Exam))
             if whole or (e.task_ids and set(e.task_ids) <= tasks)}

    # calibration: looks and reports of the demo's subset or runs (no frozen package: refused)
    reports = {r.id for r in s.exec(select(CalibrationReport))
               if calibration_is_demo or r.run_id in grader_runs}
    package = s.exec(select(FrozenPackage).where(col(FrozenPackage.report_id).in_(
        sorted(reports) or [-1])).order_by(FrozenPackage.id)).first()
    if package is not None:  # read before anything is written
        raise UserError(f"the demo cannot be removed: frozen package {package.id} was built from "
                        "its calibration data; keep this study (put real data in a study of its "
                        "own); nothing was removed")
    _delete_in(s, rm, "held-out look", HeldoutLook.report_id, reports)
    _delete_in(s, rm, "calibration report", CalibrationReport.id, reports)
    if calibration_is_demo:
        _delete(s, rm, "calibration protocol", CalibrationProtocol, true())
    _delete_in(s, rm, "calibration item", CalibrationItem.response_id, responses)

    # scores and assignments
    assignments = _ids(s, select(Assignment.id).where(col(Assignment.response_id).in_(
        _demo_responses())))
    scores = _ids(s, select(ExpertScore.id).where(col(ExpertScore.assignment_id).in_(
        select(Assignment.id).where(col(Assignment.response_id).in_(_demo_responses())))))
    designs_before = {d: set() for d in _ids(s, select(AssignmentDesign.id))}
    for design, a in s.exec(select(Assignment.design_id, Assignment.id)):
        designs_before[design].add(a)
    _delete_in(s, rm, "score revision", ScoreRevision.score_id, scores)
    _delete_in(s, rm, "expert score", ExpertScore.id, scores)
    _delete_in(s, rm, "assignment", Assignment.id, assignments)
    designs = {d for d, a in designs_before.items() if (a and a <= assignments) or whole}
    _delete_in(s, rm, "assignment design", AssignmentDesign.id, designs)

    # grades and runs
    _delete_in(s, rm, "grader score", GraderScore.response_id, responses)
    _delete_in(s, rm, "grader failure", GraderFailure.response_id, responses)
    _delete_in(s, rm, "grader score", GraderScore.run_id, grader_runs)
    _delete_in(s, rm, "grader failure", GraderFailure.run_id, grader_runs)
    _delete_in(s, rm, "grader run", GraderRun.id, grader_runs)
    used = (_ids(s, select(GraderRun.config_id)) | _ids(s, select(CalibrationReport.config_id))
            | _ids(s, select(FrozenPackage.config_id)))
    configs = {c for c in _ids(s, select(GraderConfig.id)) if c not in used
               and (whole or c in synthetic or c in demo_configs)}
    _delete_in(s, rm, "grader config", GraderConfig.id, configs)
    _delete_in(s, rm, "collected response", CollectedResponse.response_id, responses)
    _delete_in(s, rm, "collection failure", CollectionFailure.task_id, tasks)
    _delete_in(s, rm, "collected response", CollectedResponse.run_id, collection_runs)
    _delete_in(s, rm, "collection failure", CollectionFailure.run_id, collection_runs)
    _delete_in(s, rm, "collection run", CollectionRun.id, collection_runs)
    if whole:
        _delete(s, rm, "cached grade", GraderCache, true())
        _delete(s, rm, "cached model answer", ModelCache, true())
    else:
        _delete_in(s, rm, "cached grade", GraderCache.request_hash, grader_keys)
        _delete_in(s, rm, "cached model answer", ModelCache.request_hash, model_keys)

    # exams and their attempts
    attempts = _ids(s, select(ExamAttempt.id).where(col(ExamAttempt.exam_id).in_(
        sorted(exams) or [-1])))
    _delete_in(s, rm, "stage answer", StageAnswer.attempt_id, attempts)
    _delete_in(s, rm, "stage answer", StageAnswer.task_id, tasks)
    _delete_in(s, rm, "exam attempt", ExamAttempt.id, attempts)
    _delete_in(s, rm, "exam", Exam.id, exams)

    # responses, tasks, cases, their images
    _delete_in(s, rm, "response flag", ResponseFlag.response_id, responses)
    _delete_in(s, rm, "response", Response.response_id, responses)
    _delete_in(s, rm, "task", Task.task_id, tasks)
    _delete_in(s, rm, "series", Series.case_id, cases)
    _delete_in(s, rm, "mask", Mask.case_id, cases)
    _delete_in(s, rm, "case", Case.case_id, cases)

    # the demo's accounts
    names = set(s.exec(select(User.name).where(User.demo)).all())
    _delete_in(s, rm, "login token", LoginToken.user_id, users)
    _delete_in(s, rm, "failed login", LoginFailure.name, names)
    _delete_in(s, rm, "account", User.id, users)
    if whole:  # rubrics nothing uses any more (ensured again where one is needed)
        used = (_ids(s, select(AssignmentDesign.rubric_hash))
                | _ids(s, select(ExpertScore.rubric_hash))
                | _ids(s, select(GraderConfig.rubric_hash)))
        _delete(s, rm, "rubric", Rubric, col(Rubric.content_hash).not_in(sorted(used) or [""]))
    _delete(s, rm, "setting", Setting, Setting.key == DEMO_SETTING)
    record(s, "demo.remove", actor=actor, removed={k: v for k, v in rm.items() if v},
           images=len(out.images), whole_study=whole)
    return out


def remove_demo(*, actor: str | None) -> DemoRemoval:
    """Remove the demo from the study in one transaction (module docstring), audited; then
    delete from the image store the images no row references any more (the store's sweep, so an
    import running meanwhile keeps its images, and a crash leaves them to the next sweep), with
    their viewer copies. A UserError, with nothing removed, when the study holds no demo or
    when something built on it (a frozen package, an exam or a calibration subset that mixes it
    with other data, work of a demo account beyond it) cannot be removed safely."""
    with Workspace("demo-remove") as area:
        with session() as s:
            out = _remove(s, actor=actor)
            area.release_images(out.images)
            s.commit()
    home = nmb_home()
    for rel in out.images:
        if not (home / rel).exists():
            sha = Path(rel).name.split(".")[0]
            for copy in (home / "viewer").glob(f"{sha}-*"):
                copy.unlink(missing_ok=True)
    return out
