"""A case's lesion masks as the viewer needs them, and the one rule of who may see them.

Masks are ground truth (where the lesion is): the admin case browser shows them; `/score`
shows them only for tasks whose bundle set `show_masks` (`masks_for_task`); an exam never
does (its pages do not call this module).
"""

from dataclasses import dataclass
from pathlib import Path

from sqlmodel import Session, select

from db.engine import nmb_home
from db.models import Mask, Task


@dataclass(frozen=True)
class MaskImage:
    """A stored mask: its label, absolute path, and the series it is drawn on (None: all);
    `sha256` as stored for its file (None where not read from the database)."""

    label: str
    path: Path
    series: str | None
    sha256: str | None = None


def case_masks(s: Session, *, case_id: str) -> list[MaskImage]:
    """The masks of a case, in bundle order."""
    home = nmb_home()
    rows = s.exec(select(Mask).where(Mask.case_id == case_id).order_by(Mask.position))
    return [MaskImage(m.label, home / m.path, m.series, m.sha256) for m in rows]


def masks_for_task(s: Session, *, task: Task) -> list[MaskImage]:
    """The masks an expert scoring an answer to `task` sees: the case's, if the task allows."""
    return case_masks(s, case_id=task.case_id) if task.show_masks else []
