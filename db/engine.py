"""Where the study lives: `NMB_HOME`, `NMB_DATABASE_URL`, the engine, and migrations.

The default database is a SQLite file under `NMB_HOME` (default `.nmb/` in the working
directory) with WAL, a busy timeout and foreign keys on; every transaction on it begins with
`BEGIN IMMEDIATE` (a person's write also waits and retries while it is busy: db.busy).
`postgresql+psycopg://...` works the same. Migrations (Alembic) are applied by `upgrade()`; the
app, the CLI and `nmb db upgrade` start with `db.bundle.store.prepare_study`, which also sweeps
what killed imports left.
"""

import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any

from sqlalchemy import event, text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import ArgumentError, SQLAlchemyError
from sqlmodel import Session, create_engine

from db.text_limits import UNSTORABLE, storable
from errors import UserError, one_line

MIGRATIONS = Path(__file__).parent / "migrations"
HEAD_REVISION = "0024"  # the newest migration (a test checks it against db/migrations)
BUSY_TIMEOUT_MS = 30_000  # SQLite: how long a transaction waits for the write lock


def nmb_home() -> Path:
    home = Path(os.environ.get("NMB_HOME", ".nmb")).resolve()
    try:
        home.mkdir(parents=True, exist_ok=True)
    except OSError as e:  # a file, a folder under a file, a place no folder can be made
        raise UserError(f"NMB_HOME {one_line(str(home), 200)} cannot be the study's folder: "
                        f"{e.strerror}") from None
    return home


def database_url() -> str:
    return os.environ.get("NMB_DATABASE_URL") or f"sqlite:///{nmb_home() / 'study.db'}"


def _sqlite_pragmas(dbapi_conn, _record) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.close()


_waiting = threading.local()


@contextmanager
def attempt_wait(seconds: float) -> Iterator[None]:
    """SQLite transactions this thread begins in the block wait at most `seconds` for the write
    lock, not `BUSY_TIMEOUT_MS` (db.busy: an attempt of a person's write, retried after)."""
    _waiting.ms = max(1, round(seconds * 1000))
    try:
        yield
    finally:
        del _waiting.ms


def _begin_immediate(conn) -> None:
    """Begin with the write lock (https://www.sqlite.org/lang_transaction.html): a transaction
    that began deferred, read, then writes gets SQLITE_BUSY at once when another wrote
    meanwhile, whatever the busy timeout (the busy handler is not called where waiting could
    deadlock: https://www.sqlite.org/c3ref/busy_handler.html), and in WAL mode it could not
    succeed anyway (SQLITE_BUSY_SNAPSHOT). Its wait: `attempt_wait`'s, else BUSY_TIMEOUT_MS."""
    conn.exec_driver_sql(f"PRAGMA busy_timeout={getattr(_waiting, 'ms', BUSY_TIMEOUT_MS)}")
    conn.exec_driver_sql("BEGIN IMMEDIATE")


def _storable(value: Any) -> Any:
    """A statement's parameters (a value, or a dict, list or tuple of them) with their text
    made `storable`."""
    if isinstance(value, str):
        unstorable = "\x00" in value or (not value.isascii() and UNSTORABLE.search(value))
        return storable(value) if unstorable else value
    if isinstance(value, dict):
        return {k: _storable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_storable(v) for v in value)
    return value


def _storable_parameters(_conn, _cursor, statement, parameters, _context, _executemany):
    """Every text written becomes storable on its way to the database, the same on both: a NUL
    in a model's answer or in typed text would otherwise stop the write on PostgreSQL alone."""
    return statement, _storable(parameters)


@cache
def engine_for(url: str) -> Engine:
    """One engine per URL per process (engines are thread-safe and pool connections)."""
    try:
        eng = _create_engine(url)
    except (ArgumentError, ValueError, ImportError):  # no URL, a port that is no number, a
        # dialect or driver not installed (as deploy/wait_for_database.py; the URL is not shown:
        # it may hold a password)
        raise UserError("NMB_DATABASE_URL is not a database URL (e.g. "
                        "postgresql+psycopg://nmb@db.example/study)") from None
    event.listen(eng, "before_cursor_execute", _storable_parameters, retval=True)
    return eng


def _create_engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        eng = create_engine(url, connect_args={"check_same_thread": False,
                                                  "timeout": BUSY_TIMEOUT_MS / 1000})
        event.listen(eng, "connect", _sqlite_pragmas)
        # Take over pysqlite's transaction handling: every transaction starts with BEGIN IMMEDIATE,
        # so two writers queue on the busy timeout instead of failing on a lock upgrade.
        event.listen(eng, "begin", _begin_immediate)

        @event.listens_for(eng, "connect")
        def _no_autobegin(dbapi_conn, _record) -> None:
            dbapi_conn.isolation_level = None

    else:
        eng = create_engine(url, pool_pre_ping=True)
    return eng


def get_engine() -> Engine:
    return engine_for(database_url())


def session() -> Session:
    """A new session; use as `with session() as s:`. Objects stay usable after commit."""
    return Session(get_engine(), expire_on_commit=False)


def snapshot() -> Session:
    """A session for reading only, whose reads all see one state of the study. On PostgreSQL a
    REPEATABLE READ, READ ONLY transaction: under the default READ COMMITTED each statement sees
    what committed before it, so results or an export read while a grader run commits (every
    quarter second) or an import lands mixed two states. SQLite's transactions read one state
    already (each begins IMMEDIATE)."""
    engine = get_engine()
    if engine.dialect.name == "postgresql":
        engine = engine.execution_options(isolation_level="REPEATABLE READ",
                                          postgresql_readonly=True)
    return Session(engine, expire_on_commit=False)


def alembic_config(url: str | None = None):
    from alembic.config import Config

    cfg = Config(stdout=sys.stdout)  # now: Config's default is sys.stdout at import time
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.set_main_option("sqlalchemy.url", (url or database_url()).replace("%", "%%"))
    return cfg


def current_revision(url: str | None = None) -> str | None:
    """The migration the database is at; None when it cannot be reached or has none yet."""
    try:
        with engine_for(url or database_url()).connect() as conn:
            return conn.execute(text("SELECT version_num FROM alembic_version")).scalar()
    except SQLAlchemyError:  # no database or no alembic table yet
        return None


def _known_revisions(url: str) -> set[str]:
    from alembic.script import ScriptDirectory

    return {r.revision for r in ScriptDirectory.from_config(alembic_config(url)).walk_revisions()}


def upgrade(url: str | None = None) -> None:
    """Create or migrate the database to the newest revision (a quick no-op when it is there).
    A database at a revision this code does not know (written by a newer version) is refused
    with a UserError and left unchanged: there is no downgrade. The app and the CLI start with
    `db.bundle.store.prepare_study`, which also sweeps what killed imports left."""
    url = url or database_url()
    current = current_revision(url)
    if current == HEAD_REVISION:
        return
    if current is not None and current not in _known_revisions(url):
        raise UserError(f"the database is at revision {current[:40]!r}, newer than this version "
                        f"of the app (newest {HEAD_REVISION}): a downgrade is refused; run the newer "
                        "version, or restore a backup taken before the upgrade")
    from alembic import command

    command.upgrade(alembic_config(url), "head")
