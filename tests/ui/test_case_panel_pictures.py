"""AppTest of pictures in the case panel (issue 23): the picture component receives labels,
captions, display-copy URLs and sizes only; no volume viewer, plane or slice control for a
picture-only case; a mixed case gets both; the display copy is upright, colour, <= 2048 px."""

import json
from pathlib import Path

import nibabel as nib
import numpy as np
import pytest
from PIL import Image
from streamlit.testing.v1 import AppTest

from tests.apptest import viewer_args
from tests.db.bundle import pictures
from ui.case_panel import VIEWER_MODE_KEY
from ui.server.volume_server import display_copy


def _app(series: list[list]) -> None:
    from pathlib import Path

    import streamlit as st

    from db.study.cases import SeriesImage
    from ui.case_panel import case_panel

    with case_panel(key="case", title="Case", ehr="", scores={},
                    series=[SeriesImage(name, Path(path), picture=picture, caption=caption)
                            for name, path, picture, caption in series]):
        st.button("Submit")


def picture_args(at: AppTest) -> list[dict]:
    return [json.loads(e.proto.json_args) for e in at.get("component_instance")
            if e.proto.component_name.endswith("nmb_picture_viewer")]


@pytest.fixture
def stored(tmp_path: Path, nmb_home: Path) -> dict[str, Path]:
    """A sanitised wide figure (as the store holds it) and a small volume."""
    from imaging.picture import sanitise_picture

    src = pictures.save(pictures.wide_figure(), tmp_path / "fig.png", "PNG")
    fig = tmp_path / "stored.png"
    fig.write_bytes(sanitise_picture(src).png)
    vol = tmp_path / "t1.nii.gz"
    nib.save(nib.Nifti1Image(np.ones((8, 8, 8), np.float32), np.eye(4)), vol)
    return {"fig": fig, "vol": vol}


@pytest.mark.slow
def test_a_picture_only_case_gets_the_picture_tile_and_no_volume_controls(stored) -> None:
    at = AppTest.from_function(_app, args=([["FIG", str(stored["fig"]), True, "Arrow"]],),
                               default_timeout=30)
    at.run()
    assert not at.exception
    assert viewer_args(at) == [] and not at.slider and not at.radio
    [args] = picture_args(at)
    assert set(args) == {"pictures", "key", "default"}
    [p] = args["pictures"]
    assert set(p) == {"label", "caption", "url", "width", "height"}
    assert (p["label"], p["caption"], p["width"], p["height"]) == ("FIG", "Arrow", 2048, 683)
    sha = p["url"].rsplit("/", 1)[1].removesuffix(".png")
    copy = Image.open(display_copy(sha, stored["fig"]))  # what the route serves for this URL
    assert copy.size == (2048, 683) and copy.mode == "RGB" and copy.info == {}
    want = np.asarray(pictures.wide_figure().resize(copy.size, Image.Resampling.BOX), float)
    assert np.abs(np.asarray(copy, float) - want).mean() < 2.0  # upright, colour kept
    at.button[0].click().run()  # a rerun sends the same few strings again
    assert picture_args(at) == [args]


def test_a_mixed_case_gets_both_viewers(stored) -> None:
    at = AppTest.from_function(_app, args=([["T1", str(stored["vol"]), False, None],
                                            ["FIG", str(stored["fig"]), True, None]],),
                               default_timeout=30)
    at.run()
    assert not at.exception
    assert [s["label"] for s in viewer_args(at)[0]["series"]] == ["T1"]
    assert [p["label"] for p in picture_args(at)[0]["pictures"]] == ["FIG"]


def test_static_mode_shows_the_display_copy(stored) -> None:
    at = AppTest.from_function(_app, args=([["FIG", str(stored["fig"]), True, "Arrow"]],),
                               default_timeout=30)
    at.session_state[VIEWER_MODE_KEY] = "Static"
    at.run()
    assert not at.exception
    assert picture_args(at) == [] and not at.slider
    captions = [img.caption for e in at.get("image") for img in e.proto.imgs]
    assert captions == ["FIG · Arrow"]
