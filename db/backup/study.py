"""`nmb backup` and `nmb restore`: the whole study in one file, and back.

A backup holds one consistent view of the database (SQLite: the online backup API;
PostgreSQL: `pg_dump` of an exported snapshot), the images that view's series and masks
reference (`NMB_HOME/images/`), the frozen packages the app wrote (`NMB_HOME/packages/*.zip`)
and the manifest (`db.backup.archive`). The caches (`viewer/`, `key-slices/`, `cache/`) are
rebuilt on demand and are not in it.

A restore needs an empty study: no row in any table of the database but the Alembic revision
(the empty tables a start of the app created are fine), and no package in NMB_HOME of a name
the backup holds (an image of the same name has the same content: its name is its sha256).
Everything is checked and staged in a workspace under NMB_HOME/tmp before anything is placed:
the whole file (`read_backup`), the database's kind and revision (a newer revision than this
code refuses the file; an older one is migrated by the normal migrations), the database itself
(SQLite: integrity check and migration in the workspace; PostgreSQL: the dump's contents),
and every image path it stores (`snapshot.check_image_paths`: no absolute path, no climb out
of the study, a member of the backup or a regular file of the store, never a FIFO or a link).
Then the images and packages are moved into place and the database last (SQLite: one rename;
PostgreSQL: `pg_restore` in one transaction, then its functions and triggers checked and the
migrations run, its tables dropped again when either refuses it); if that fails, the files
placed are removed.
"""

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError

from db.backup import postgres, sqlite
from db.backup.archive import (
    DATABASE_MEMBER,
    FORMAT,
    Manifest,
    check_destination,
    member_problem,
    read_backup,
    write_backup,
)
from db.backup.snapshot import check_image_paths, check_revision, restored_counts
from db.bundle.store import Workspace
from db.engine import HEAD_REVISION, database_url, nmb_home, upgrade
from db.models import utcnow
from errors import UserError, counted, one_line

NOT_EMPTY = "the study here is not empty ({}): restore into an empty NMB_HOME and database"
ROWS = NOT_EMPTY.format("table {table} holds rows")


@dataclass(frozen=True)
class Restored:
    manifest: Manifest
    revision: str  # the database's revision now (the newest)
    counts: dict[str, int]  # what the restored database holds (`nmb status`)

    def __str__(self) -> str:
        m = self.manifest
        migrated = f", migrated to {self.revision}" if self.revision != m.revision else ""
        counts = ", ".join(counted(n, _singular(name), name.replace("_", " "))
                           for name, n in self.counts.items())
        return (f"restored a {m.database} study made {m.created_at:%Y-%m-%d %H:%M:%S %Z} "
                f"(revision {m.revision}{migrated}): {counts}")


def _singular(count_name: str) -> str:
    """The noun of one of `nmb status`'s counts: "expert_scores" -> "expert score"."""
    noun = count_name.replace("_", " ")
    return noun if noun == "series" else noun.removesuffix("s")


def database_kind(url: str) -> str:
    kind = make_url(url).get_backend_name()
    if kind not in DATABASE_MEMBER:
        raise UserError(f"backups cover SQLite and PostgreSQL, not {kind}")
    return kind


@contextlib.contextmanager
def _database_errors(what: str) -> Iterator[None]:
    """A database that cannot be reached or read is one line, not a traceback."""
    try:
        yield
    except SQLAlchemyError as e:
        raise UserError(f"{what}: {one_line(str(getattr(e, 'orig', None) or e), 300)}") from None


def _packages(home: Path) -> list[tuple[str, Path]]:
    folder = home / "packages"
    if not folder.is_dir():
        return []
    found = [(f"packages/{p.name}", p) for p in sorted(folder.iterdir())]
    return [(name, p) for name, p in found
            if not p.is_symlink() and p.is_file() and member_problem(name) is None]


def backup_study(out: Path) -> Manifest:
    """Write the study's backup to `out` (a new file); its manifest."""
    check_destination(out)
    url = database_url()
    kind = database_kind(url)
    home = nmb_home()
    with Workspace("backup") as ws, _database_errors("cannot read the study database"):
        snap = (sqlite if kind == "sqlite" else postgres).snapshot(url, ws.path / "database")
        members = [(DATABASE_MEMBER[kind], snap.file)]
        for rel in snap.images:
            if member_problem(rel):
                raise UserError(f"the database names an image outside the store ({rel!r}); "
                                "nothing was written")
            members.append((rel, home / rel))
        header = {"format": FORMAT, "created_at": utcnow().replace(microsecond=0),
                  "database": kind, "revision": snap.revision, "code_revision": HEAD_REVISION,
                  "counts": snap.counts}
        return write_backup(out, [*members, *_packages(home)], header)


def restore_study(path: Path) -> Restored:
    """Restore the backup at `path` into the empty study of NMB_HOME and the database URL."""
    try:
        manifest, counts = _restore(path)
    except UserError as e:
        raise UserError(f"{e}; nothing was restored") from None
    return Restored(manifest, HEAD_REVISION, counts)


def _rows_in(kind: str, url: str) -> str | None:
    with _database_errors("cannot read the study database"):
        return (sqlite if kind == "sqlite" else postgres).rows_in(url)


def _place(staged: Path, home: Path, name: str, placed: list[Path]) -> None:
    """Move member `name` from `staged` into `home`, adding it to `placed` when it was not
    there."""
    target = home / name
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists():
            placed.append(target)
        os.replace(staged / name, target)
    except OSError as e:
        raise UserError(f"cannot place {name} in NMB_HOME: {e.strerror or e}") from None


def _check_and_migrate_restored(url: str, manifest: Manifest, label: str) -> dict[str, int]:
    """Check the restored PostgreSQL database's functions and triggers, migrate it to the
    newest revision and check its counts and image paths, or drop what was restored when one
    refuses it; the counts."""
    try:
        with _database_errors("cannot read the restored database"):
            if why := postgres.restored_problem(url):
                raise UserError(f"{label}: the database dump {why}")
        with _database_errors(f"{label}: the database cannot be migrated to {HEAD_REVISION}"):
            upgrade(url)
        with _database_errors("cannot read the restored database"):
            check_image_paths(url, {m.name for m in manifest.members}, nmb_home(), label)
            return restored_counts(url, manifest.counts, label)
    except BaseException:
        with _database_errors("cannot drop the restored tables either"):
            postgres.empty(url)
        raise


def _restore(path: Path) -> tuple[Manifest, dict[str, int]]:
    url = database_url()
    kind = database_kind(url)
    home = nmb_home()
    label = path.name
    if table := _rows_in(kind, url):
        raise UserError(ROWS.format(table=table))
    with Workspace("restore") as ws:
        staged = ws.path / "backup"
        manifest = read_backup(path, staged)
        if manifest.database != kind:
            raise UserError(f"{label} is a backup of a {manifest.database} study, and the database "
                            f"here is {kind} (NMB_DATABASE_URL)")
        check_revision(manifest.revision, label)
        if kept := next((m.name for m in manifest.members
                         if m.name.startswith("packages/") and (home / m.name).exists()), None):
            raise UserError(NOT_EMPTY.format(f"NMB_HOME holds {kept}"))
        dump = staged / DATABASE_MEMBER[kind]
        placed: list[Path] = []
        try:
            if kind == "sqlite":
                with _database_errors(f"{label}: the database cannot be migrated to "
                                      f"{HEAD_REVISION}"):
                    sqlite.prepare(dump, manifest.revision, label)
                with _database_errors(f"{label}: cannot read the database"):
                    check_image_paths(f"sqlite:///{dump}", {m.name for m in manifest.members},
                                      home, label)
                    counts = restored_counts(f"sqlite:///{dump}", manifest.counts, label)
            else:
                postgres.check_dump(dump, label)
            for m in manifest.members:
                if m.name.startswith(("images/", "packages/")):
                    _place(staged, home, m.name, placed)
            with _database_errors("cannot restore the database"):
                if kind == "sqlite":
                    if table := _rows_in(kind, url):  # written to while the file was checked
                        raise UserError(ROWS.format(table=table))
                    sqlite.install(dump, url)
                else:
                    postgres.restore(dump, url, ROWS, manifest.revision, label)
            if kind == "postgresql":  # (SQLite: the copy was migrated before it was placed)
                counts = _check_and_migrate_restored(url, manifest, label)
        except BaseException:
            for p in placed:
                p.unlink(missing_ok=True)
            raise
    return manifest, counts
