"""Render a slice to PNG bytes with Pillow, straight from numpy (no matplotlib).

The image is an 8-bit palette PNG: grey levels 0..253 carry the windowed intensities and the
two top entries colour the overlays (orientation letters, crosshair), so overlays cost no RGB
conversion. Non-square pixels are resampled to the true aspect from the voxel sizes; tiny
images are enlarged (nearest neighbour) so the letters fit. Lossless only (PNG).
"""

from __future__ import annotations

import io
import math
import os
from functools import lru_cache
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from errors import UserError
from imaging.geometry import check_plane
from imaging.slicing import Slice, take_slice
from imaging.volume import load_volume
from imaging.window import GREY_TOP, Window, parse_window, to_grey

PNG_COMPRESS_LEVEL = 1  # zlib level: fast to encode, still lossless
MIN_DISPLAY_PX = 192  # smaller images are enlarged by an integer factor
MAX_DISPLAY_PX = 8192  # larger ones (voxels of absurd proportions) are shrunk to it
LETTER_INDEX, CROSSHAIR_INDEX = GREY_TOP + 1, GREY_TOP + 2
LETTER_RGB, CROSSHAIR_RGB = (255, 220, 0), (0, 230, 0)


def _palette() -> list[int]:
    grey = [round(i * 255 / GREY_TOP) for i in range(GREY_TOP + 1)]
    rgb = [c for g in grey for c in (g, g, g)]
    return rgb + list(LETTER_RGB) + list(CROSSHAIR_RGB)


PALETTE = _palette()


@lru_cache(maxsize=16)
def _font(size: int) -> ImageFont.ImageFont | ImageFont.FreeTypeFont:
    try:
        return ImageFont.load_default(size=size)
    except (TypeError, OSError):  # Pillow without FreeType: fixed bitmap font
        return ImageFont.load_default()


def display_size(sl: Slice) -> tuple[int, int]:
    """(width, height) in screen pixels: true aspect from pixel_mm, tiny images enlarged, none
    longer than MAX_DISPLAY_PX (a file may claim voxels of any proportions)."""
    rows, cols = sl.pixels.shape
    row_mm, col_mm = sl.pixel_mm
    unit = min(row_mm, col_mm)
    width = cols * min(col_mm / unit, MAX_DISPLAY_PX)
    height = rows * min(row_mm / unit, MAX_DISPLAY_PX)
    factor = max(1, math.ceil(MIN_DISPLAY_PX / max(width, height)))
    shrink = max(1.0, max(width, height) * factor / MAX_DISPLAY_PX)
    return (max(1, round(width * factor / shrink)), max(1, round(height * factor / shrink)))


def slice_grey(sl: Slice, window: Window) -> np.ndarray:
    """uint8 grey levels of the slice; non-finite voxels and out-of-view slices are 0."""
    if not sl.in_view:
        return np.zeros(sl.pixels.shape, dtype=np.uint8)
    if not sl.has_nonfinite:
        return to_grey(sl.pixels, window)
    finite = np.isfinite(sl.pixels)
    grey = to_grey(np.where(finite, sl.pixels, np.float32(window.low)), window)
    grey[~finite] = 0
    return grey


def render_png(sl: Slice, window: Window, *, annotate: bool = True) -> bytes:
    """PNG bytes of the windowed slice, with orientation letters and crosshair if `annotate`."""
    image = Image.fromarray(slice_grey(sl, window))
    rows, cols = sl.pixels.shape
    width, height = display_size(sl)
    if (width, height) != (cols, rows):
        enlarged = width >= 2 * cols and height >= 2 * rows
        resample = Image.Resampling.NEAREST if enlarged else Image.Resampling.BILINEAR
        image = image.resize((width, height), resample)
    image.putpalette(PALETTE)
    if annotate:
        draw = ImageDraw.Draw(image)
        if sl.crosshair is not None:
            _draw_crosshair(draw, sl.crosshair, (cols, rows), (width, height))
        _draw_letters(draw, sl.letters, (width, height))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", compress_level=PNG_COMPRESS_LEVEL)
    return buffer.getvalue()


def _draw_crosshair(
    draw: ImageDraw.ImageDraw,
    at: tuple[float, float],
    grid: tuple[int, int],
    size: tuple[int, int],
) -> None:
    """Two lines through the point, leaving a small gap so the anatomy under it stays visible."""
    (row, col), (cols, rows), (width, height) = at, grid, size
    x = (col + 0.5) * width / cols - 0.5
    y = (row + 0.5) * height / rows - 0.5
    gap = max(3, min(width, height) // 40)
    for x0, x1 in ((0, x - gap), (x + gap, width - 1)):
        if x1 > x0:
            draw.line([(x0, y), (x1, y)], fill=CROSSHAIR_INDEX)
    for y0, y1 in ((0, y - gap), (y + gap, height - 1)):
        if y1 > y0:
            draw.line([(x, y0), (x, y1)], fill=CROSSHAIR_INDEX)


def _draw_letters(draw: ImageDraw.ImageDraw, letters: dict[str, str], size: tuple[int, int]) -> None:
    width, height = size
    font = _font(max(10, min(width, height) // 14))
    pad = 2
    spots = {
        "top": ((width / 2, pad), "mt"),
        "bottom": ((width / 2, height - 1 - pad), "mb"),
        "left": ((pad, height / 2), "lm"),
        "right": ((width - 1 - pad, height / 2), "rm"),
    }
    for edge, letter in letters.items():
        xy, anchor = spots[edge]
        try:
            draw.text(xy, letter, fill=LETTER_INDEX, font=font, anchor=anchor)
        except ValueError:  # bitmap fonts do not support anchors
            draw.text(xy, letter, fill=LETTER_INDEX, font=font)


def render_to_file(
    path: Path,
    *,
    plane: str = "axial",
    index: int | None = None,
    window: str = "auto",
    volume: int = 0,
    out: Path,
    radiological: bool = True,
) -> Path:
    """Render one slice of the image at `path` to the PNG file `out` (middle slice by default).

    Raises UserError for a bad plane, index, volume or window, or an image it cannot show.
    """
    check_plane(plane)
    vol = load_volume(Path(path), volume)
    win = parse_window(window, vol.intensity_stats())
    sl = take_slice(vol, plane, index=index, radiological=radiological)
    png = render_png(sl, win)
    out = Path(out)
    try:  # never through a link planted at the name (O_NOFOLLOW: ELOOP)
        fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "wb") as fh:
            fh.write(png)
    except OSError as exc:
        raise UserError(f"{out}: cannot write the PNG ({exc.strerror or exc})") from None
    return out
