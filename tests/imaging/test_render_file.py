"""render_to_file (the `nmb render` backend) and every image of nibabel's own test data."""

import io
from pathlib import Path

import nibabel as nib
import numpy as np
import pytest
from nibabel.testing import data_path
from PIL import Image

from errors import UserError
from imaging import render_to_file

NIBABEL_FILES = sorted(p for p in Path(data_path).iterdir() if p.is_file())


@pytest.fixture
def bold(tmp_path):
    path = tmp_path / "bold.nii.gz"
    data = np.stack([np.full((10, 12, 14), k + 1.0, dtype=np.float32) for k in range(3)], axis=-1)
    data[2:5, 3:6, 4:7, :] = 50.0
    nib.save(nib.Nifti1Image(data, np.diag([2.0, 2.0, 3.0, 1.0])), path)
    return path


@pytest.mark.parametrize("plane", ["axial", "coronal", "sagittal"])
def test_renders_the_middle_slice_as_png(bold, tmp_path, plane):
    out = render_to_file(bold, plane=plane, out=tmp_path / f"{plane}.png")
    image = Image.open(out)
    assert image.format == "PNG" and image.mode == "P"


def _grey_levels(path: Path) -> set[int]:
    """Palette indices of the image's pixels, without the orientation letters' colour."""
    from imaging.render import LETTER_INDEX

    return set(np.unique(np.asarray(Image.open(path)))) - {LETTER_INDEX}


def test_options_index_window_volume(bold, tmp_path):
    """Volume k holds k + 1 with a block of 50 in axial slices 4-6; window 25,50 spans 0..50,
    mapped to grey 0..253."""
    out = tmp_path / "x.png"
    render_to_file(bold, plane="axial", index=5, window="25,50", volume=2, out=out)
    assert _grey_levels(out) == {int(3 * 253 / 50), 253}
    render_to_file(bold, plane="axial", index=5, window="25,50", volume=0, out=out)
    assert _grey_levels(out) == {int(1 * 253 / 50), 253}
    render_to_file(bold, plane="axial", index=0, window="25,50", volume=2, out=out)
    assert _grey_levels(out) == {int(3 * 253 / 50)}  # no block in slice 0
    render_to_file(bold, plane="axial", index=5, window="full", volume=2, out=out)
    assert _grey_levels(out) == {0, 253}  # full = min..max


def test_sagittal_is_the_same_in_both_conventions(bold, tmp_path):
    """The radiological/neurological switch flips axial and coronal views only (docs/viewer.md)."""
    kw = {"window": "full", "volume": 2}
    radiological = render_to_file(bold, plane="sagittal", out=tmp_path / "r.png", **kw)
    neurological = render_to_file(bold, plane="sagittal", radiological=False,
                                  out=tmp_path / "n.png", **kw)
    assert radiological.read_bytes() == neurological.read_bytes()


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"plane": "oblique"}, "plane"),
        ({"index": 14}, "out of range"),
        ({"index": -1}, "out of range"),
        ({"window": "bright"}, "window"),
        ({"volume": 3}, "volume 3 out of range"),
    ],
)
def test_user_mistakes_raise_user_error(bold, tmp_path, options, match):
    with pytest.raises(UserError, match=match):
        render_to_file(bold, out=tmp_path / "x.png", **options)


def test_unwritable_output_is_a_user_error(bold, tmp_path):
    with pytest.raises(UserError, match="cannot write"):
        render_to_file(bold, out=tmp_path / "no" / "such" / "dir.png")


def test_a_link_planted_at_the_output_name_is_not_written_through(bold, tmp_path):
    """Before: the PNG overwrote the link's target (a shared folder, another user's file)."""
    target = tmp_path / "victim.txt"
    target.write_text("keep")
    (tmp_path / "slice.png").symlink_to(target)
    with pytest.raises(UserError, match=r"slice.png: cannot write the PNG \(Too many levels"):
        render_to_file(bold, out=tmp_path / "slice.png")
    assert target.read_text() == "keep"


@pytest.mark.parametrize("path", NIBABEL_FILES, ids=lambda p: p.name)
def test_every_nibabel_test_file_renders_or_is_refused_cleanly(path, tmp_path):
    try:
        out = render_to_file(path, plane="coronal", out=tmp_path / "slice.png")
    except UserError as exc:
        message = str(exc)
        assert message.startswith(path.name) and "\n" not in message
        return
    image = Image.open(io.BytesIO(out.read_bytes()))
    assert image.format == "PNG" and min(image.size) > 0


def test_known_nibabel_files_render_or_are_refused_for_their_reason(tmp_path):
    """The parametrized test above passes for any outcome; these files have a known one."""
    data = Path(data_path)
    for name in ("anatomical.nii", "example4d.nii.gz", "test.mgz", "tiny.mnc"):
        assert Image.open(render_to_file(data / name, out=tmp_path / "x.png")).format == "PNG"
    with pytest.raises(UserError, match="CIFTI"):
        render_to_file(data / "row_major.dconn.nii", out=tmp_path / "x.png")
