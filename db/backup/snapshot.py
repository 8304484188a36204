"""What one consistent view of the database holds that a backup needs: its Alembic revision,
the study's counts (`nmb status`) and the store paths of the images its series and masks
reference; which revisions this code can restore; and the counts and image paths of a restored
database, checked against the manifest's and the image store."""

from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Connection, create_engine, select, text
from sqlmodel import Session

from db.bundle.store import stored_file_problem, stored_path_problem
from db.engine import HEAD_REVISION, MIGRATIONS
from db.models import Mask, Series
from db.status import counts
from errors import UserError, escape_unprintable, one_line


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


def restored_counts(url: str, said: dict[str, int], label: str) -> dict[str, int]:
    """The study's counts in the restored (and migrated) database at `url`; a count the
    manifest `said` otherwise refuses the file (one this code does not count is ignored). A
    plain engine: the app's would turn a SQLite file to WAL."""
    engine = create_engine(url)
    try:
        with Session(engine) as s:
            got = counts(s)
    finally:
        engine.dispose()
    for name, n in said.items():
        if name in got and got[name] != n:
            raise UserError(f"{label}: the database holds {got[name]:,} {name.replace('_', ' ')}, "
                            f"manifest.json says {n:,}")
    return got


def check_image_paths(url: str, members: set[str], home: Path, label: str) -> None:
    """Refuse the restored database at `url` when a series or mask names an image path that
    is absolute, climbs out of the study, is outside `images/`, or is neither a member of the
    backup (`members`) nor a regular file already in `home`'s store (a FIFO an open would
    block on, a link, a device): the viewer would otherwise open it. One line naming the path."""
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            paths = {*conn.execute(select(Series.path)).scalars(),
                     *conn.execute(select(Mask.path)).scalars()}
    finally:
        engine.dispose()
    for rel in sorted(paths):
        why = stored_path_problem(rel)
        if why is None and rel not in members:
            why = stored_file_problem(rel, home) or (
                None if (home / rel).exists() else "is not in the backup")
        if why:
            shown = one_line(escape_unprintable(repr(rel)), 160)
            raise UserError(f"{label}: the database names the image {shown}, which {why}")
