"""Where the study lives: `NMB_HOME`, `NMB_DATABASE_URL`, the engine, and migrations.

The default database is a SQLite file under `NMB_HOME` (default `.nmb/` in the working
directory) with WAL, a busy timeout and foreign keys on. `postgresql+psycopg://...` works
the same. Migrations (Alembic) are applied by `upgrade()`; the app, the CLI and `nmb db upgrade`
start with `db.bundle.store.prepare_study`, which also sweeps what killed imports left.
"""

import os
import sys
from functools import cache
from pathlib import Path

from sqlalchemy import event, text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError
from sqlmodel import Session, create_engine

MIGRATIONS = Path(__file__).parent / "migrations"
HEAD_REVISION = "0014"  # the newest migration (a test checks it against db/migrations)


def nmb_home() -> Path:
    home = Path(os.environ.get("NMB_HOME", ".nmb")).resolve()
    home.mkdir(parents=True, exist_ok=True)
    return home


def database_url() -> str:
    return os.environ.get("NMB_DATABASE_URL") or f"sqlite:///{nmb_home() / 'study.db'}"


def _sqlite_pragmas(dbapi_conn, _record) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA busy_timeout=30000")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.close()


@cache
def engine_for(url: str) -> Engine:
    """One engine per URL per process (engines are thread-safe and pool connections)."""
    if url.startswith("sqlite"):
        eng = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})
        event.listen(eng, "connect", _sqlite_pragmas)
        # Take over pysqlite's transaction handling: every transaction starts with BEGIN IMMEDIATE,
        # so two writers queue on the busy timeout instead of failing on a lock upgrade.
        event.listen(eng, "begin", lambda conn: conn.exec_driver_sql("BEGIN IMMEDIATE"))

        @event.listens_for(eng, "connect")
        def _no_autobegin(dbapi_conn, _record) -> None:
            dbapi_conn.isolation_level = None

        return eng
    return create_engine(url, pool_pre_ping=True)


def get_engine() -> Engine:
    return engine_for(database_url())


def session() -> Session:
    """A new session; use as `with session() as s:`. Objects stay usable after commit."""
    return Session(get_engine(), expire_on_commit=False)


def alembic_config(url: str | None = None):
    from alembic.config import Config

    cfg = Config(stdout=sys.stdout)  # now: Config's default is sys.stdout at import time
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.set_main_option("sqlalchemy.url", (url or database_url()).replace("%", "%%"))
    return cfg


def _at_head(url: str) -> bool:
    try:
        with engine_for(url).connect() as conn:
            current = conn.execute(text("SELECT version_num FROM alembic_version")).scalar()
    except SQLAlchemyError:  # no database or no alembic table yet
        return False
    return current == HEAD_REVISION


def upgrade(url: str | None = None) -> None:
    """Create or migrate the database to the newest revision (a quick no-op when it is there).
    The app and the CLI start with `db.bundle.store.prepare_study`, which also sweeps what
    killed imports left."""
    url = url or database_url()
    if not _at_head(url):
        from alembic import command

        command.upgrade(alembic_config(url), "head")
