"""The measuring tools the study's viewer offers (the ruler, the circular ROI): a study-wide
`Setting`, both on until an admin turns them off (a study that shows readers what a model is
shown may want none). Every change is audited with the tools before it."""

from __future__ import annotations

from collections.abc import Sequence

from sqlmodel import Session

from db import audit
from db.models import Setting
from errors import UserError

TOOLS = ("ruler", "roi")
_KEY = "viewer_tools"


def viewer_tools(s: Session) -> tuple[str, ...]:
    """The tools offered, in `TOOLS` order (all of them until set)."""
    row = s.get(Setting, _KEY)
    if row is None:
        return TOOLS
    chosen = set(row.value.split(","))
    return tuple(t for t in TOOLS if t in chosen)


def set_viewer_tools(s: Session, tools: Sequence[str], *, actor: str | None) -> str:
    """Offer exactly `tools` (audited, in the caller's transaction); the confirmation line.
    UserError for a tool that is not one of `TOOLS`."""
    unknown = [t for t in tools if t not in TOOLS]
    if unknown:
        raise UserError(f"unknown viewer tool {unknown[0]!r} (tools: {', '.join(TOOLS)})")
    before = viewer_tools(s)
    chosen = tuple(t for t in TOOLS if t in tools)
    row = s.get(Setting, _KEY) or Setting(key=_KEY)
    row.value = ",".join(chosen)
    s.add(row)
    audit.record(s, "viewer.tools", actor=actor, tools=list(chosen), before=list(before))
    return f"The viewer offers: {', '.join(chosen) or 'no measuring tool'}."
