"""Case volumes for the in-browser viewer, served by URL so that a rerun never re-sends them,
and only to those who may see them.

A page `publish`es a series' image for the session's login and hands the viewer the URL
`/nmb/volumes/<ticket>/<sha256>.nii` (under the app's path prefix, `ui.server.base_path`, when
it has one: `/<prefix>/nmb/volumes/...`): `sha256` names the stored file, `ticket` is an HMAC of
the session's login token and that sha256 under a key of this server process, so a URL is
worth nothing outside the login it was made for, and a content hash alone opens nothing.

The route (`routes()`, mounted by `serve.py` through `st.App`) answers a request only when
  1. the ticket matches the request's login cookie (`db.users.LOGIN_COOKIE`),
  2. that cookie is a live login of an enabled account (`db.users.user_for_login`: logout and
     disabling delete the account's tokens, so access ends at once), and
  3. the account may see that image now (`db.study.image_access.viewable_image`: experts the cases
     of their assignments and masks only for tasks with `show_masks`, exam takers the cases of
     their open exams and never a mask, admins everything).
Anything else is 403 with no image bytes; errors name no server path. It serves the image's
browser copy (`imaging.browser_copy`: voxels and geometry only, no header text, extensions or
file name), gzip-encoded, `Cache-Control: private, no-cache` with an ETag: the browser keeps
the copy but asks again each time, and a revalidation is authorized like a download.

Browser copies live in `NMB_HOME/viewer/`; a publish starts writing the copy in the
background so that it is usually ready when the browser asks. No Streamlit import here but
the path prefix setting.

Pictures (2-D series, `imaging.picture`) are published by `publish_picture` under
`/nmb/volumes/<ticket>/<sha256>.png` and authorized the same way: the route serves their
display copy, the stored (already sanitised) picture with its longest side at most
`DISPLAY_SIDE` pixels, PNG without metadata.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import logging
import re
import secrets
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from db.bundle.images import sha256_file
from db.engine import nmb_home, session
from db.study.image_access import viewable_image
from db.users import LOGIN_COOKIE, user_for_login
from imaging.browser_copy import write_browser_copy
from imaging.image_file import open_image
from imaging.picture import downscaled_png
from ui.server.base_path import base_path

ROUTE = "/nmb/volumes/{ticket}/{name}"
COPY_VERSION = "v1"  # bump when the browser copy changes: new files, new URLs
CACHE_CONTROL = "private, no-cache"
_NAME = re.compile(r"([0-9a-f]{64})\.(nii|png)")
#: The longest side of a picture's display copy (the browser draws it without WebGL).
DISPLAY_SIDE = 2048
_TICKET = re.compile(r"[0-9a-f]{32}")
_KEY = secrets.token_bytes(32)  # this process's ticket key: a restart voids old URLs

_log = logging.getLogger(__name__)
_locks: dict[str, threading.Lock] = {}
_started: set[str] = set()
_registry_lock = threading.Lock()
_prefetch = ThreadPoolExecutor(max_workers=2, thread_name_prefix="nmb-volume-copy")


@functools.lru_cache(maxsize=4096)
def _checked_sha256(path: Path, mtime_ns: int, size: int, stored: str | None) -> str:
    """sha256 of an image the viewer can show (its header is checked first: UserError if not):
    the one stored for it where the caller has it, else the file's."""
    open_image(path)
    return stored or sha256_file(path)


def ticket(login_token: str | None, sha: str) -> str:
    """The URL ticket of image `sha` for one login (none: a ticket no request matches)."""
    message = f"{login_token or ''}\n{sha}".encode()
    return hmac.new(_KEY, message, hashlib.sha256).hexdigest()[:32]


def publish(path: Path, *, login_token: str | None, sha256: str | None = None) -> str:
    """The URL of image `path` for the session of `login_token`; starts its browser copy.
    `sha256`: the one stored for the file (`db.study.cases.SeriesImage.sha256`), so that the
    file is not hashed again; without it the file is hashed (once per path and version).

    Raises UserError (one line naming the file) if it is missing or cannot be shown."""
    path = Path(path).resolve()
    try:
        st = path.stat()
    except OSError:
        open_image(path)  # the file-not-found line
        raise
    sha = _checked_sha256(path, st.st_mtime_ns, st.st_size, sha256)
    with _registry_lock:
        start = sha not in _started
        _started.add(sha)
    if start and not copy_path(sha).exists():
        _prefetch.submit(browser_copy, sha, path)
    return base_path() + ROUTE.format(ticket=ticket(login_token, sha), name=f"{sha}.nii")


def publish_picture(path: Path, *, login_token: str | None, sha256: str | None = None) -> str:
    """The URL of the display copy of the stored picture `path` for the session of
    `login_token` (OSError if the file is missing); `sha256` as for `publish`."""
    path = Path(path).resolve()
    st = path.stat()
    sha = sha256 or _stored_sha256(path, st.st_mtime_ns, st.st_size)
    return base_path() + ROUTE.format(ticket=ticket(login_token, sha), name=f"{sha}.png")


@functools.lru_cache(maxsize=4096)
def _stored_sha256(path: Path, mtime_ns: int, size: int) -> str:
    return sha256_file(path)


def display_file(path: Path, sha256: str | None = None) -> Path:
    """The display copy of the stored picture `path` (written on first use); `sha256` as for
    `publish`."""
    path = Path(path).resolve()
    st = path.stat()
    return display_copy(sha256 or _stored_sha256(path, st.st_mtime_ns, st.st_size), path)


def display_copy(sha: str, source: Path) -> Path:
    """The display copy of the stored picture `source` (whose sha256 is `sha`), written on
    first use: longest side at most DISPLAY_SIDE, PNG. Raises OSError or UserError if
    `source` is not a picture."""
    with _registry_lock:
        lock = _locks.setdefault(sha, threading.Lock())
    target = nmb_home() / "viewer" / f"{sha}-display-{DISPLAY_SIDE}.png"
    with lock:
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            partial = target.with_name(f".{target.name}.tmp")
            partial.write_bytes(downscaled_png(source, DISPLAY_SIDE))
            partial.replace(target)
    return target


def copy_path(sha: str) -> Path:
    return nmb_home() / "viewer" / f"{sha}-{COPY_VERSION}.nii.gz"


def browser_copy(sha: str, source: Path) -> Path:
    """The browser copy of image `source` (whose sha256 is `sha`), written on first use.

    Raises UserError if the image cannot be read."""
    with _registry_lock:
        lock = _locks.setdefault(sha, threading.Lock())
    target = copy_path(sha)
    with lock:
        if not target.exists():
            write_browser_copy(source, target)
    return target


def authorized_image(cookie: str | None, ticket_: str, sha: str) -> Path | None:
    """The stored file of image `sha` if the request's login cookie and ticket allow it."""
    if not cookie or not hmac.compare_digest(ticket(cookie, sha), ticket_):
        return None
    with session() as s:
        user = user_for_login(s, cookie)
        return viewable_image(s, user=user, sha256=sha) if user is not None else None


def routes() -> list:
    """The Starlette route that serves volumes and pictures (for `st.App(routes=...)`), under
    the app's path prefix (Streamlit prefixes only its own routes)."""
    from starlette.concurrency import run_in_threadpool
    from starlette.requests import Request
    from starlette.responses import FileResponse, PlainTextResponse, Response
    from starlette.routing import Route

    from errors import UserError

    def refuse(status: int, text: str) -> Response:
        return PlainTextResponse(text, status_code=status, headers={"Cache-Control": "no-store"})

    async def volume(request: Request) -> Response:
        name, ticket_ = _NAME.fullmatch(request.path_params["name"]), request.path_params["ticket"]
        if name is None or _TICKET.fullmatch(ticket_) is None:
            return refuse(404, "not found")
        sha, kind = name.groups()
        source = await run_in_threadpool(authorized_image, request.cookies.get(LOGIN_COOKIE),
                                         ticket_, sha)
        if source is None:
            return refuse(403, "not allowed: log in with an account that may see this image")
        etag = f'"{sha}-{COPY_VERSION if kind == "nii" else DISPLAY_SIDE}"'
        headers = {"Cache-Control": CACHE_CONTROL, "ETag": etag}
        if request.headers.get("if-none-match") == etag:
            return Response(status_code=304, headers=headers)
        copy = browser_copy if kind == "nii" else display_copy
        try:
            path = await run_in_threadpool(copy, sha, source)
        except (UserError, OSError, ValueError) as exc:
            _log.warning("image %s.%s cannot be served: %s", sha, kind, exc)
            return refuse(422, "this image cannot be shown")
        if kind == "png":
            return FileResponse(path, media_type="image/png", headers=headers)
        return FileResponse(path, media_type="application/octet-stream",
                            headers={**headers, "Content-Encoding": "gzip"})

    return [Route(base_path() + ROUTE, volume, methods=["GET", "HEAD"])]
