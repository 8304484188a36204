"""Waits until the database of `NMB_DATABASE_URL` accepts connections, for up to `NMB_DB_WAIT`
seconds (default 60), so that an app container started beside its database (podman-compose
1.0 does not wait for a health check) does not fail its first start. Run by
deploy/entrypoint.sh before the migrations; nothing to wait for with SQLite.

When the database does not answer in time: one line naming it (its password hidden) and the
driver's reason, and exit 2.
"""

import os
import sys
import time

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, OperationalError


def _fail(message: str) -> int:
    print(f"nmb: {message}", file=sys.stderr)
    return 2


def main() -> int:
    url = os.environ.get("NMB_DATABASE_URL", "")
    if not url or url.startswith("sqlite"):
        return 0
    raw = os.environ.get("NMB_DB_WAIT", "60").strip()
    if not raw.isdigit() or int(raw) > 3600:
        return _fail(f"NMB_DB_WAIT: {raw[:20]!r} is not a number of seconds from 0 to 3600")
    wait = int(raw)
    try:
        shown = make_url(url).render_as_string(hide_password=True)
        engine = create_engine(url)
    except (ArgumentError, ValueError, ImportError) as e:
        return _fail(f"NMB_DATABASE_URL is not a database URL ({type(e).__name__})")
    deadline = time.monotonic() + wait
    while True:
        try:
            with engine.connect() as conn:
                conn.execute(text("SELECT 1"))
            return 0
        except OperationalError as e:
            if time.monotonic() >= deadline:
                reason = str(e.orig).strip().splitlines()[0][:300] if str(e.orig).strip() else "no answer"
                return _fail(f"the database {shown} does not answer after {wait} s: {reason}")
            time.sleep(1)
        finally:
            engine.dispose()


if __name__ == "__main__":
    raise SystemExit(main())
