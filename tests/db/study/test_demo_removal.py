"""`nmb demo remove` (db.study.demo): the demo goes whole and atomically, audited, with its
images; real cases are refused beside the demo without --with-demo; what is not the demo's
stays."""

import json
from pathlib import Path

from sqlalchemy import delete, func, text
from sqlmodel import SQLModel, col, select

import cli
from db.engine import session
from db.models import (
    Assignment,
    AuditLog,
    Case,
    CollectedResponse,
    CollectionRun,
    Exam,
    ExamAttempt,
    LoginFailure,
    ModelCache,
    Response,
    ResponseFlag,
    Series,
    Setting,
    StageAnswer,
    Task,
    User,
)
from db.study.cases import DEMO_BUNDLE
from importers import Options, run_import

ROOT = Path(__file__).resolve().parents[3]
SAMPLE = ROOT / "examples" / "sample-bundle"


def _rows() -> dict[str, int]:
    """Every table's row count but the audit log's."""
    with session() as s:
        return {t.name: s.exec(select(func.count()).select_from(t)).one()
                for t in SQLModel.metadata.sorted_tables if t.name != "auditlog"}


def _store(home: Path) -> set[str]:
    return {p.relative_to(home).as_posix() for p in (home / "images").rglob("*") if p.is_file()}


def _nmb(capsys, *args: str) -> tuple[int, str, str]:
    code = cli.main(list(args))
    got = capsys.readouterr()
    return code, got.out, got.err


def test_demo_remove_leaves_an_empty_study(demo_study: Path, capsys) -> None:
    """The real demo (tests' demo_template, SQLite): an import beside it is refused, nothing
    written; removed, every table is empty, images and viewer copies gone, one audit row; then
    real data imports without --with-demo."""
    before, store = _rows(), _store(demo_study)
    assert before["case"] == 10 and before["graderscore"] and before["examattempt"] and store
    code, _, err = _nmb(capsys, "import", str(SAMPLE))
    assert code == 2 and err == ("nmb: the study holds the synthetic demo (10 cases): remove it "
                                 "first (nmb demo remove) or import beside it with --with-demo; "
                                 "nothing was imported\n")
    assert _rows() == before and _store(demo_study) == store
    viewer = demo_study / "viewer" / f"{Path(sorted(store)[0]).name.split('.')[0]}-display-1.png"
    viewer.parent.mkdir(exist_ok=True)
    viewer.write_bytes(b"a viewer copy")

    code, out, err = _nmb(capsys, "demo", "remove")
    assert code == 0, err
    assert out.startswith("demo removed: 10 cases, 30 series, 1 mask, 12 tasks, 348 responses, "
                          "15 accounts, "), out
    assert set(_rows().values()) == {0}, {k: v for k, v in _rows().items() if v}
    assert _store(demo_study) == set() and not viewer.exists()
    assert [p.name for p in (demo_study / "tmp").iterdir()] == [".lock"]  # the sweep's list went
    code, out, _ = _nmb(capsys, "status", "--json")
    assert set(json.loads(out).values()) == {0}
    with session() as s:
        audit = s.exec(select(AuditLog).where(AuditLog.action == "demo.remove")).one()
    assert audit.actor == "cli" and audit.detail["removed"]["case"] == 10
    assert audit.detail["removed"]["account"] == 15  # 6 demo accounts, 9 synthetic exam takers

    assert _nmb(capsys, "demo", "remove")[2] == "nmb: the study holds no demo: nothing was removed\n"
    assert _nmb(capsys, "import", str(SAMPLE))[0] == 0


def _small_demo() -> None:
    """A study shaped like the demo, in a few rows: two `syn-` cases of the demo bundle with an
    image each, tasks, model and human responses, demo accounts, the demo exam with an attempt,
    a drawn calibration subset with its protocol, assignments and expert scores, a grader run,
    a collection run, a held response and a failed login; the demo setting."""
    from calibration.protocol import register
    from db.raters.assignments import assign, draw_calibration
    from db.raters.scoring import submit
    from db.rubrics import ensure_rubric
    from db.study.exams import ensure_exam
    from db.users import add_user
    from rubric import DEFAULT_RUBRIC
    from tests.factories import add_series, grade_all

    with session() as s:
        for n in (1, 2):
            s.add(Case(case_id=f"syn-0{n}", title="Synthetic", ehr="Synthetic record.",
                       scores={}, ground_truth={"final_diagnosis": "MS"}, bundle=DEMO_BUNDLE))
            s.flush()
            for family in ("differential", "lesion", "rationale"):
                s.add(Task(task_id=f"syn-t{n}-{family}", case_id=f"syn-0{n}", family=family,
                           level=1, prompt="Synthetic prompt.", stages=[]))
                s.flush()
                for m, model in enumerate(("meridian-med-2", "cortex-lm-34b")):
                    s.add(Response(response_id=f"syn-r{n}-{family}-{m}",
                                   task_id=f"syn-t{n}-{family}", source="model", model=model,
                                   text="Synthetic answer.", blind_code=f"R-{n}{family[:3]}{m}"))
        for name, role in (("demo-admin", "admin"), ("demo-expert1", "expert"),
                           ("demo-expert2", "expert"), ("demo-student", "student")):
            add_user(s, name=name, role=role, password="demo", demo=True, actor="demo")
        s.merge(Setting(key="demo", value="1"))
        s.commit()
        add_series(s, ["syn-01", "syn-02"])
        student = s.exec(select(User).where(User.name == "demo-student")).one()
        exam = ensure_exam(s, name="Demo exam (synthetic cases)", actor="demo")
        s.flush()
        attempt = ExamAttempt(exam_id=exam.id, user_id=student.id)
        s.add(attempt)
        s.add(Response(response_id="syn-h1", task_id="syn-t1-lesion", source="student",
                       user_id=student.id, text="Synthetic human answer.", blind_code="H-1"))
        s.flush()
        s.add(StageAnswer(attempt_id=attempt.id, task_id="syn-t1-lesion", stage=0, text="x"))
        s.add(ResponseFlag(response_id="syn-r1-lesion-1", names=["x"], original_text="x"))
        s.add(LoginFailure(name="demo-expert1"))
        rubric = ensure_rubric(s, DEFAULT_RUBRIC, actor="demo")  # the demo's
        draw_calibration(s, n=12, seed=0, actor="demo")
        s.flush()
        register(s, accept_weaker=True, actor="demo")
        assign(s, rubric_hash=rubric.content_hash, raters=["demo-expert1", "demo-expert2"],
               overlap=2, selection="calibration", seed=0, actor="demo")
        grade_all(s)
        run = CollectionRun(model="meridian-med-2", settings={}, template_version="t",
                            template_hash="h", status="finished")
        s.add(run)
        s.add(ModelCache(request_hash="k1", text="Synthetic answer."))
        s.flush()
        s.add(CollectedResponse(response_id="syn-r1-differential-0", run_id=run.id,
                                template_version="t", template_hash="h", request_hashes=["k1"],
                                image_sha256=[]))
        s.commit()
        expert = s.exec(select(User).where(User.name == "demo-expert1")).one()
        a, family = s.exec(select(Assignment, Task.family)
                           .join(Response, Response.response_id == Assignment.response_id)
                           .join(Task, Task.task_id == Response.task_id)
                           .where(Assignment.rater_id == expert.id)).first()
        submit(s, rater_id=expert.id, assignment_id=a.id, values={
            "criteria": {c.key: rubric.scale.max for c in rubric.applicable_criteria(family)},
            "correct_diagnosis": True, "error_tags": [], "comment": "", "confidence": 3})
        s.commit()


def test_demo_remove_keeps_what_is_not_the_demos(database_url: str, nmb_home: Path,
                                                 capsys) -> None:
    """On SQLite and PostgreSQL: real cases are refused beside the demo (nothing written) and
    import with --with-demo; an exam mixing the two makes removal refuse, nothing removed;
    then the demo goes and the real bundle, its images and a real account stay."""
    from db.users import add_user

    _small_demo()
    with session() as s:
        add_user(s, name="lead", role="admin", password="a long password 1", actor="cli")
        s.commit()
    demo_images, before = _store(nmb_home), _rows()
    assert before["expertscore"] and before["graderscore"] and before["calibrationprotocol"]
    code, _, err = _nmb(capsys, "import", str(SAMPLE), "--dry-run")
    assert code == 2 and "nmb demo remove" in err and err.count("\n") == 1
    assert _rows() == before
    with session() as s:
        run_import(s, "bundle", [SAMPLE], Options(with_demo=True, actor="lead"))
        s.add(Exam(name="mixed", task_ids=["syn-t1-lesion", "example-01-dx"]))
        s.commit()
    real, kept = _rows(), _store(nmb_home)
    assert real["case"] == 4 and kept > demo_images

    code, _, err = _nmb(capsys, "demo", "remove")
    assert err == ("nmb: the demo cannot be removed: the exam 'mixed' holds demo tasks and other "
                   "tasks; nothing was removed\n") and code == 2
    assert _rows() == real and _store(nmb_home) == kept
    with session() as s:
        s.exec(delete(Exam).where(Exam.name == "mixed"))
        s.commit()

    code, out, err = _nmb(capsys, "demo", "remove")
    assert code == 0, err
    left = {k: v for k, v in _rows().items() if v}
    assert left == {"case": 2, "series": 3, "task": 3, "response": 6, "user": 1,
                    "rubric": 1}  # the study's rubric stays while it holds cases
    assert _store(nmb_home) == kept - demo_images
    with session() as s:
        assert {c.bundle for c in s.exec(select(Case))} == {"Neural-MedBench Studio example (synthetic)"}
        assert s.exec(select(User.name)).all() == ["lead"]
        assert s.get(Setting, "demo") is None
        assert {p for p in s.exec(select(Series.path))} <= kept
        assert s.exec(select(Response).where(col(Response.response_id).like("syn-%"))).first() is None
        audit = s.exec(select(AuditLog).where(AuditLog.action == "demo.remove")).one()
        assert audit.detail["whole_study"] is False and audit.detail["removed"]["account"] == 4
        assert s.exec(text("SELECT count(*) FROM auditlog")).one()[0] > 1
    code, _, _ = _nmb(capsys, "import", str(SAMPLE), "--dry-run")
    assert code == 0  # no demo any more: nothing asks for --with-demo


def test_every_importer_of_cases_takes_with_demo() -> None:
    from importers.registry import IMPORTERS

    assert {i.name for i in IMPORTERS.values() if "with_demo" in i.takes} == {
        i.name for i in IMPORTERS.values() if i.brings == "cases"}


def test_the_admin_page_removes_the_demo_once_confirmed(sqlite_url: str) -> None:
    """/admin's Retire tab offers the removal only while the demo is there, and only after the
    confirmation box is ticked; the removal is the command's (audited with the admin's name)."""
    from tests.apptest import make_user, page, page_payload

    _small_demo()
    admin = make_user("lead", "admin")
    at = page("pages/admin.py", admin)
    at.query_params["section"] = "Retire"
    at.run()
    remove = next(b for b in at.button if b.label == "Remove the demo")
    assert remove.disabled and _rows()["case"] == 2
    at.checkbox(key="demo_sure").check().run()
    next(b for b in at.button if b.label == "Remove the demo").click().run()
    assert not at.exception and not at.error
    assert _rows()["case"] == 0
    with session() as s:
        audit = s.exec(select(AuditLog).where(AuditLog.action == "demo.remove")).one()
    assert audit.actor == "lead"
    assert "2 cases" in at.toast[0].value and "demo removed" in page_payload(at)
    assert "Remove the demo" not in [b.label for b in at.button]
