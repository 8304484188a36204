"""Who may see which stored image (`db.study.image_access`), on SQLite and PostgreSQL."""

from sqlmodel import Session, select

from db.engine import engine_for, nmb_home
from db.models import Assignment, AssignmentDesign, ExamAttempt, Mask, Series, Task, User, utcnow
from db.rubrics import ensure_rubric
from db.study.exams import attempt_for, ensure_exam
from db.study.image_access import viewable_image
from db.users import add_user, disable_user
from tests.factories import make_study

SERIES = {"case0": "a" * 64, "case1": "b" * 64, "case2": "e" * 64}
MASKS = {"case0": "c" * 64, "case1": "d" * 64}


def _study(s: Session) -> dict[str, User]:
    """case0 (task0 shows masks) and case1 assigned to expert1; an exam of task2 only."""
    make_study(s, n_tasks=3, experts=2)
    for case_id, sha in SERIES.items():
        s.add(Series(case_id=case_id, position=0, sequence="T1", path=f"images/{sha}.nii",
                     sha256=sha, shape=[2, 2, 2], voxel_sizes=[1.0, 1.0, 1.0]))
    for case_id, sha in MASKS.items():
        s.add(Mask(case_id=case_id, position=0, label="lesion", path=f"images/{sha}.nii",
                   sha256=sha, shape=[2, 2, 2], voxel_sizes=[1.0, 1.0, 1.0]))
    s.get(Task, "task0").show_masks = True
    design = AssignmentDesign(rubric_hash=ensure_rubric(s, "neurology-v1").content_hash,
                              selection="all", overlap=1, seed=0)
    s.add(design)
    s.flush()
    expert = s.exec(select(User).where(User.name == "expert1")).one()
    for position, rid in enumerate(["r0-model-alpha-0", "r1-model-alpha-0"]):
        s.add(Assignment(design_id=design.id, rater_id=expert.id, response_id=rid,
                         position=position))
    users = {"expert": expert,
             "other_expert": s.exec(select(User).where(User.name == "expert2")).one(),
             "admin": add_user(s, name="boss", role="admin", password="pw"),
             "student": add_user(s, name="stu", role="student", password="pw"),
             "physician": add_user(s, name="doc", role="physician", password="pw")}
    ensure_exam(s, name="baseline", task_ids=["task2"])
    s.commit()
    return users


def _visible(s: Session, user: User) -> set[str]:
    return {sha for sha in [*SERIES.values(), *MASKS.values()]
            if viewable_image(s, user=user, sha256=sha) is not None}


def test_each_role_sees_exactly_its_images(database_url: str) -> None:
    with Session(engine_for(database_url)) as s:
        u = _study(s)
        assert _visible(s, u["admin"]) == {*SERIES.values(), *MASKS.values()}
        # the assigned cases, and the mask of case0 only: task1 does not show masks
        assert _visible(s, u["expert"]) == {SERIES["case0"], SERIES["case1"], MASKS["case0"]}
        assert _visible(s, u["other_expert"]) == set()
        for taker in ("student", "physician"):  # the exam's case, never a mask
            assert _visible(s, u[taker]) == {SERIES["case2"]}
        assert viewable_image(s, user=u["admin"], sha256="f" * 64) is None  # not stored
        assert viewable_image(s, user=u["admin"], sha256=SERIES["case0"]) == (
            nmb_home() / "images" / f"{SERIES['case0']}.nii")


def test_access_ends_with_the_exam_the_assignment_or_the_account(database_url: str) -> None:
    with Session(engine_for(database_url)) as s:
        u = _study(s)
        attempt = attempt_for(s, exam_id=ensure_exam(s, name="baseline").id,
                              user_id=u["student"].id)
        s.get(ExamAttempt, attempt.id).finished_at = utcnow()
        s.commit()
        assert _visible(s, u["student"]) == set()
        assert _visible(s, u["physician"]) == {SERIES["case2"]}  # still taking it
        for a in s.exec(select(Assignment).where(Assignment.response_id == "r0-model-alpha-0")):
            s.delete(a)
        s.commit()
        assert _visible(s, u["expert"]) == {SERIES["case1"]}
        disable_user(s, name="doc")
        s.commit()
        assert _visible(s, s.get(User, u["physician"].id)) == set()


def test_a_stored_path_outside_the_store_or_not_a_regular_file_is_never_returned(
        sqlite_url: str) -> None:
    """A database restored from elsewhere may point a series anywhere: the admin, who may see
    every image, is handed none of these (the volume route then answers 403)."""
    import os

    hostile = {"1" * 64: "/etc/hostname", "2" * 64: "images/../../etc/hostname",
               "3" * 64: f"images/{'3' * 64}.nii"}  # a FIFO: an open would block
    (nmb_home() / "images").mkdir(parents=True)
    os.mkfifo(nmb_home() / hostile["3" * 64])
    with Session(engine_for(sqlite_url)) as s:
        u = _study(s)
        for k, (sha, path) in enumerate(hostile.items(), start=1):
            s.add(Series(case_id="case0", position=k, sequence=f"T{k + 1}", path=path,
                         sha256=sha, shape=[2, 2, 2], voxel_sizes=[1.0, 1.0, 1.0]))
        s.commit()
        assert [viewable_image(s, user=u["admin"], sha256=sha) for sha in hostile] == [None] * 3
        assert viewable_image(s, user=u["admin"], sha256=SERIES["case0"]) is not None
