"""The in-browser volume viewer: a thin Streamlit component over NiiVue (WebGL2).

The component (`ui/viewer_frontend/`, built bundle in `bundle/`) receives `viewer_args`: each
series' sequence label and the URL of its volume (`ui.volume_server`); for each mask its
label, URL and the series it is drawn on (None: every series); and a height. Which masks a
page passes is decided by `db.study.masks` (never in an exam). Nothing else reaches the browser
from here: no case text, no model, response or rater information. Volumes are fetched by
URL and cached by the browser, so a rerun of the page (every rubric click) sends these few
strings again, not the images.

The component answers only when it cannot show the case: `{"webgl2": false}` (no WebGL2 in
this browser) or `{"failed": [labels]}` (no volume could be loaded); the case panel then
falls back to the PNG viewer.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import streamlit.components.v1 as components

from db.study.masks import MaskImage
from errors import UserError
from ui.volume_server import publish as publish_for

BUNDLE = Path(__file__).parent / "viewer_frontend" / "bundle"
_component = components.declare_component("nmb_volume_viewer", path=str(BUNDLE))


def viewer_args(series: list[tuple[str, Path]], masks: Sequence[MaskImage] = (),
                height: int = 620, *, login_token: str | None = None
                ) -> tuple[dict[str, Any], dict[int, str]]:
    """(what the component receives, {series position: why it cannot be shown}); the URLs
    open only for the login of `login_token` (`ui.volume_server`)."""
    publish = functools.partial(publish_for, login_token=login_token)
    shown, failures = [], {}
    for i, (label, path) in enumerate(series):
        try:
            shown.append({"label": label, "url": publish(path)})
        except (UserError, OSError) as exc:
            failures[i] = str(exc)
    overlays = []
    for m in masks:
        try:
            overlays.append({"label": m.label, "url": publish(m.path), "series": m.series})
        except (UserError, OSError):
            continue  # a missing mask hides nothing but itself
    return {"series": shown, "masks": overlays, "height": height}, failures


def volume_viewer(args: dict[str, Any], *, key: str) -> dict[str, Any] | None:
    """Show the viewer; return what it reported (None while all is well)."""
    return _component(**args, key=key, default=None)


NO_WEBGL2 = "This browser has no WebGL2, so the interactive viewer is off: showing slice images."
NOT_LOADED = "The interactive viewer could not load this case's volumes: showing slice images."


def cannot_show(reported: Any) -> str | None:
    """Why the viewer fell back (NO_WEBGL2 or NOT_LOADED), from what it reported; else None."""
    if not isinstance(reported, dict):
        return None
    if reported.get("webgl2") is False:
        return NO_WEBGL2
    return NOT_LOADED if reported.get("failed") else None
