"""Waits until the database of `NMB_DATABASE_URL` accepts connections, for up to `NMB_DB_WAIT`
seconds (default 60), so that an app container started beside its database (podman-compose
1.0 does not wait for a health check) does not fail its first start; then checks that a
PostgreSQL database stores UTF8 (on `SQL_ASCII` the driver hands back bytes and the app
cannot start). Run by deploy/entrypoint.sh before the migrations; nothing to do for SQLite.

When the database does not answer in time, or has another encoding: one line naming it (its
password hidden) and the reason, and exit 2.
"""

import os
import sys
import time

from sqlalchemy import create_engine
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError


def _fail(message: str) -> int:
    print(f"nmb: {message}", file=sys.stderr)
    return 2


def main() -> int:
    url = os.environ.get("NMB_DATABASE_URL", "")
    if not url or not url.startswith("postgresql"):
        return 0
    raw = os.environ.get("NMB_DB_WAIT", "60").strip()
    if not (raw.isascii() and raw.isdigit()) or int(raw) > 3600:
        return _fail(f"NMB_DB_WAIT: {raw[:20]!r} is not a number of seconds from 0 to 3600")
    wait = int(raw)
    try:
        parsed = make_url(url)
        dialect = create_engine(parsed).dialect
        cargs, cparams = dialect.create_connect_args(parsed)
        dbapi = dialect.loaded_dbapi
    except (ArgumentError, ValueError, ImportError) as e:
        return _fail(f"NMB_DATABASE_URL is not a database URL ({type(e).__name__})")
    shown = parsed.render_as_string(hide_password=True)
    deadline = time.monotonic() + wait
    while True:  # the driver's own connection: SQLAlchemy's first connect fails on SQL_ASCII
        try:
            conn = dbapi.connect(*cargs, **cparams)
            break
        except dbapi.OperationalError as e:
            if time.monotonic() >= deadline:
                reason = (str(e).strip() or "no answer").splitlines()[0][:300]
                return _fail(f"the database {shown} does not answer after {wait} s: {reason}")
            time.sleep(1)
    try:
        cur = conn.cursor()
        cur.execute("SHOW server_encoding")
        encoding = cur.fetchone()[0]
    finally:
        conn.close()
    if isinstance(encoding, bytes):
        encoding = encoding.decode("ascii", "replace")
    if encoding != "UTF8":
        return _fail(f"the database {shown} stores {encoding[:40]}, not UTF8: create it with "
                     "ENCODING 'UTF8' (docs/deploy.md)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
