"""Display windows (level/width) and their mapping of intensities to 8-bit grey.

The automatic window spans the 0.5-99.5 percentiles of the finite non-zero ("brain") voxels,
a robust-range rule common to MRI viewers (e.g. FSLeyes and MRIcroGL clip display ranges at
robust percentiles so that a few very bright voxels do not darken the image); "tight" uses
2-98. Percentiles are numpy's default linear interpolation (Hyndman & Fan 1996, definition 7).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from errors import UserError

PRESETS: tuple[str, ...] = ("auto", "full", "tight")

# Grey levels used for the image; the two top palette entries are kept for overlays.
GREY_TOP = 253
FLOAT32_MAX = float(np.finfo(np.float32).max)  # `to_grey` works in float32


@dataclass(frozen=True)
class IntensityStats:
    """Intensity summary of one volume, computed once.

    `minimum`/`maximum`: range of the finite voxels. Percentiles: of the finite non-zero
    ("brain") voxels, `n_brain` of them; of all finite voxels if there is none; 0 if no voxel
    is finite.
    """

    minimum: float
    maximum: float
    p0_5: float
    p2: float
    p98: float
    p99_5: float
    n_brain: int


def intensity_stats(data: np.ndarray, *, all_finite: bool = False) -> IntensityStats:
    """Finite range and non-zero percentiles (0.5, 2, 98, 99.5) of `data` (see IntensityStats).

    `all_finite=True` (the caller knows there is no NaN/inf) skips the finite mask copy.
    """
    finite = data if all_finite else data[np.isfinite(data)]
    if finite.size == 0:
        return IntensityStats(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0)
    brain = finite[finite != 0]  # a copy: percentile may reorder it in place
    n_brain = int(brain.size)
    values = brain if n_brain else np.array(finite, copy=True)
    p = np.percentile(values.ravel(), [0.5, 2.0, 98.0, 99.5], overwrite_input=True)
    return IntensityStats(
        float(finite.min()), float(finite.max()), *(float(v) for v in p), n_brain
    )


@dataclass(frozen=True)
class Window:
    """Intensities in [low, high] are spread over the grey scale; outside is clipped."""

    low: float
    high: float

    @property
    def level(self) -> float:
        return (self.low + self.high) / 2

    @property
    def width(self) -> float:
        return self.high - self.low

    @classmethod
    def from_level_width(cls, level: float, width: float) -> Window:
        """The window centred on `level`, `width` wide (width must be > 0)."""
        if not (math.isfinite(level) and math.isfinite(width)) or width <= 0:
            raise UserError(f"window level {level} / width {width}: width must be a number > 0")
        low, high = level - width / 2, level + width / 2
        if max(abs(low), abs(high)) > FLOAT32_MAX or GREY_TOP / width > FLOAT32_MAX:
            raise UserError(f"window level {level:g} / width {width:g}: outside the float32 range "
                            f"intensities are windowed in (|level| + width/2 at most "
                            f"{FLOAT32_MAX:.3g}, width at least {GREY_TOP / FLOAT32_MAX:.3g})")
        return cls(low, high)


def _usable(low: float, high: float, stats: IntensityStats) -> Window:
    """`Window(low, high)`, made non-degenerate when low >= high.

    Falls back to the full finite range (a 0/1 mask shows white on black); a volume with one
    value shows it mid-grey, or black if that value is 0 (empty, all-NaN volumes).
    """
    if high > low:
        return Window(low, high)
    if stats.maximum > stats.minimum:
        return Window(stats.minimum, stats.maximum)
    value = stats.maximum
    if value == 0:
        return Window(0.0, 1.0)
    half = abs(value) / 2
    return Window(value - half, value + half)


def preset_window(stats: IntensityStats, preset: str = "auto") -> Window:
    """The window of a preset: auto (0.5-99.5 %), full (min-max) or tight (2-98 %)."""
    if preset == "auto":
        return _usable(stats.p0_5, stats.p99_5, stats)
    if preset == "full":
        return _usable(stats.minimum, stats.maximum, stats)
    if preset == "tight":
        return _usable(stats.p2, stats.p98, stats)
    raise UserError(f"window preset {preset!r} is not one of {', '.join(PRESETS)}")


def parse_window(text: str, stats: IntensityStats) -> Window:
    """A window from the CLI form: a preset name, or `LEVEL,WIDTH` in image units."""
    text = text.strip()
    if text in PRESETS:
        return preset_window(stats, text)
    parts = text.split(",")
    try:
        level, width = (float(p) for p in parts)
    except ValueError:
        raise UserError(
            f"window {text!r}: expected one of {', '.join(PRESETS)} or LEVEL,WIDTH (e.g. 300,600)"
        ) from None
    return Window.from_level_width(level, width)


def to_grey(pixels: np.ndarray, window: Window, top: int = GREY_TOP) -> np.ndarray:
    """Map intensities to uint8 grey levels 0..`top` through `window` (linear, clipped).

    Non-finite input values come out as 0 (background) only if the caller masks them; see
    `imaging.render`. Runs in float32 to keep the slice hot path cheap.
    """
    scale = np.float32(top / window.width)
    grey = np.subtract(pixels, np.float32(window.low), dtype=np.float32)
    grey *= scale
    np.clip(grey, 0, top, out=grey)
    return grey.astype(np.uint8)
