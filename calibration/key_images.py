"""A case's key slices as PNG images: what a model under test, or a vision grader, is shown.

The slices are the case's `key_slices` from its bundle, else three orthogonal slices through
the centre of each series (`imaging.key_slices`). Rendered PNGs are kept in
`NMB_HOME/key-slices/` under the series' content hash, so a run renders each slice once.
"""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path

from sqlmodel import Session, select

from calibration.model_request import TEMPLATE, KeyImage
from db.engine import nmb_home
from db.models import Case, Series
from imaging.key_slices import RENDER_VERSION, KeySlice, default_key_slices, render_key_slice


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


def key_images(s: Session, case: Case) -> list[KeyImage]:
    """The case's key slices, rendered, in order."""
    rows = list(s.exec(select(Series).where(Series.case_id == case.case_id)
                       .order_by(Series.position)))
    if case.key_slices:  # validated at import: each names one series of the case
        by_name = {row.sequence: row for row in rows}
        chosen = [(by_name[k["series"]], KeySlice(k["series"], k["plane"], k.get("index")))
                  for k in case.key_slices]
    else:
        chosen = [(row, ks) for row in rows for ks in default_key_slices([row.sequence])]
    return [_stored(row, ks) for row, ks in chosen]
