"""The case's pictures (2-D key images, figures) in the browser: a small Streamlit component.

The component (`ui/picture_frontend/index.html`, plain HTML and JavaScript, no build step)
draws each picture as an `<img>`: no WebGL, so no texture limit, upright at any size, colour
kept. It receives `picture_args`: for each picture its sequence label, its caption, the URL of
its display copy (`ui.server.volume_server.publish_picture`) and that copy's size; nothing else (no
case text, plane, model or rater information). Pictures are fetched by URL and cached by the
browser, so a rerun sends these few strings again, not the pixels.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import streamlit.components.v1 as components
from PIL import Image

from ui.server.volume_server import DISPLAY_SIDE, publish_picture

FRONTEND = Path(__file__).parent / "picture_frontend"
_component = components.declare_component("nmb_picture_viewer", path=str(FRONTEND))


def display_size(width: int, height: int) -> tuple[int, int]:
    """The size of a picture's display copy (longest side at most DISPLAY_SIDE)."""
    if max(width, height) <= DISPLAY_SIDE:
        return width, height
    scale = DISPLAY_SIDE / max(width, height)
    return max(1, round(width * scale)), max(1, round(height * scale))


def picture_args(pictures: list[tuple[str, Path, str | None, str | None]], *,
                 login_token: str | None = None) -> tuple[dict[str, Any], dict[int, str]]:
    """(what the component receives, {index: why it cannot be shown}) for (label, stored
    path, caption, stored sha256 or None) of each picture; the URLs open only for the login of
    `login_token` (a picture whose sha256 is given is not hashed again)."""
    shown, failures = [], {}
    for i, (label, path, caption, sha256) in enumerate(pictures):
        try:
            with Image.open(path) as header:  # the stored, sanitised PNG: header only
                width, height = display_size(*header.size)
            url = publish_picture(path, login_token=login_token, sha256=sha256)
            shown.append({"label": label, "caption": caption or "", "url": url,
                          "width": width, "height": height})
        except OSError as exc:
            failures[i] = f"{label}: this picture cannot be shown ({type(exc).__name__})"
    return {"pictures": shown}, failures


def picture_viewer(args: dict[str, Any], *, key: str) -> None:
    """Show the pictures."""
    _component(**args, key=key, default=None)
