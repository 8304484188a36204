"""Windows: robust auto range, presets, manual level/width, and degenerate volumes."""

import io
import warnings

import nibabel as nib
import numpy as np
import pytest
from PIL import Image

from errors import UserError
from imaging import Window, load_volume, parse_window, preset_window, render_png, take_slice
from imaging.render import MAX_DISPLAY_PX, MIN_DISPLAY_PX
from imaging.window import GREY_TOP, intensity_stats, to_grey


def _save(tmp_path, data, name="v.nii", affine=None):
    path = tmp_path / name
    nib.save(nib.Nifti1Image(data, np.eye(4) if affine is None else affine), path)
    return path


def _grey_levels(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)))


def test_auto_window_is_the_robust_range_of_nonzero_voxels():
    data = np.zeros((10, 10, 10), dtype=np.float32)
    data[2:8, 2:8, 2:8] = np.arange(216, dtype=np.float32).reshape(6, 6, 6) + 1
    stats = intensity_stats(data)
    brain = data[data != 0]
    assert stats.n_brain == 216
    assert preset_window(stats, "auto") == Window(*np.percentile(brain, [0.5, 99.5]))
    assert preset_window(stats, "tight") == Window(*np.percentile(brain, [2, 98]))
    assert preset_window(stats, "full") == Window(0.0, 216.0)


def test_manual_and_parsed_windows():
    stats = intensity_stats(np.arange(100, dtype=np.float32).reshape(4, 5, 5))
    assert parse_window("300,600", stats) == Window(0.0, 600.0)
    assert parse_window(" tight ", stats) == preset_window(stats, "tight")
    for bad in ("bright", "1,2,3", "10,0", "10,-5", "nan,4"):
        with pytest.raises(UserError, match="window"):
            parse_window(bad, stats)


@pytest.mark.parametrize("text", ["1e308,1e308", "0,1e39", "-3e38,1e38", "0,1e-40"])
def test_a_window_beyond_float32_is_refused_not_rendered_as_noise(text):
    """`nmb render --window 1e308,1e308` overflowed float32 in `to_grey`: three RuntimeWarnings on
    stderr and a PNG of cast NaNs, exit 0. The window's ends and its grey scale must be finite
    in float32, the precision it is applied in."""
    stats = intensity_stats(np.arange(10, dtype=np.float32))
    with pytest.raises(UserError, match=r"^window level .* width .*: outside the float32 range"):
        parse_window(text, stats)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        grey = to_grey(np.arange(10, dtype=np.float32), parse_window("1e38,1e38", stats))
    assert grey.max() <= GREY_TOP


def test_constant_volume_shows_mid_grey(tmp_path):
    volume = load_volume(_save(tmp_path, np.full((6, 7, 8), 7.0, dtype=np.float32)))
    window = preset_window(volume.intensity_stats(), "auto")
    assert window.width > 0
    grey = _grey_levels(render_png(take_slice(volume, "axial"), window, annotate=False))
    assert np.all(np.abs(grey.astype(int) - GREY_TOP // 2) <= 1)


def test_binary_mask_shows_white_on_black():
    stats = intensity_stats(np.array([0, 0, 1, 1], dtype=np.float32).reshape(1, 2, 2))
    assert preset_window(stats, "auto") == Window(0.0, 1.0)


@pytest.mark.parametrize("fill", [np.nan, np.inf, 0.0])
def test_empty_and_non_finite_volumes_render_black_without_warnings(tmp_path, fill):
    path = _save(tmp_path, np.full((5, 6, 7), fill, dtype=np.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        volume = load_volume(path)
        for preset in ("auto", "full", "tight"):
            window = preset_window(volume.intensity_stats(), preset)
            assert np.isfinite([window.low, window.high]).all() and window.width > 0
            for plane in ("axial", "coronal", "sagittal"):
                png = render_png(take_slice(volume, plane), window, annotate=False)
                assert not _grey_levels(png).any()


def test_nan_and_inf_voxels_are_background(tmp_path):
    data = np.full((8, 8, 8), 50.0, dtype=np.float32)
    data[4, 4, :] = np.nan
    data[2, 2, :] = -np.inf
    data[6, 6, :] = np.inf
    volume = load_volume(_save(tmp_path, data))
    sl = take_slice(volume, "axial")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        png = render_png(sl, Window(0.0, 100.0), annotate=False)
    grey = _grey_levels(png)
    factor = grey.shape[0] // 8
    screen = grey[::factor, ::factor]  # undo the nearest-neighbour enlargement
    assert (screen == 0).sum() == 3
    assert np.all(screen[screen != 0] == to_grey(np.float32([50.0]), Window(0.0, 100.0))[0])


@pytest.mark.parametrize("shape", [(1, 1, 1), (2, 2, 2), (1, 3, 2)])
def test_tiny_volumes_render_enlarged(tmp_path, shape):
    volume = load_volume(_save(tmp_path, np.arange(np.prod(shape), dtype=np.float32).reshape(shape)))
    for plane in ("axial", "coronal", "sagittal"):
        window = preset_window(volume.intensity_stats())
        image = Image.open(io.BytesIO(render_png(take_slice(volume, plane), window)))
        assert max(image.size) >= MIN_DISPLAY_PX


@pytest.mark.parametrize("sizes, shape", [((1e38, 2.0, 2.0), (10, 12, 8)),
                                           ((0.01, 100.0, 1.0), (64, 64, 4))])
def test_voxels_of_absurd_proportions_render_within_bounds(tmp_path, sizes, shape):
    """A file's voxel sizes set the aspect (both pass the import's checks): a side of 1e38 mm
    was an OverflowError in Pillow, 0.01 x 100 mm a picture 640,000 pixels tall."""
    data = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    volume = load_volume(_save(tmp_path, data, affine=np.diag([*sizes, 1.0])))
    for plane in ("axial", "coronal", "sagittal"):
        image = Image.open(io.BytesIO(render_png(take_slice(volume, plane),
                                                 preset_window(volume.intensity_stats()))))
        assert max(image.size) <= MAX_DISPLAY_PX and min(image.size) >= 1


def test_scaled_integers_are_windowed_in_real_units(tmp_path):
    raw = np.arange(1, 1 + 4 * 5 * 6, dtype=np.int16).reshape(4, 5, 6)
    img = nib.Nifti1Image(raw, np.eye(4))
    img.header.set_slope_inter(2.5, -100.0)
    path = tmp_path / "scaled.nii.gz"
    nib.save(img, path)
    volume = load_volume(path)
    real = raw.astype(np.float32) * 2.5 - 100.0
    assert volume.data.min() == real.min() and volume.data.max() == real.max()
    assert preset_window(volume.intensity_stats(), "full") == Window(real.min(), real.max())


def test_anisotropic_voxels_keep_their_aspect(tmp_path):
    volume = load_volume(
        _save(tmp_path, np.ones((200, 200, 40), dtype=np.float32), affine=np.diag([1, 1, 5, 1]))
    )
    image = Image.open(io.BytesIO(render_png(take_slice(volume, "coronal"), Window(0, 2))))
    assert image.size == (200, 200)  # 200 mm wide (R-L) by 40 x 5 mm high (S-I)
