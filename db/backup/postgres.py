"""PostgreSQL: `pg_dump` (custom format) of an exported snapshot, and `pg_restore` into an empty
database in one transaction.

The snapshot: a REPEATABLE READ transaction exports its snapshot (`pg_export_snapshot()`),
`pg_dump --snapshot` dumps exactly that view, and the counts and image paths are read in the
same transaction, so the dump and the images backed up agree while the app keeps writing.

A dump to restore is untrusted: its table of contents (`pg_restore --list`) may hold only what
the study's migrations create (tables, their data, sequences, defaults, constraints, indexes,
triggers, and the audit log's one function); anything else refuses the file. The target must
hold no row in any table but `alembic_version`; the empty tables a start of the app may have
created are locked, checked and dropped in one transaction. `pg_restore --single-transaction
--exit-on-error --no-owner --no-acl` then restores all or nothing, owned by the URL's user,
once its definitions are those the migrations to its revision write (`_unexpected_statement`).
What its column defaults, functions and triggers do is then read from the catalog
(`restored_problem`: sequences and constants; exactly migration 0001's function and trigger,
body and events); the restore's caller drops it all again (`empty`) when they differ or the
migrations refuse the database. The definitions are compared first because some run as the
data are copied: a CHECK constraint or an index expression is evaluated on every row.

`pg_dump` and `pg_restore` come from PATH, else from the newest /usr/lib/postgresql/*/bin
(pg_dump must be at least the server's version). The password goes to them in the environment
(PGPASSWORD), never on a command line.
"""

import glob
import os
import re
import shutil
import subprocess
from pathlib import Path

from sqlalchemy import Connection, text
from sqlalchemy.engine import make_url

from db.backup.snapshot import Snapshot, describe
from db.engine import alembic_config, engine_for
from errors import UserError, one_line

#: The kinds of entry a study's dump holds (longest first: "TABLE DATA" before "TABLE").
ALLOWED_ENTRIES = ("TABLE DATA", "TABLE", "SEQUENCE OWNED BY", "SEQUENCE SET", "SEQUENCE",
                   "DEFAULT", "FK CONSTRAINT", "CONSTRAINT", "INDEX", "TRIGGER", "COMMENT",
                   "ACL", "SCHEMA")
ALLOWED_FUNCTIONS = {"auditlog_append_only()"}  # migration 0001: the audit log is append-only
#: What the migrations create of functions (name, language, source, security definer, no
#: settings) and triggers (table, name, function, pg_trigger.tgtype: BEFORE UPDATE OR DELETE
#: FOR EACH ROW, enabled): migration 0001's. tests/db/test_backup.py reads them from a migrated
#: database.
FUNCTIONS = {("auditlog_append_only", "plpgsql",
              " BEGIN RAISE EXCEPTION 'audit log is append-only'; END ", False, True)}
TRIGGERS = {("auditlog", "auditlog_append_only", "auditlog_append_only", 27, "O")}
_OURS = "n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_%'"
_FUNCTIONS = ("SELECT p.proname, l.lanname, p.prosrc, p.prosecdef, p.proconfig IS NULL "
              "FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
              f"JOIN pg_language l ON l.oid = p.prolang WHERE {_OURS}")
#: A column default the migrations write: a sequence's next value or a constant (a default is
#: evaluated whenever the app leaves a column out: current_setting(), pg_read_file(), ...).
DEFAULT = re.compile(r"nextval\('[a-z0-9_]+'::regclass\)|'[^']*'::character varying|-?\d+|true|false")
_DEFAULTS = ("SELECT c.relname, a.attname, pg_get_expr(d.adbin, d.adrelid) FROM pg_attrdef d "
             "JOIN pg_class c ON c.oid = d.adrelid JOIN pg_attribute a ON a.attrelid = d.adrelid "
             f"AND a.attnum = d.adnum JOIN pg_namespace n ON n.oid = c.relnamespace WHERE {_OURS}")
_TRIGGERS = ("SELECT c.relname, t.tgname, p.proname, t.tgtype, t.tgenabled FROM pg_trigger t "
             "JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_proc p ON p.oid = t.tgfoid "
             f"JOIN pg_namespace n ON n.oid = c.relnamespace WHERE NOT t.tgisinternal AND {_OURS}")


def _binary(name: str) -> str:
    if found := shutil.which(name):
        return found
    dirs = sorted(glob.glob("/usr/lib/postgresql/*/bin"),
                  key=lambda d: int(n) if (n := Path(d).parent.name).isdigit() else 0)
    for folder in reversed(dirs):
        if (Path(folder) / name).is_file():
            return str(Path(folder) / name)
    raise UserError(f"{name} not found: install the PostgreSQL client tools "
                    "(Debian: apt-get install postgresql-client)")


def _libpq(url: str) -> tuple[str, dict[str, str]]:
    """The URL as libpq reads it (no driver, no password) and the environment with the
    password."""
    u = make_url(url)
    env = dict(os.environ)
    if u.password is not None:
        env["PGPASSWORD"] = str(u.password)
    uri = u.set(drivername="postgresql", password=None).render_as_string(hide_password=False)
    return uri, env


def _run(args: list[str], env: dict[str, str], what: str) -> str:
    done = subprocess.run(args, env=env, capture_output=True, text=True)
    if done.returncode:
        raise UserError(f"{what} failed: {one_line(done.stderr or f'exit {done.returncode}', 300)}")
    return done.stdout


def snapshot(url: str, dest: Path) -> Snapshot:
    """Dump the database at `url` into `dest` and describe the same snapshot."""
    uri, env = _libpq(url)
    with engine_for(url).connect() as conn:
        conn.execution_options(isolation_level="REPEATABLE READ")
        with conn.begin():
            snap = conn.execute(text("SELECT pg_export_snapshot()")).scalar_one()
            _run([_binary("pg_dump"), "--format=custom", f"--snapshot={snap}", f"--file={dest}",
                  f"--dbname={uri}"], env, "pg_dump")
            return describe(conn, dest)


def _tables(conn: Connection) -> list[str]:
    return list(conn.execute(text("SELECT tablename FROM pg_tables "
                                  "WHERE schemaname = current_schema() ORDER BY tablename"))
                .scalars())


def _first_with_rows(conn: Connection, tables: list[str]) -> str | None:
    quote = conn.dialect.identifier_preparer.quote
    return next((t for t in tables if t != "alembic_version" and conn.execute(
        text(f"SELECT EXISTS (SELECT 1 FROM {quote(t)})")).scalar()), None)


def rows_in(url: str) -> str | None:
    """A table holding rows other than the Alembic revision, or None when the database is
    empty."""
    with engine_for(url).connect() as conn:
        return _first_with_rows(conn, _tables(conn))


def check_dump(dump: Path, label: str) -> None:
    """Refuse a dump that holds anything a study's migrations do not create."""
    try:
        listing = _run([_binary("pg_restore"), "--list", str(dump)], dict(os.environ),
                       "pg_restore --list")
    except UserError as e:
        raise UserError(f"{label}: the database dump is not readable ({e})") from None
    for line in listing.splitlines():
        if not line.strip() or line.startswith(";"):
            continue
        parts = line.split(" ", 3)
        entry = parts[3] if len(parts) == 4 else line
        kind = next((k for k in (*ALLOWED_ENTRIES, "FUNCTION") if entry.startswith(k + " ")), None)
        words = entry.split(" ")
        if kind is None or (kind == "FUNCTION" and (len(words) < 3
                                                    or words[2] not in ALLOWED_FUNCTIONS)):
            raise UserError(f"{label}: the database dump holds {one_line(entry, 120)!r}, which "
                            "a study's migrations never create")


def _names(conn: Connection, tables: list[str]) -> str:
    quote = conn.dialect.identifier_preparer.quote
    return ", ".join(quote(t) for t in tables)


def _drop(conn: Connection, tables: list[str]) -> None:
    if tables:
        conn.execute(text(f"DROP TABLE {_names(conn, tables)} CASCADE"))
    conn.execute(text("DROP FUNCTION IF EXISTS auditlog_append_only() CASCADE"))


def empty(url: str) -> None:
    """Drop every table of the study and the audit log's function: a restore undone."""
    engine = engine_for(url)
    with engine.begin() as conn:
        _drop(conn, _tables(conn))
    engine.dispose()


def functions_and_triggers(conn: Connection) -> tuple[set[tuple], set[tuple]]:
    """The functions and triggers of the database, as FUNCTIONS and TRIGGERS list them."""
    return ({tuple(r) for r in conn.execute(text(_FUNCTIONS))},
            {tuple(r) for r in conn.execute(text(_TRIGGERS))})


def restored_problem(url: str) -> str | None:
    """What the restored database holds or lacks of column defaults, functions and triggers
    against what the migrations create (a dump's table of contents names only their kinds),
    or None."""
    with engine_for(url).connect() as conn:
        got = functions_and_triggers(conn)
        defaults = conn.execute(text(_DEFAULTS)).all()
    for table, column, expression in defaults:
        if not DEFAULT.fullmatch(expression):
            return (f"holds a default of {f'{table}.{column}'[:80]!r} other than the migrations "
                    f"create it ({one_line(expression, 80)})")
    for kind, have, want in zip(("function", "trigger"), got, (FUNCTIONS, TRIGGERS), strict=True):
        name = 0 if kind == "function" else 1
        if extra := sorted(have - want, key=str):
            return f"holds {kind} {extra[0][name][:60]!r} other than the migrations create it"
        if missing := sorted(want - have, key=str):
            return f"lacks {kind} {missing[0][name]!r}, which the migrations create"
    return None


def restore(dump: Path, url: str, empty_message: str, revision: str, label: str) -> None:
    """Drop the empty tables of the target (refused with `empty_message` when one holds rows),
    check that the dump defines what the migrations to `revision` define and nothing else
    (`_unexpected_statement`), then restore it in one transaction."""
    engine = engine_for(url)
    with engine.begin() as conn:
        if tables := _tables(conn):
            conn.execute(text(f"LOCK TABLE {_names(conn, tables)} IN ACCESS EXCLUSIVE MODE"))
            if table := _first_with_rows(conn, tables):
                raise UserError(empty_message.format(table=table))
        _drop(conn, tables)
    engine.dispose()
    uri, env = _libpq(url)
    if extra := _unexpected_statement(dump, url, revision):
        raise UserError(f"{label}: the database dump holds {one_line(extra, 120)!r}, which a "
                        f"study's migrations to {revision} do not create")
    _run([_binary("pg_restore"), "--single-transaction", "--exit-on-error", "--no-owner",
          "--no-acl", f"--dbname={uri}", str(dump)], env, "pg_restore")


def _statements(script: str) -> list[str]:
    """A plain SQL script's statements as written (ended by a semicolon at a line's end),
    without comments (pg_dump's versions among them), blank lines and psql's meta-commands
    (`\\restrict KEY`, a new key each time)."""
    kept = "\n".join(line for line in script.splitlines()
                     if line.strip() and not line.startswith(("--", "\\")))
    return [s.strip() for s in kept.split(";\n") if s.strip()]


def _unexpected_statement(dump: Path, url: str, revision: str) -> str | None:
    """The first statement of the dump's definitions (tables, defaults, constraints, indexes,
    functions, triggers: what pg_restore will run, as it will run it) that migrating the
    empty target to `revision` does not write, or None. The target is migrated, its schema
    dumped by the same pg_dump, and emptied again. Checked before anything is restored: a
    CHECK constraint or an index is evaluated on every row as the data are copied, so a
    function of the dump's own, or a built-in one such as lo_export, would run then."""
    from alembic import command  # (only a restore needs it, as in `db.backup.sqlite`)

    uri, env = _libpq(url)
    flags = ["--schema-only", "--no-owner", "--no-acl"]
    command.upgrade(alembic_config(url), revision)
    try:
        expected = _run([_binary("pg_dump"), *flags, f"--dbname={uri}"], env, "pg_dump")
    finally:
        empty(url)
    given = _run([_binary("pg_restore"), *flags, "--file=-", str(dump)], dict(os.environ),
                 "pg_restore --schema-only")
    wanted = _statements(expected)
    extra = next((s for s in _statements(given) if s not in wanted), None)
    if extra is None:
        return None
    known = {line.strip() for s in wanted for line in s.splitlines()}
    return next((line for line in extra.splitlines() if line.strip() not in known), extra)
