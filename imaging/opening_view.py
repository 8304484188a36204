"""Where the viewer opens a case: its plane, world point and layout (docs/viewer.md, "Opening
view").

In order, the first that applies:
1. the case's stored opening view (`Case.opening_view`): the bundle's `hanging_protocol`
   (plane, optional layout, optional slice per series) or the view an admin chose on /admin
   ("use this view": plane, world mm, layout);
2. the case's key slices (the slices a model is shown; `ui.volume_viewer.start_point`);
3. the centre of mass of the lesion mask, where the page may show masks (/score, /admin; never
   /exam: where the lesion is is what a lesion task asks);
4. the middle of the brain (the centre of the head's extent: voxels above a fifth of the
   first series' 98th percentile) in the plane of the task's family (`FAMILY_PLANES`).

World points are scanner mm (RAS+), so every series opens at the same anatomy through its own
affine. Nothing here reads a database or a page.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nibabel as nib
import numpy as np

from imaging.geometry import PLANES
from imaging.image_file import open_image
from imaging.key_slices import key_slice_world
from imaging.volume import load_volume

#: The plane a task family opens in when the case names none. Axial for every family: the
#: plane a brain MR is read in first and lesions are localised on; a case that needs another
#: (coronal through the hippocampi) names it in its hanging protocol or an admin sets it.
FAMILY_PLANES: dict[str, str] = {"differential": "axial", "lesion": "axial",
                                 "rationale": "axial"}
LAYOUTS = ("1x1", "1x2", "2x2")  # tiles in a row x columns (the viewer's layout choice)
VIEW_PLANES = (*PLANES, "multiplanar")


@dataclass(frozen=True)
class OpeningView:
    """The plane, world point (scanner mm) and layout (None: the viewer's own) a case opens
    at, and where it came from: "protocol", "admin", "key slices", "lesion mask" or
    "family"."""

    plane: str
    mm: tuple[float, float, float]
    layout: str | None
    source: str

    def as_args(self) -> dict[str, Any]:
        """What the viewer component receives (`start`)."""
        out: dict[str, Any] = {"plane": self.plane, "mm": [round(v, 3) for v in self.mm],
                               "source": self.source}
        if self.layout:
            out["layout"] = self.layout
        return out


def stored_view(stored: dict[str, Any], series: dict[str, Path]) -> OpeningView | None:
    """The stored opening view on the case's volume `series` (sequence -> path); None when it
    names no series shown here (a view is never an error on a page)."""
    plane = stored.get("plane")
    if plane not in VIEW_PLANES or not series:
        return None
    layout = stored.get("layout") if stored.get("layout") in LAYOUTS else None
    source = "admin" if stored.get("source") == "admin" else "protocol"
    mm = stored.get("mm")
    if isinstance(mm, list) and len(mm) == 3:
        return OpeningView(plane, (float(mm[0]), float(mm[1]), float(mm[2])), layout, source)
    sliced = plane if plane in PLANES else "axial"
    for item in stored.get("slices") or []:
        if item.get("series") in series:
            point = key_slice_world(series[item["series"]], sliced, item.get("index"))
            return OpeningView(plane, point, layout, source)
    first = next(iter(series.values()))
    return OpeningView(plane, key_slice_world(first, sliced, None), layout, source)


@functools.lru_cache(maxsize=256)  # stored files never change
def mask_centroid(path: Path) -> tuple[float, float, float] | None:
    """The world (scanner mm) centre of mass of a mask's labelled voxels (> 0); None if empty."""
    img = open_image(Path(path))
    data = np.asarray(img.dataobj)
    while data.ndim > 3:
        data = data[..., 0]
    voxels = np.argwhere(data > 0)
    if not len(voxels):
        return None
    x, y, z = nib.affines.apply_affine(img.affine, voxels.mean(axis=0))
    return float(x), float(y), float(z)


@functools.lru_cache(maxsize=256)
def brain_middle(path: Path) -> tuple[float, float, float]:
    """The world centre of the head's extent in a volume: the bounding box of the voxels
    brighter than a fifth of the 98th percentile (the air around the head is dark); the grid's
    centre where nothing is."""
    vol = load_volume(Path(path))
    finite = vol.data[np.isfinite(vol.data)]
    if not finite.size:
        return tuple(float(v) for v in vol.center_world())  # type: ignore[return-value]
    high = float(np.percentile(finite, 98))
    inside = np.argwhere(np.nan_to_num(vol.data) > 0.2 * high) if high > 0 else np.empty((0, 3))
    if not len(inside):
        return tuple(float(v) for v in vol.center_world())  # type: ignore[return-value]
    middle = (inside.min(axis=0) + inside.max(axis=0)) / 2
    x, y, z = nib.affines.apply_affine(vol.affine, middle)
    return float(x), float(y), float(z)


def opening_view(*, stored: dict[str, Any] | None, series: dict[str, Path],
                 key_start: dict[str, Any] | None = None, masks: Sequence[Path] = (),
                 family: str | None = None) -> OpeningView | None:
    """Where the viewer opens (the module docstring's order). `series`: the volumes shown
    (sequence -> path); `key_start`: the key slices' start point, if the case has them
    (`ui.volume_viewer.start_point`); `masks`: the mask files this page may show; `family`:
    the task's family (None on a page without a task). None: no volume to open."""
    if stored and (view := stored_view(stored, series)) is not None:
        return view
    if key_start:
        return OpeningView(key_start["plane"], tuple(key_start["mm"]), None, "key slices")
    plane = FAMILY_PLANES.get(family or "", "axial")
    for path in masks:
        if (centre := mask_centroid(Path(path))) is not None:
            return OpeningView(plane, centre, None, "lesion mask")
    if not series:
        return None
    return OpeningView(plane, brain_middle(next(iter(series.values()))), None, "family")
