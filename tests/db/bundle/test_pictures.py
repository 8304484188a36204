"""Pictures as series (issue 23): imported sanitised (oriented, metadata stripped, PNG) into the
content-addressed store, next to volumes in one case; re-importing changes nothing."""

import hashlib
import io
import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageCms
from sqlmodel import Session, select

from db.bundle.importer import import_bundle
from db.engine import engine_for, nmb_home
from db.models import Series
from tests.db.bundle import pictures
from tests.db.bundle.bundles import write_bundle
from tests.warning_filters import recorded_without_catch_warnings

METADATA_CHUNKS = (b"tEXt", b"iTXt", b"zTXt", b"eXIf", b"iCCP", b"tIME", b"pHYs")


def _exif(orientation: int) -> bytes:
    exif = Image.Exif()
    exif[0x0112] = orientation  # Orientation
    exif[0x010F] = "Scanner Inc."  # Make
    exif[0x9003] = "2024:01:02 03:04:05"  # DateTimeOriginal
    return exif.tobytes()


def write_picture_bundle(dest: Path) -> Path:
    """The base bundle; case c1 gains a sagittal JPEG with EXIF (rotated 90°), a CMYK JPEG,
    a palette PNG with a text chunk, an LA PNG and a WebP (with plane and caption)."""
    root = write_bundle(dest)
    folder = root / "cases" / "c1"
    wide = pictures.wide_figure((300, 100))
    pictures.save(wide, folder / "exif.jpg", "JPEG", quality=95, exif=_exif(6),
                  comment=b"patient Jane Doe")
    pictures.save(wide.convert("CMYK"), folder / "cmyk.jpg", "JPEG", quality=95)
    from PIL import PngImagePlugin
    info = PngImagePlugin.PngInfo()
    info.add_text("Author", "Dr. Who")
    pictures.save(wide.convert("P"), folder / "palette.png", "PNG", pnginfo=info,
                  icc_profile=ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes())
    pictures.save(wide.convert("LA"), folder / "grey", "PNG")  # no extension: bytes decide
    pictures.save(wide, folder / "figure.webp", "WEBP", lossless=True)
    case = json.loads((folder / "case.json").read_text())
    case["series"] += [
        {"sequence": "SAG", "file": "exif.jpg", "plane": "sagittal"},
        {"sequence": "CMYK", "file": "cmyk.jpg"},
        {"sequence": "PAL", "file": "palette.png", "plane": "none", "caption": "Panel A"},
        {"sequence": "GREY", "file": "grey"},
        {"sequence": "FIG", "file": "figure.webp", "plane": "axial",
         "caption": "Axial FLAIR, arrow at the lesion"}]
    (folder / "case.json").write_text(json.dumps(case))
    return root


def _rows(url: str) -> dict[str, Series]:
    with Session(engine_for(url)) as s:
        return {r.sequence: r for r in s.exec(select(Series).where(Series.case_id == "c1"))}


def test_pictures_are_stored_sanitised_beside_volumes(database_url: str, tmp_path: Path) -> None:
    bundle = write_picture_bundle(tmp_path / "b")
    with Session(engine_for(database_url)) as s:
        summary = import_bundle(s, bundle)
    assert summary.new_series == 8
    rows = _rows(database_url)
    assert [rows[k].picture for k in ("T1", "FLAIR")] == [False, False]
    assert (rows["SAG"].plane, rows["SAG"].caption) == ("sagittal", None)
    assert (rows["FIG"].plane, rows["FIG"].caption) == ("axial", "Axial FLAIR, arrow at the lesion")
    assert rows["T1"].plane is None and rows["T1"].width is None
    for name in ("SAG", "CMYK", "PAL", "GREY", "FIG"):
        row = rows[name]
        data = (nmb_home() / row.path).read_bytes()
        assert row.picture and row.path.endswith(".png")
        assert hashlib.sha256(data).hexdigest() == row.sha256  # content-addressed
        assert not any(chunk in data for chunk in METADATA_CHUNKS), name
        assert b"Jane" not in data and b"Scanner" not in data and b"Dr. Who" not in data
        img = Image.open(io.BytesIO(data))
        assert img.format == "PNG" and img.info == {} and not img.getexif()
        assert [row.width, row.height] == row.shape == list(img.size)
        assert img.mode == ("L" if name == "GREY" else "RGB")
    # EXIF orientation 6 (rotate 90° clockwise to view): 300 x 100 is shown 100 x 300, the
    # white block (top-left of the figure) then at the top-right
    sag = np.asarray(Image.open(nmb_home() / rows["SAG"].path))
    assert sag.shape[:2] == (300, 100)
    assert sag[10:30, 70:90].min() > 200 and sag[10:30, 10:30].max() < 100
    fig = np.asarray(Image.open(nmb_home() / rows["FIG"].path)).astype(int)
    red = fig[60:90, 230:270].mean(axis=(0, 1))
    assert red[0] > 200 and red[1] < 30 and red[2] < 30  # colour kept
    cmyk = np.asarray(Image.open(nmb_home() / rows["CMYK"].path)).astype(int)
    assert cmyk[60:90, 230:270, 0].mean() > 180 and cmyk[60:90, 230:270, 1].mean() < 60
    with Session(engine_for(database_url)) as s:  # re-importing changes nothing
        again = import_bundle(s, bundle)
    assert (again.new_cases, again.new_series, again.unchanged_cases) == (0, 0, 2)


def test_sanitising_a_sanitised_picture_gives_the_same_bytes(tmp_path: Path) -> None:
    from imaging.picture import sanitise_picture

    src = pictures.save(pictures.wide_figure((400, 200)), tmp_path / "a.jpg", "JPEG",
                        exif=_exif(3))
    once = sanitise_picture(src)
    (tmp_path / "once.png").write_bytes(once.png)
    assert sanitise_picture(tmp_path / "once.png").png == once.png


def test_a_changed_caption_is_a_conflict(sqlite_url: str, tmp_path: Path) -> None:
    from db.bundle.importer import BundleInvalid

    bundle = write_picture_bundle(tmp_path / "b")
    with Session(engine_for(sqlite_url)) as s:
        import_bundle(s, bundle)
    case = bundle / "cases" / "c1" / "case.json"
    obj = json.loads(case.read_text())
    obj["series"][-1]["caption"] = "another caption"
    case.write_text(json.dumps(obj))
    with Session(engine_for(sqlite_url)) as s, pytest.raises(BundleInvalid) as info:
        import_bundle(s, bundle)
    assert [p.message for p in info.value.problems] == [
        "case c1 already exists with different content (series); images are not revised: "
        "retire the case (nmb retire case) and import the corrected one under a new id"]


@pytest.mark.slow
def test_a_picture_is_refused_without_touching_the_process_wide_warning_filters(tmp_path):
    """decode silenced Pillow's DecompressionBombWarning (a 100 M pixel PNG: beyond Pillow's
    89 M) with warnings.catch_warnings, which swaps the filter list of the whole process:
    under Streamlit's threads one session's import could hide another session's warnings, or
    leave its filter behind. The warning must not arise, so nothing needs silencing."""
    from errors import UserError
    from imaging.picture import sanitise_picture

    bomb = pictures.png_bomb(tmp_path / "bomb.png")
    with recorded_without_catch_warnings() as seen:
        with pytest.raises(UserError, match="bomb.png: picture is 10,000 x 10,000 = "
                                            "100,000,000 pixels, more than the limit"):
            sanitise_picture(bomb)
    assert [str(w.message) for w in seen] == []
