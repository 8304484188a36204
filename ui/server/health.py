"""`GET /<prefix>/healthz`: whether this server can serve the study, for a load balancer, a
container's health check or a monitor. 200 `{"status": "ok", "db_revision": "0020"}` after one
cheap query (the database's migration revision, here the newest); 503 `{"status":
"unavailable", ...}` when the database cannot be reached within `TIMEOUT` seconds or is not
at `db.engine.HEAD_REVISION`. It tells nothing else (no counts, names, paths or settings) and
needs no login. No Streamlit import here but the path prefix setting."""

import asyncio
import logging

from db.engine import HEAD_REVISION, current_revision
from ui.server.base_path import base_path

PATH = "/healthz"
TIMEOUT = 5.0  # seconds: a database that does not answer by then is unavailable

_log = logging.getLogger(__name__)


def routes() -> list:
    """The health route under the app's path prefix (for `st.App(routes=...)`)."""
    from starlette.concurrency import run_in_threadpool
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    async def healthz(_request: Request) -> JSONResponse:
        try:
            revision = await asyncio.wait_for(run_in_threadpool(current_revision), TIMEOUT)
        except TimeoutError:
            revision = None
        ok = revision == HEAD_REVISION
        if not ok:
            _log.warning("health: the database is %s (expected revision %s)",
                         f"at revision {revision}" if revision else "unreachable or empty",
                         HEAD_REVISION)
        return JSONResponse({"status": "ok" if ok else "unavailable", "db_revision": revision},
                            status_code=200 if ok else 503, headers={"Cache-Control": "no-store"})

    return [Route(base_path() + PATH, healthz, methods=["GET", "HEAD"])]
