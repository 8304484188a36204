"""The in-browser volume viewer: a thin Streamlit component over NiiVue (WebGL2).

The component (`ui/viewer_frontend/`, built bundle in `bundle/`) receives `viewer_args`: each
series' sequence label and the URL of its volume (`ui.server.volume_server`); for each mask its
label, URL and the series it is drawn on (None: every series); and a height. Which masks a
page passes is decided by `db.study.masks` (never in an exam). Where the case names key slices
(`Case.key_slices`, the slices a model is shown) and the page passes them, `keys` (one jump per
key slice: label, plane, world mm); `start`, where the viewer opens (plane, world mm, layout
and its source: `imaging.opening_view`: the case's hanging protocol or an admin's view, its key
slices, the lesion mask's centre where masks are shown, else the middle of the brain in the
family's plane); `offerView` (/admin) adds a "Use this view" button; `prefetch`, the URLs of the
next item's volumes, fetched into the browser's cache once this case is drawn; `fit: "bottom"`
makes the viewer fill the window from where it stands, its tiles in one row on a short window;
`item`, the page's opaque key of the item shown (`ui.element_keys`), echoed in every answer;
`tools`, the measuring tools the study offers (ruler, circular ROI).
Nothing else reaches the browser from here: no case text, no model, response or rater
information. Volumes are fetched by URL and cached by the browser, so a rerun of the page
(every rubric click) sends these few strings again, not the images.

The component answers when it cannot show the case: `{"webgl2": false}` (no WebGL2 in
this browser) or `{"failed": [labels]}` (no volume could be loaded); the case panel then
falls back to the PNG viewer. With `offerView`, "Use this view" answers `{"view": {plane, mm,
layout}, "n": clicks}` (`chosen_view`). A page keeps one viewer (one component key) for every
item it shows, so the browser keeps its frame and NiiVue instances from case to case; its last
answer outlives the item it was about, so every answer names its `item` and `answer_for`
drops the answers of other items.
"""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import streamlit.components.v1 as components

from db.study.masks import MaskImage
from db.study.viewer_tools import TOOLS
from errors import UserError
from imaging.geometry import NORMAL_AXIS, PLANES
from imaging.key_slices import key_slice_world
from imaging.opening_view import LAYOUTS, VIEW_PLANES, opening_view
from ui.server.volume_server import publish as publish_for

BUNDLE = Path(__file__).parent / "viewer_frontend" / "bundle"
_component = components.declare_component("nmb_volume_viewer", path=str(BUNDLE))
_log = logging.getLogger(__name__)
_world = functools.lru_cache(maxsize=256)(key_slice_world)  # stored files never change


def viewer_args(series: list[tuple[str, Path]], masks: Sequence[MaskImage] = (),
                height: int = 620, *, login_token: str | None = None,
                key_slices: Sequence[dict[str, Any]] = (), fit: str | None = None,
                opening: dict[str, Any] | None = None, family: str | None = None,
                offer_view: bool = False, prefetch: Sequence[tuple[str, Path]] = (),
                item: str | None = None, tools: Sequence[str] = TOOLS,
                ) -> tuple[dict[str, Any], dict[int, str]]:
    """(what the component receives, {series position: why it cannot be shown}); the URLs
    open only for the login of `login_token` (`ui.server.volume_server`; a series that keeps its stored
    sha256, `db.study.cases.SeriesImage`, is not hashed again). `key_slices` and `fit`: see the
    module docstring; `opening` (the case's stored opening view) and `family` (the task's):
    where it opens (`imaging.opening_view`); `offer_view`: a "Use this view" button (/admin);
    `prefetch`: the next item's volumes, fetched into the browser's cache once this case is
    drawn (a URL of the same login: it opens nothing the login could not); `item`: see the
    module docstring; `tools`: the measuring tools the study offers (`db.study.viewer_tools`)."""
    publish = functools.partial(publish_for, login_token=login_token)
    shown, failures = [], {}
    for i, one in enumerate(series):
        label, path = one
        try:
            shown.append({"label": label,
                          "url": publish(path, sha256=getattr(one, "sha256", None))})
        except UserError as exc:
            failures[i] = str(exc)
        except OSError as exc:  # its message names the stored path: not for raters' eyes
            failures[i] = f"{label}: this series cannot be read ({type(exc).__name__})"
    overlays = []
    for m in masks:
        try:
            overlays.append({"label": m.label, "url": publish(m.path, sha256=m.sha256),
                             "series": m.series})
        except (UserError, OSError):
            continue  # a missing mask hides nothing but itself
    args: dict[str, Any] = {"series": shown, "masks": overlays, "height": height, "item": item,
                            "tools": list(tools)}
    shown_paths = {label: Path(path) for i, (label, path) in enumerate(series)
                   if i not in failures}
    keys = key_slice_jumps(shown_paths, key_slices)
    if keys:
        args["keys"] = keys
    try:
        view = opening_view(stored=opening, series=shown_paths,
                            key_start=start_point(keys) if keys else None,
                            masks=[Path(m.path) for m in masks], family=family)
    except (UserError, OSError, ValueError):
        _log.warning("no opening view for %s", list(shown_paths), exc_info=True)
        view = None  # the viewer's own default: the volume's centre
    if view is not None:
        args["start"] = view.as_args()
    if offer_view:
        args["offerView"] = True
    ahead = []
    for one in prefetch:
        try:
            ahead.append(publish(one[1], sha256=getattr(one, "sha256", None)))
        except (UserError, OSError):
            continue  # the next item shows its own error
    if ahead:
        args["prefetch"] = ahead
    if fit is not None:
        args["fit"] = fit
    return args, failures


def key_slice_jumps(paths: dict[str, Path], key_slices: Sequence[dict[str, Any]]
                    ) -> list[dict[str, Any]]:
    """One jump per key slice on a shown series: its label ("T1C axial 48", 1-based as the
    captions), plane and world point (`imaging.key_slices.key_slice_world`)."""
    jumps = []
    for ks in key_slices:
        path, plane, index = paths.get(ks.get("series")), ks.get("plane"), ks.get("index")
        if path is None or plane not in PLANES:
            continue
        try:
            mm = _world(path, plane, index)
        except (UserError, OSError):
            continue  # the series' own error is shown by the viewer
        where = "middle" if index is None else str(int(index) + 1)
        jumps.append({"label": f"{ks['series']} {plane} {where}", "plane": plane,
                      "mm": [round(v, 3) for v in mm]})
    return jumps


def start_point(jumps: list[dict[str, Any]]) -> dict[str, Any]:
    """Where the viewer opens: the first jump's plane, and along each axis the coordinate of
    the first jump across that axis (else the first jump's)."""
    mm = list(jumps[0]["mm"])
    for axis in range(3):
        across = next((j for j in jumps if NORMAL_AXIS[j["plane"]] == axis), None)
        if across is not None:
            mm[axis] = across["mm"][axis]
    return {"plane": jumps[0]["plane"], "mm": mm}


def volume_viewer(args: dict[str, Any], *, key: str) -> dict[str, Any] | None:
    """Show the viewer; return what it reported (None while all is well)."""
    return _component(**args, key=key, default=None)


NO_WEBGL2 = "This browser has no WebGL2, so the interactive viewer is off: showing slice images."
NOT_LOADED = "The interactive viewer could not load this case's volumes: showing slice images."


def answer_for(reported: Any, item: str | None) -> dict[str, Any] | None:
    """What the viewer answered about `item`; None for nothing, or for an answer about another
    item (the frame serves every item of the page)."""
    if isinstance(reported, dict) and reported.get("item") == item:
        return reported
    return None


def cannot_show(reported: Any) -> str | None:
    """Why the viewer fell back (NO_WEBGL2 or NOT_LOADED), from what it reported; else None."""
    if not isinstance(reported, dict):
        return None
    if reported.get("webgl2") is False:
        return NO_WEBGL2
    return NOT_LOADED if reported.get("failed") else None


def chosen_view(reported: Any) -> tuple[int, dict[str, Any]] | None:
    """(click number, {plane, mm, layout}) of the viewer's "Use this view", checked (what a
    browser sends is untrusted); None when it sent none or something else."""
    if not isinstance(reported, dict) or not isinstance(reported.get("view"), dict):
        return None
    view, n = reported["view"], reported.get("n")
    mm = view.get("mm")
    if (not isinstance(n, int) or view.get("plane") not in VIEW_PLANES
            or not isinstance(mm, list) or len(mm) != 3
            or not all(isinstance(v, int | float) and math.isfinite(v) and abs(v) < 1e5
                       for v in mm)):
        return None
    layout = view.get("layout") if view.get("layout") in LAYOUTS else None
    return n, {"plane": view["plane"], "mm": [round(float(v), 3) for v in mm], "layout": layout}
