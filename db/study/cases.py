"""Cases as the viewer needs them: record, scores, ground truth and stored series paths."""

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import func
from sqlmodel import Session, select

from db.engine import nmb_home
from db.models import Case, Series, Setting, Task
from errors import UserError

# The name in the demo bundle's bundle.json (demo.bundle), recorded on each of its cases.
DEMO_BUNDLE = "Neural-MedBench synthetic demo"


@dataclass
class CaseView:
    case_id: str
    title: str
    ehr: str
    scores: dict[str, float]
    ground_truth: dict[str, Any] | None  # None: no reference answer yet
    series: list[tuple[str, Path]]
    key_slices: list[dict[str, Any]] = field(default_factory=list)  # the slices models see
    opening_view: dict[str, Any] | None = None  # where the viewer opens (imaging.opening_view)


def reference_fields(ground_truth: dict[str, Any] | None) -> list[tuple[str, str]]:
    """The reference answer as labelled text fields, in one order for the scoring page and the
    grader prompt (`differential` joined with "; "); `lesion` and `reasoning` only when the
    answer has them (both are optional). No fields when there is no reference answer."""
    if not ground_truth:
        return []
    fields = [("Final diagnosis", ground_truth.get("final_diagnosis", "")),
              ("Differential", "; ".join(ground_truth.get("differential", [])))]
    return fields + [(label, ground_truth[key]) for label, key in
                     (("Lesion", "lesion"), ("Reasoning", "reasoning")) if key in ground_truth]


def task_list(s: Session) -> list[Task]:
    return list(s.exec(select(Task).order_by(Task.task_id)))


class SeriesImage(tuple):
    """(sequence, absolute path of the stored image): a pair, as every caller unpacks it,
    that also says whether the series is a picture (`picture`, `caption`, `plane`) and the
    sha256 stored for its file (`sha256`; None where not read from the database), so that
    serving it needs no second hash of the file."""

    picture: bool
    caption: str | None
    plane: str | None
    sha256: str | None

    def __new__(cls, sequence: str, path: Path, *, picture: bool = False,
                caption: str | None = None, plane: str | None = None,
                sha256: str | None = None) -> "SeriesImage":
        self = super().__new__(cls, (sequence, path))
        self.picture, self.caption, self.plane, self.sha256 = picture, caption, plane, sha256
        return self

    def __reduce__(self) -> tuple:
        return (_series_image, (self[0], self[1], self.picture, self.caption, self.plane,
                                self.sha256))


def _series_image(sequence: str, path: Path, picture: bool, caption: str | None,
                  plane: str | None, sha256: str | None = None) -> SeriesImage:
    return SeriesImage(sequence, path, picture=picture, caption=caption, plane=plane,
                       sha256=sha256)


def case_series(s: Session, case_id: str) -> list[tuple[str, Path]]:
    """(sequence, absolute path of the stored image) of a case's series, in bundle order, as
    `SeriesImage`s (pictures say so; each keeps its stored sha256)."""
    home = nmb_home()
    return [SeriesImage(x.sequence, home / x.path, picture=x.picture, caption=x.caption,
                        plane=x.plane, sha256=x.sha256)
            for x in s.exec(select(Series).where(Series.case_id == case_id)
                            .order_by(Series.position))]


def case_view(s: Session, *, case_id: str) -> CaseView:
    case = s.get(Case, case_id)
    if case is None:
        raise UserError(f"no case {case_id!r}")
    return CaseView(case.case_id, case.title, case.ehr, case.scores or {}, case.ground_truth,
                    case_series(s, case_id), list(case.key_slices or []), case.opening_view)


@dataclass(frozen=True)
class DemoShare:
    demo_cases: int
    cases: int


def count_demo_cases(s: Session) -> DemoShare:
    """How many of the study's cases are the synthetic demo's: cases of the demo bundle, in a
    study where `nmb demo` has run (its `demo` setting), so a real bundle that borrows the
    demo's name does not count, nor does a demo whose cases were deleted."""
    cases = s.exec(select(func.count()).select_from(Case)).one()
    flag = s.get(Setting, "demo")
    demo = (s.exec(select(func.count()).select_from(Case).where(Case.bundle == DEMO_BUNDLE)).one()
            if flag is not None and flag.value == "1" else 0)
    return DemoShare(demo, cases)
