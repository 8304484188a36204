"""Load, reorient, window, slice and render MRI series (nibabel, numpy, Pillow; no Streamlit).

Public API:
- `inspect_image(path) -> ImageInfo`: validate a series image for import (UserError if not).
- `inspect_mask(path) -> (ImageInfo, world box)`: validate a lesion mask; `image_box`, `overlaps`.
- `load_volume(path, volume=0) -> Volume`: decoded RAS+ volume from the process-wide cache.
- `take_slice(volume, plane, index=|world_mm=, crosshair_mm=, radiological=) -> Slice`.
- `preset_window(stats, preset)`, `Window.from_level_width(level, width)`, `parse_window(text)`.
- `render_png(slice, window) -> bytes`; `render_to_file(path, ..., out=) -> Path` for the CLI.
- `sanitise_picture(path) -> Picture`: check and sanitise a 2-D picture (PNG, JPEG, WebP) for
  import; `downscaled_png(path, max_side)`: the copy a model or browser is sent; `sniff(head)`.
"""

from imaging.geometry import PLANES
from imaging.image_file import ImageInfo, inspect_image
from imaging.mask import image_box, inspect_mask, overlaps
from imaging.picture import Picture, downscaled_png, sanitise_picture, sniff
from imaging.render import render_png, render_to_file
from imaging.slicing import Slice, slice_index, slice_world, take_slice
from imaging.volume import Volume, load_volume, volume_cache
from imaging.window import PRESETS, IntensityStats, Window, parse_window, preset_window

__all__ = [
    "PLANES",
    "PRESETS",
    "ImageInfo",
    "IntensityStats",
    "Picture",
    "Slice",
    "Volume",
    "Window",
    "downscaled_png",
    "image_box",
    "inspect_image",
    "inspect_mask",
    "load_volume",
    "parse_window",
    "overlaps",
    "preset_window",
    "render_png",
    "render_to_file",
    "sanitise_picture",
    "slice_index",
    "slice_world",
    "sniff",
    "take_slice",
    "volume_cache",
]
