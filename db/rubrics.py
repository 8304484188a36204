"""Rubrics in the database: stored once by content hash, loaded back from their source."""

from functools import lru_cache

from sqlmodel import Session, select

from db.audit import record
from db.locks import take_turns
from db.models import AssignmentDesign
from db.models import Rubric as RubricRow
from errors import UserError
from rubric import DEFAULT_RUBRIC, Rubric
from rubric.loader import load_rubric, loads_rubric


def store_rubric(s: Session, rubric: Rubric, *, actor: str | None = None) -> RubricRow:
    """The row of this rubric, added if its content hash is new (two sessions adding it at once
    take turns: the second finds the first's)."""
    q = select(RubricRow).where(RubricRow.content_hash == rubric.content_hash)
    row = s.exec(q).first()
    if row is None:
        take_turns(s, "rubrics")
        row = s.exec(q).first()
    if row is None:
        row = RubricRow(rubric_id=rubric.id, version=rubric.version,
                        content_hash=rubric.content_hash, source_text=rubric.source_text)
        s.add(row)
        s.flush()
        record(s, "rubric.add", actor=actor, rubric=rubric.id, hash=rubric.content_hash)
    return row


def ensure_rubric(s: Session, name_or_path: str, *, actor: str | None = None) -> Rubric:
    rubric = load_rubric(name_or_path)
    store_rubric(s, rubric, actor=actor)
    return rubric


@lru_cache(maxsize=16)
def _parse(text: str) -> Rubric:
    return loads_rubric(text, source="database")


def rubric_by_hash(s: Session, content_hash: str) -> Rubric:
    row = s.exec(select(RubricRow).where(RubricRow.content_hash == content_hash)).first()
    if row is None:
        raise UserError(f"no rubric with hash {content_hash[:12]}")
    return _parse(row.source_text)


def rubric_in_force(s: Session, *, actor: str | None = None) -> Rubric:
    """The study's rubric: that of the newest assignment design (the one raters score with now),
    else `DEFAULT_RUBRIC`, stored if new (`nmb assign` without --rubric, /admin's Assign,
    `nmb import-scores`)."""
    newest = s.exec(select(AssignmentDesign.rubric_hash)
                    .order_by(AssignmentDesign.id.desc())).first()
    return rubric_by_hash(s, newest) if newest else ensure_rubric(s, DEFAULT_RUBRIC, actor=actor)
