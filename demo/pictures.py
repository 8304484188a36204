"""The demo's picture case: key images and a multi-panel figure rendered from a synthetic case's
volumes (MNI152-derived, `demo.images`), as a curator would export them for a release.

Case `PICTURE_CASE` (normal-pressure hydrocephalus) has no volumes in the demo: its T1 is a
three-panel figure (axial, coronal, sagittal; panel letters, a red arrow at the enlarged
ventricles, about 3,000 x 1,000 pixels: wider than a browser's 2,048-pixel WebGL texture), its FLAIR
an axial key image (JPEG) and its T2 a coronal key image (PNG). Every picture says SYNTHETIC.
No patient data.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from demo.images import save_series
from imaging.render import slice_grey
from imaging.slicing import take_slice
from imaging.volume import decode_volume
from imaging.window import preset_window

PICTURE_CASE = "syn-10"
FIGURE_HEIGHT = 1000
KEY_IMAGE_HEIGHT = 720
RED = (230, 20, 20)
#: Where the slices cross (world mm, RAS+): the sagittal one through the right ventricle.
THROUGH_MM = (12.0, -18.0, 18.0)


def _font(size: int) -> ImageFont.ImageFont | ImageFont.FreeTypeFont:
    try:
        return ImageFont.load_default(size=size)
    except TypeError:  # Pillow without FreeType
        return ImageFont.load_default()


def _panel(volume, plane: str, height: int) -> Image.Image:
    """One slice through `THROUGH_MM`, windowed "auto", radiological, scaled to `height`."""
    sl = take_slice(volume, plane, world_mm=np.asarray(THROUGH_MM))
    grey = Image.fromarray(slice_grey(sl, preset_window(volume.intensity_stats(), "auto")))
    row_mm, col_mm = sl.pixel_mm
    width = round(grey.width * col_mm / row_mm * height / grey.height)
    return grey.resize((width, height), Image.Resampling.BICUBIC)


def _arrow(draw: ImageDraw.ImageDraw, tip: tuple[float, float], length: float) -> None:
    """A red arrow pointing down-left at `tip`, from the upper right."""
    x, y = tip
    d = length / np.sqrt(2)
    draw.line([(x + d, y - d), (x + 0.18 * d, y - 0.18 * d)], fill=RED, width=max(4, round(length / 14)))
    head = length * 0.32
    draw.polygon([(x, y), (x + head, y - head * 0.25), (x + head * 0.25, y - head)], fill=RED)


def _label(img: Image.Image, text: str, at: tuple[int, int], size: int) -> None:
    white = 255 if img.mode == "L" else (255, 255, 255)
    ImageDraw.Draw(img).text(at, text, fill=white, font=_font(size))


def write_pictures(series: dict[str, np.ndarray], affine: np.ndarray, folder: Path
                   ) -> list[dict[str, str]]:
    """Render the picture case's images into `folder`; its `series` entries for case.json."""
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        vols = {}
        for seq in ("T1", "FLAIR", "T2"):
            save_series(series[seq], affine, Path(tmp) / f"{seq}.nii.gz", sequence=seq)
            vols[seq] = decode_volume(Path(tmp) / f"{seq}.nii.gz")
        panels = [_panel(vols["T1"], plane, FIGURE_HEIGHT - 80)
                  for plane in ("axial", "coronal", "sagittal")]
        flair = _panel(vols["FLAIR"], "axial", KEY_IMAGE_HEIGHT).convert("RGB")
        t2 = _panel(vols["T2"], "coronal", KEY_IMAGE_HEIGHT)
    gap = 40
    width = max(2940, sum(p.width for p in panels) + gap * (len(panels) + 1))
    figure = Image.new("RGB", (width, FIGURE_HEIGHT), (0, 0, 0))
    x = (width - sum(p.width for p in panels) - gap * (len(panels) - 1)) // 2
    for letter, panel in zip("ABC", panels, strict=True):
        figure.paste(panel.convert("RGB"), (x, 60))
        _label(figure, letter, (x + 12, 70), 64)
        if letter == "A":  # the enlarged right lateral ventricle, just off the midline
            _arrow(ImageDraw.Draw(figure), (x + panel.width * 0.44, 60 + panel.height * 0.45),
                   panel.height * 0.28)
        x += panel.width + gap
    _label(figure, "SYNTHETIC (MNI152-derived) - not patient data", (20, FIGURE_HEIGHT - 50), 32)
    figure.save(folder / "t1-figure.png", format="PNG")
    for img in (flair, t2):
        _label(img, "SYNTHETIC", (10, img.height - 34), 24)
    flair.save(folder / "flair-axial.jpg", format="JPEG", quality=92)
    t2.save(folder / "t2-coronal.png", format="PNG")
    return [
        {"sequence": "T1", "file": "t1-figure.png", "plane": "none",
         "caption": "T1: A axial, B coronal, C sagittal; arrow added by the curator"},
        {"sequence": "FLAIR", "file": "flair-axial.jpg", "plane": "axial"},
        {"sequence": "T2", "file": "t2-coronal.png", "plane": "coronal"},
    ]
