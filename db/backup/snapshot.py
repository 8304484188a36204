"""What one consistent view of the database holds that a backup needs: its Alembic revision,
the study's counts (`nmb status`) and the store paths of the images its series and masks
reference; and which revisions this code can restore."""

from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Connection, select, text
from sqlmodel import Session

from db.engine import HEAD_REVISION, MIGRATIONS
from db.models import Mask, Series
from db.status import counts
from errors import UserError


@dataclass(frozen=True)
class Snapshot:
    """The database's dump (`file`) and what the same view of it held."""

    file: Path
    revision: str
    counts: dict[str, int]
    images: list[str]


def describe(conn: Connection, file: Path) -> Snapshot:
    """Read on `conn`, inside the transaction (or copy) the dump `file` was taken from."""
    revision = conn.execute(text("SELECT version_num FROM alembic_version")).scalar_one()
    with Session(bind=conn) as s:
        got = counts(s)
    images = {*conn.execute(select(Series.path)).scalars(), *conn.execute(select(Mask.path)).scalars()}
    return Snapshot(file, revision, got, sorted(images))


def known_revisions() -> set[str]:
    return {p.name.split("_", 1)[0] for p in (MIGRATIONS / "versions").glob("[0-9]*_*.py")}


def check_revision(revision: str, label: str) -> None:
    """Refuse a backup of a revision this code does not know (a newer one: upgrade first)."""
    if revision in known_revisions():
        return
    if revision > HEAD_REVISION:
        raise UserError(f"{label}: made by a newer version (database revision {revision}; this "
                        f"code knows up to {HEAD_REVISION}): upgrade the app first")
    raise UserError(f"{label}: database revision {revision} is not one of this code's migrations")
