"""Who may see which stored image: the one rule the volume route asks on every request.

- admin: every series and mask;
- expert: the series of the cases of the responses assigned to them, and a case's masks only
  where one of those responses answers a task with `show_masks` (a mask is ground truth);
- physician, student: the series of the cases of the exams they have not finished; never a
  mask;
- anyone else, and a disabled account: nothing.

The rule is asked again on every request, so a withdrawn assignment or a finished exam ends
access at once. Images are named by the sha256 of the stored file; the same content stored for
two cases is one image, visible if either case is. A stored path that is absolute, climbs out
of the study or names no regular file (a database restored from elsewhere is untrusted) is
never returned (`db.bundle.store.stored_file_problem`).
"""

from pathlib import Path

from sqlmodel import Session, select

from db.bundle.store import stored_file_problem
from db.engine import nmb_home
from db.models import Assignment, Exam, ExamAttempt, Mask, Response, Series, Task, User


def _assigned_cases(user_id: int):
    return (select(Task.case_id).join(Response, Response.task_id == Task.task_id)
            .join(Assignment, Assignment.response_id == Response.response_id)
            .where(Assignment.rater_id == user_id))


def _exam_cases(s: Session, user_id: int) -> set[str]:
    finished = set(s.exec(select(ExamAttempt.exam_id).where(
        ExamAttempt.user_id == user_id, ExamAttempt.finished_at.is_not(None))))
    task_ids = {t for exam in s.exec(select(Exam)) if exam.id not in finished
                for t in exam.task_ids}
    if not task_ids:
        return set()
    return set(s.exec(select(Task.case_id).where(Task.task_id.in_(task_ids))))


def viewable_image(s: Session, *, user: User, sha256: str) -> Path | None:
    """The stored file of image `sha256` if `user` may see it, else None."""
    if user.disabled:
        return None
    series = select(Series.path).where(Series.sha256 == sha256)
    masks = select(Mask.path).where(Mask.sha256 == sha256)
    if user.role == "admin":
        pass
    elif user.role == "expert":
        cases = _assigned_cases(user.id)
        series = series.where(Series.case_id.in_(cases))
        masks = masks.where(Mask.case_id.in_(cases.where(Task.show_masks.is_(True))))
    elif user.role in ("physician", "student"):
        series = series.where(Series.case_id.in_(_exam_cases(s, user.id)))
        masks = None
    else:
        return None
    path = s.exec(series.limit(1)).first()
    if path is None and masks is not None:
        path = s.exec(masks.limit(1)).first()
    if path is None or stored_file_problem(path, nmb_home()):
        return None
    return nmb_home() / path
