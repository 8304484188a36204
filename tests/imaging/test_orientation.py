"""A marker in the patient's left, anterior, superior brain lands where a radiologist expects.

Radiological mode: patient's left on screen right (axial, coronal); anterior at the top of the
axial view; superior at the top of coronal and sagittal; anterior on the left of the sagittal
view. Checked for several storage orders, on the slice array and on the decoded PNG.
"""

import io

import numpy as np
import pytest
from PIL import Image

from imaging import load_volume, preset_window, render_png, take_slice
from tests.imaging.synthetic import save, sphere_image

MARKER_MM = (-12.0, 9.0, 7.0)  # x < 0: patient's left; y > 0: anterior; z > 0: superior
STORAGE_ORDERS = ["RAS", "LAS", "LPI", "ASL", "IRP", "PSR"]


def _marker_centre(pixels: np.ndarray) -> tuple[float, float]:
    rows, cols = np.nonzero(pixels > 50)
    assert rows.size, "marker not in this slice"
    return rows.mean() / pixels.shape[0], cols.mean() / pixels.shape[1]


@pytest.fixture(params=STORAGE_ORDERS)
def marker_volume(request, tmp_path):
    img = sphere_image(request.param, (24, 26, 22), (2.0, 2.2, 2.4), MARKER_MM)
    return load_volume(save(img, tmp_path / f"marker_{request.param}.nii.gz"))


def test_left_marker_appears_on_screen_right_in_radiological_mode(marker_volume):
    for plane in ("axial", "coronal"):
        sl = take_slice(marker_volume, plane, world_mm=np.array(MARKER_MM))
        row, col = _marker_centre(sl.pixels)
        assert col > 0.5, f"{plane}: patient's left must be on screen right"
        assert row < 0.5, f"{plane}: anterior/superior must be at the top"
        assert sl.letters["left"] == "R" and sl.letters["right"] == "L"
    sl = take_slice(marker_volume, "sagittal", world_mm=np.array(MARKER_MM))
    row, col = _marker_centre(sl.pixels)
    assert sl.index < sl.n_slices / 2  # the left-hemisphere sagittal slice (RAS index)
    assert row < 0.5 and col < 0.5  # superior at top, anterior on the left
    assert sl.letters == {"top": "S", "bottom": "I", "left": "A", "right": "P"}
    mirror = take_slice(marker_volume, "sagittal", world_mm=np.array((12.0, 9.0, 7.0)))
    assert not (mirror.pixels > 50).any()  # nothing in the right hemisphere


def test_neurological_mode_flips_left_right(marker_volume):
    for plane in ("axial", "coronal"):
        sl = take_slice(marker_volume, plane, world_mm=np.array(MARKER_MM), radiological=False)
        _, col = _marker_centre(sl.pixels)
        assert col < 0.5
        assert sl.letters["left"] == "L" and sl.letters["right"] == "R"


@pytest.mark.parametrize("plane", ["axial", "coronal", "sagittal"])
def test_png_shows_marker_on_the_expected_side(tmp_path, plane):
    img = sphere_image("LPI", (24, 26, 22), (2.0, 2.2, 2.4), MARKER_MM)
    volume = load_volume(save(img, tmp_path / "lpi.nii"))
    sl = take_slice(volume, plane, world_mm=np.array(MARKER_MM))
    png = render_png(sl, preset_window(volume.intensity_stats(), "full"), annotate=False)
    decoded = np.asarray(Image.open(io.BytesIO(png)))  # palette indices = grey levels
    row, col = _marker_centre(decoded.astype(float) * 100 / decoded.max())
    expected_right = plane != "sagittal"  # left on screen right; sagittal: anterior on left
    assert (col > 0.5) == expected_right
    assert row < 0.5
