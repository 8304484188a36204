"""A case's key images as PNG: what a model under test, or a vision grader, is shown.

For volumes, the slices are the case's `key_slices` from its bundle, else three orthogonal
slices through the centre of each volume (`imaging.key_slices`). A picture series is sent as
itself: the stored (sanitised) picture, its longest side at most `NMB_PICTURE_MAX_SIDE`
pixels (default 2048), captioned from its own fields ("image 2 of 3: FLAIR, axial"). Without
`key_slices` the images follow the series order; with them, the listed slices come first and
the pictures follow in series order. Rendered PNGs are kept in `NMB_HOME/key-slices/` under
the series' content hash, so a run renders each image once.
"""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path

from sqlmodel import Session, select

from db.engine import nmb_home
from db.models import Case, Series
from errors import UserError
from imaging.key_slices import RENDER_VERSION, KeySlice, default_key_slices, render_key_slice
from imaging.picture import DEFAULT_SEND_SIDE, downscaled_png
from llm.model_request import TEMPLATE, KeyImage, picture_caption

PICTURE_SIDE_ENV = "NMB_PICTURE_MAX_SIDE"


def picture_max_side() -> int:
    """The longest side of a picture sent to a model or grader: `NMB_PICTURE_MAX_SIDE`
    (default 2048 pixels)."""
    raw = os.environ.get(PICTURE_SIDE_ENV, "").strip()
    if not raw:
        return DEFAULT_SEND_SIDE
    if not (raw.isascii() and raw.isdigit()) or not 64 <= int(raw) <= 16384:
        raise UserError(f"{PICTURE_SIDE_ENV}={raw!r} is not a whole number of pixels from 64 "
                        "to 16384")
    return int(raw)


def _write(path: Path, data: bytes) -> None:
    """Atomically: runs in other processes may read the same file."""
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _stored(row: Series, ks: KeySlice) -> KeyImage:
    """The slice, rendered once and then read from disk."""
    at = "mid" if ks.index is None else str(ks.index)
    folder = nmb_home() / "key-slices"
    png = folder / f"{row.sha256}-{ks.plane}-{at}-v{RENDER_VERSION}.png"
    meta = png.with_suffix(".json")
    if not (png.is_file() and meta.is_file()):
        rendered = render_key_slice(nmb_home() / row.path, ks.plane, ks.index)
        folder.mkdir(parents=True, exist_ok=True)
        _write(png, rendered.png)
        _write(meta, json.dumps({"index": rendered.index, "count": rendered.n_slices}).encode())
    where = json.loads(meta.read_text())
    caption = TEMPLATE["slice"].format(series=ks.series, plane=ks.plane,
                                       number=where["index"] + 1, count=where["count"])
    return KeyImage(caption, png.read_bytes())


def _picture_png(row: Series, max_side: int) -> bytes:
    """The stored picture, downscaled once per size and then read from disk."""
    folder = nmb_home() / "key-slices"
    png = folder / f"{row.sha256}-picture-{max_side}.png"
    if not png.is_file():
        data = downscaled_png(nmb_home() / row.path, max_side)
        folder.mkdir(parents=True, exist_ok=True)
        _write(png, data)
    return png.read_bytes()


def key_images(s: Session, case: Case, *, max_side: int | None = None) -> list[KeyImage]:
    """The case's key images (slices rendered, pictures downscaled to `max_side`, default
    `picture_max_side()`), in order."""
    rows = list(s.exec(select(Series).where(Series.case_id == case.case_id)
                       .order_by(Series.position)))
    pictures = [row for row in rows if row.picture]
    if case.key_slices:  # validated at import: each names one volume of the case
        by_name = {row.sequence: row for row in rows}
        chosen = [(by_name[k["series"]], KeySlice(k["series"], k["plane"], k.get("index")))
                  for k in case.key_slices] + [(row, None) for row in pictures]
    else:
        chosen = [(row, ks) for row in rows
                  for ks in ([None] if row.picture else default_key_slices([row.sequence]))]
    side = max_side or picture_max_side()
    out = []
    for number, (row, ks) in enumerate(chosen, start=1):
        if ks is not None:
            out.append(_stored(row, ks))
            continue
        caption = picture_caption(number, len(chosen), row.sequence, row.plane, row.caption)
        out.append(KeyImage(caption, _picture_png(row, side), picture=True))
    return out
