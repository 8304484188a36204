"""Case volumes for the in-browser viewer, served by URL so that a rerun never re-sends them.

A page `publish`es a series' image and hands the viewer the URL `/nmb/volumes/<sha256>.nii`
(the sha256 of the stored file). The route (`routes()`, mounted by `serve.py` through
`st.App`) answers only for published images, with the image's browser copy
(`imaging.browser_copy`: voxels and geometry only, no header text, extensions or file name),
gzip-encoded and `Cache-Control: private, max-age=31536000, immutable`: a URL names one
content forever, so a reload or another case with the same image downloads nothing.

Browser copies live in `NMB_HOME/viewer/`; a publish starts writing the copy in the
background so that it is usually ready when the browser asks. No Streamlit import here.

Pictures (2-D series, `imaging.picture`) are published by `publish_picture` under
`/nmb/volumes/<sha256>.png`: their display copy, the stored (already sanitised) picture with
its longest side at most `DISPLAY_SIDE` pixels, PNG without metadata.
"""

from __future__ import annotations

import functools
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from db.bundle_images import sha256_file
from db.engine import nmb_home
from imaging.browser_copy import write_browser_copy
from imaging.image_file import open_image
from imaging.picture import downscaled_png

ROUTE = "/nmb/volumes/{name}"
COPY_VERSION = "v1"  # bump when the browser copy changes: new files, new URLs
CACHE_CONTROL = "private, max-age=31536000, immutable"
_NAME = re.compile(r"([0-9a-f]{64})\.nii")
PICTURE_ROUTE = "/nmb/volumes/{name}.png"
#: The longest side of a picture's display copy (the browser draws it without WebGL).
DISPLAY_SIDE = 2048
_PICTURE_NAME = re.compile(r"[0-9a-f]{64}")
_pictures: dict[str, Path] = {}

_published: dict[str, Path] = {}
_locks: dict[str, threading.Lock] = {}
_registry_lock = threading.Lock()
_prefetch = ThreadPoolExecutor(max_workers=2, thread_name_prefix="nmb-volume-copy")


@functools.lru_cache(maxsize=4096)
def _checked_sha256(path: Path, mtime_ns: int, size: int) -> str:
    """sha256 of an image the viewer can show (its header is checked first: UserError if not)."""
    open_image(path)
    return sha256_file(path)


def publish(path: Path) -> str:
    """Allow the route to serve image `path`; return its URL path.

    Raises UserError (one line naming the file) if it is missing or cannot be shown."""
    path = Path(path).resolve()
    try:
        st = path.stat()
    except OSError:
        open_image(path)  # the file-not-found line
        raise
    sha = _checked_sha256(path, st.st_mtime_ns, st.st_size)
    with _registry_lock:
        known = _published.get(sha) == path
        _published[sha] = path
        _locks.setdefault(sha, threading.Lock())
    if not known and not copy_path(sha).exists():
        _prefetch.submit(browser_copy, sha)
    return ROUTE.format(name=f"{sha}.nii")


def publish_picture(path: Path) -> str:
    """Allow the route to serve the display copy of the stored picture `path`; return its URL
    path (`/nmb/volumes/<sha256>.png`, the sha256 of the stored file)."""
    path = Path(path).resolve()
    st = path.stat()  # OSError if missing
    sha = _picture_sha256(path, st.st_mtime_ns, st.st_size)
    with _registry_lock:
        _pictures[sha] = path
        _locks.setdefault(sha, threading.Lock())
    return PICTURE_ROUTE.format(name=sha)


@functools.lru_cache(maxsize=4096)
def _picture_sha256(path: Path, mtime_ns: int, size: int) -> str:
    return sha256_file(path)


def display_file(path: Path) -> Path:
    """The display copy of the stored picture `path` (published, written on first use)."""
    url = publish_picture(path)
    copy = display_copy(url.rsplit("/", 1)[1].removesuffix(".png"))
    assert copy is not None  # just published
    return copy


def display_copy(sha: str) -> Path | None:
    """The display copy of a published picture (written on first use), or None."""
    with _registry_lock:
        source, lock = _pictures.get(sha), _locks.get(sha)
    if source is None or lock is None:
        return None
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


def browser_copy(sha: str) -> Path | None:
    """The browser copy of a published image (written on first use), or None if not published.

    Raises UserError if the image cannot be read."""
    with _registry_lock:
        source, lock = _published.get(sha), _locks.get(sha)
    if source is None or lock is None:
        return None
    target = copy_path(sha)
    with lock:
        if not target.exists():
            write_browser_copy(source, target)
    return target


def routes() -> list:
    """The Starlette route that serves published volumes (for `st.App(routes=...)`)."""
    from starlette.concurrency import run_in_threadpool
    from starlette.requests import Request
    from starlette.responses import FileResponse, PlainTextResponse, Response
    from starlette.routing import Route

    from errors import UserError

    async def volume(request: Request) -> Response:
        match = _NAME.fullmatch(request.path_params["name"])
        if match is None:
            return PlainTextResponse("not found", status_code=404)
        try:
            path = await run_in_threadpool(browser_copy, match.group(1))
        except UserError as exc:
            return PlainTextResponse(str(exc), status_code=422)
        if path is None:
            return PlainTextResponse("not found", status_code=404)
        return FileResponse(path, media_type="application/octet-stream",
                            headers={"Content-Encoding": "gzip", "Cache-Control": CACHE_CONTROL})

    async def picture(request: Request) -> Response:
        name = request.path_params["name"]
        if _PICTURE_NAME.fullmatch(name) is None:
            return PlainTextResponse("not found", status_code=404)
        try:
            path = await run_in_threadpool(display_copy, name)
        except UserError as exc:
            return PlainTextResponse(str(exc), status_code=422)
        if path is None:
            return PlainTextResponse("not found", status_code=404)
        return FileResponse(path, media_type="image/png",
                            headers={"Cache-Control": CACHE_CONTROL,
                                     "X-Content-Type-Options": "nosniff"})

    return [Route(PICTURE_ROUTE, picture, methods=["GET", "HEAD"]),
            Route(ROUTE, volume, methods=["GET", "HEAD"])]
