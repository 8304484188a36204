"""SQLite: an online copy with SQLite's backup API, and its restore by renaming into place.

`sqlite3.Connection.backup` copies every page in one step under one read transaction, so the
copy is consistent while the app keeps writing (WAL). A restored file is untrusted, as a
PostgreSQL dump is: it is checked (`PRAGMA integrity_check`, its revision, its schema against
a scratch database the migrations build to the same revision: the same tables, indexes,
triggers and views by name, the triggers and views word for word, so no trigger of its own
rides along and the audit log's stay) and migrated to the newest revision in the restore's
workspace, then renamed over the target; the target's stale `-wal` and `-shm` files go first,
since SQLite would otherwise replay them onto the new file.
"""

import errno
import os
import shutil
import sqlite3
import uuid
from pathlib import Path

from sqlalchemy import create_engine
from sqlalchemy.engine import make_url

from db.backup.snapshot import Snapshot, describe
from db.engine import alembic_config, engine_for, upgrade
from errors import UserError


def sqlite_path(url: str) -> Path:
    name = make_url(url).database
    if not name or name == ":memory:" or name.startswith("file:"):
        raise UserError(f"cannot back up or restore the SQLite database {url!r}: not a file")
    return Path(name).resolve()


def snapshot(url: str, dest: Path) -> Snapshot:
    """Copy the database at `url` into `dest` (a new file) and describe the copy."""
    path = sqlite_path(url)
    if not path.is_file():
        raise UserError(f"no study database at {path}: nothing to back up")
    try:
        src = sqlite3.connect(path, timeout=30)
        copy = sqlite3.connect(dest)
        try:
            src.backup(copy)
            copy.execute("PRAGMA journal_mode=DELETE")  # one self-contained file
        finally:
            copy.close()
            src.close()
    except sqlite3.Error as e:
        raise UserError(f"cannot back up the database at {path}: {e}") from None
    engine = create_engine(f"sqlite:///{dest}")
    try:
        with engine.connect() as conn:
            return describe(conn, dest)
    finally:
        engine.dispose()


def rows_in(url: str) -> str | None:
    """A table holding rows other than the Alembic revision (the first, by name), or None when
    the database is empty or not there yet."""
    path = sqlite_path(url)
    if not path.exists():
        return None
    try:
        conn = sqlite3.connect(path, timeout=30)
        try:
            tables = [t for (t,) in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name != 'alembic_version'"
                " AND name NOT LIKE 'sqlite_%' ORDER BY name")]
            return next((t for t in tables if conn.execute(
                'SELECT 1 FROM "{}" LIMIT 1'.format(t.replace('"', '""'))).fetchone()), None)
        finally:
            conn.close()
    except sqlite3.Error as e:
        raise UserError(f"cannot read the database at {path}: {e}") from None


def prepare(staged: Path, revision: str, label: str) -> None:
    """Check the backup's database file (extracted into a workspace) and migrate it to the
    newest revision in place (a row that a newer check constraint refuses raises SQLAlchemy's
    error)."""
    try:
        conn = sqlite3.connect(staged)
        try:
            checked = conn.execute("PRAGMA integrity_check").fetchone()[0]
            found = conn.execute("SELECT version_num FROM alembic_version").fetchone()
        finally:
            conn.close()
        if checked != "ok":
            raise UserError(f"{label}: the database fails SQLite's integrity check ({checked})")
        if found is None or found[0] != revision:
            raise UserError(f"{label}: the database's revision is {found and found[0]}, the "
                            f"manifest says {revision}")
        if why := _schema_problem(staged, revision):
            raise UserError(f"{label}: the database {why}")
        url = f"sqlite:///{staged}"
        upgrade(url)
        engine_for(url).dispose()
        conn = sqlite3.connect(staged)
        conn.execute("PRAGMA journal_mode=DELETE")  # folds the WAL in: one file to move
        conn.close()
    except sqlite3.Error as e:
        raise UserError(f"{label}: the database is not a readable SQLite study ({e})") from None


def _schema(path: Path) -> dict[tuple[str, str], str]:
    """{(type, name): its SQL, whitespace folded} of every object but SQLite's own."""
    conn = sqlite3.connect(path)
    try:
        return {(kind, name): " ".join((sql or "").split()) for kind, name, sql in conn.execute(
            "SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'")}
    finally:
        conn.close()


def _schema_problem(staged: Path, revision: str) -> str | None:
    """What `staged` holds or lacks against the migrations to `revision` (module docstring), or
    None. A table's or an index's SQL may differ in form (the SQLAlchemy of the day renders it)."""
    from alembic import command

    reference = staged.with_name("migrations.sqlite")
    url = f"sqlite:///{reference}"
    command.upgrade(alembic_config(url), revision)
    engine_for(url).dispose()
    want, got = _schema(reference), _schema(staged)
    extra = sorted(got.keys() - want.keys())
    missing = sorted(want.keys() - got.keys())
    changed = [k for k in sorted(want.keys() & got.keys())
               if k[0] in ("trigger", "view") and want[k] != got[k]]
    if extra:
        return f"holds {_named(extra[0])}, which a study's migrations never create"
    if missing:
        return f"lacks {_named(missing[0])}, which the migrations create"
    if changed:
        return f"holds {_named(changed[0])} other than the migrations write it"
    return None


def _named(key: tuple[str, str]) -> str:
    return f"{key[0]} {key[1][:60]!r}"


def install(ready: Path, url: str) -> None:
    """Move the prepared file over the target (empty, checked by the caller): a rename, or
    across file systems a copy beside the target, then a rename."""
    target = sqlite_path(url)
    engine_for(url).dispose()
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        for suffix in ("-wal", "-shm"):
            Path(f"{target}{suffix}").unlink(missing_ok=True)
        try:
            os.replace(ready, target)
        except OSError as e:
            if e.errno != errno.EXDEV:
                raise
            beside = target.with_name(f".{target.name}.restore-{uuid.uuid4().hex}")
            try:
                shutil.copyfile(ready, beside)
                os.replace(beside, target)
            finally:
                beside.unlink(missing_ok=True)
    except OSError as e:
        raise UserError(f"cannot restore the database at {target}: {e.strerror or e}") from None
