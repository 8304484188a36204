"""A case's opening view: set by an admin ("use this view" on /admin), listed where missing.

The view is what the viewer showed: plane, world point (scanner mm) and layout
(`imaging.opening_view`). It replaces the bundle's hanging protocol, if any (a later import of
the same bundle keeps it: `db.bundle.importer`); every change is in the audit log with the view
before it.
"""

from __future__ import annotations

import math
from typing import Any

from sqlmodel import Session, select

from db import audit
from db.models import Case
from errors import UserError
from imaging.opening_view import LAYOUTS, VIEW_PLANES


def set_opening_view(s: Session, *, case_id: str, plane: str, mm: list[float],
                     layout: str | None = None, actor: str | None) -> str:
    """Store the view `plane`/`mm`/`layout` as where `case_id` opens (audited, in the caller's
    transaction); the confirmation line. UserError for an unknown case or a view that is none."""
    case = s.get(Case, case_id)
    if case is None:
        raise UserError(f"no case {case_id!r}")
    if plane not in VIEW_PLANES:
        raise UserError(f"plane {plane!r} is not one of {', '.join(VIEW_PLANES)}")
    if layout is not None and layout not in LAYOUTS:
        raise UserError(f"layout {layout!r} is not one of {', '.join(LAYOUTS)}")
    if len(mm) != 3 or not all(isinstance(v, int | float) and math.isfinite(v) for v in mm):
        raise UserError(f"the view's point {mm!r} is not three finite numbers (mm)")
    view: dict[str, Any] = {"plane": plane, "mm": [round(float(v), 3) for v in mm],
                            "source": "admin"}
    if layout:
        view["layout"] = layout
    before = case.opening_view
    case.opening_view = view
    s.add(case)
    audit.record(s, "case.opening_view", actor=actor, case_id=case_id, view=view, before=before)
    x, y, z = view["mm"]
    return (f"Case {case_id} now opens {plane} at x {x:.1f}, y {y:.1f}, z {z:.1f} mm"
            + (f", layout {layout}" if layout else "") + ".")


def cases_without_view(s: Session) -> list[str]:
    """The ids of the cases with no opening view of their own (neither a hanging protocol nor
    an admin's): they open at their key slices, lesion mask or the family's plane."""
    return list(s.exec(select(Case.case_id).where(Case.opening_view.is_(None))  # type: ignore[union-attr]
                       .order_by(Case.case_id)))
