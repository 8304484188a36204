"""AppTest of the case panel: the in-browser viewer receives labels and volume URLs only; the
PNG viewer (static mode, the fallback) renders a two-series case and its slider moves both."""

from pathlib import Path

import nibabel as nib
import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from tests.apptest import viewer_args
from ui.case_panel import MASKS_NEED_WEBGL2, NO_WEBGL2_KEY, VIEWER_KEY, VIEWER_MODE_KEY
from ui.plain_text import escape_markdown
from ui.server.volume_server import browser_copy
from ui.volume_viewer import NOT_LOADED


def _app(t1: str, flair: str) -> None:
    from pathlib import Path

    import streamlit as st

    from ui.case_panel import case_panel

    with case_panel(
        key="case",
        title="Case 1",
        ehr="**History**: 54-year-old with progressive memory complaints.",
        scores={"MMSE": 24.0, "MoCA": 19.0},
        series=[("T1", Path(t1)), ("FLAIR", Path(flair))],
    ):
        st.button("Submit")


@pytest.fixture
def two_series(tmp_path: Path) -> tuple[Path, Path]:
    z = np.arange(24, dtype=np.float32)
    t1 = np.broadcast_to(z, (20, 22, 24)) + 1.0  # intensity grows towards superior
    t1_path = tmp_path / "t1.nii.gz"
    nib.save(nib.Nifti1Image(np.ascontiguousarray(t1), np.diag([2.0, 2.0, 2.0, 1.0])), t1_path)
    flair = t1[::-1, :, ::2]  # stored left-to-right, 4 mm slices: another grid, same anatomy
    affine = np.diag([-2.0, 2.0, 4.0, 1.0])
    affine[0, 3] = 38.0
    flair_path = tmp_path / "flair.nii"
    nib.save(nib.Nifti1Image(np.ascontiguousarray(flair), affine), flair_path)
    return t1_path, flair_path


def _images(at: AppTest) -> list[tuple[str, str]]:
    """(url, caption) of every image on the page."""
    return [(img.url, img.caption) for element in at.get("image") for img in element.proto.imgs]


def _static(*paths: Path) -> AppTest:
    at = AppTest.from_function(_app, args=tuple(str(p) for p in paths), default_timeout=30)
    at.session_state[VIEWER_MODE_KEY] = "Static"
    return at


def test_viewer_receives_labels_and_urls_of_served_copies_only(two_series, tmp_path):
    at = AppTest.from_function(_app, args=tuple(str(p) for p in two_series), default_timeout=30)
    at.run()
    assert not at.exception
    assert not _images(at) and not at.slider  # no PNG viewer beside it
    [args] = viewer_args(at)
    assert set(args) == {"series", "masks", "height", "start", "key", "default", "item", "tools"}
    # one viewer for every item of the page; its answers name the page's opaque item key
    assert (args["key"], args["item"], args["tools"]) == ("nmb-volumes", "case", ["ruler", "roi"])
    # where it opens: numbers and names only (no key slices, protocol or mask here: the
    # middle of the brain in the axial plane, imaging.opening_view)
    assert set(args["start"]) == {"plane", "mm", "source"}
    assert (args["start"]["plane"], args["start"]["source"]) == ("axial", "family")
    assert [s["label"] for s in args["series"]] == ["T1", "FLAIR"] and args["masks"] == []
    for s, path in zip(args["series"], two_series, strict=True):
        assert set(s) == {"label", "url"}
        sha = s["url"].rsplit("/", 1)[1].removesuffix(".nii")
        copy = browser_copy(sha, path)  # what the route serves for this URL
        assert np.array_equal(nib.load(copy).get_fdata(), nib.load(path).get_fdata())
    at.button[0].click().run()  # a rerun (a rubric click) sends the same few strings again
    assert viewer_args(at) == [args]


def test_missing_series_is_reported_and_the_others_still_reach_the_viewer(two_series, tmp_path):
    at = AppTest.from_function(_app, args=(str(two_series[0]), str(tmp_path / "gone.nii.gz")),
                               default_timeout=30)
    at.run()
    assert not at.exception
    # the server's path not shown; the bundle's file name quoted as literal text
    assert at.error[0].value == escape_markdown("gone.nii.gz: file not found")
    assert [s["label"] for s in viewer_args(at)[0]["series"]] == ["T1"]
    assert [b.label for b in at.button] == ["Submit"]


def test_a_series_that_cannot_be_read_is_named_without_its_path(two_series, monkeypatch):
    """A stored file the server's account cannot read (an OSError, injected here: as root the
    tests cannot be denied a file) was reported with the error's text, which names the image
    store's path."""
    import ui.volume_viewer as volume_viewer
    from ui.volume_viewer import viewer_args as args_of

    stored = "/srv/nmb/images/ab/unreadable.nii.gz"

    def denied(path, **_):
        if path.name != two_series[0].name:
            raise PermissionError(13, "Permission denied", stored)
        return "/nmb/volumes/t1.nii"

    monkeypatch.setattr(volume_viewer, "publish_for", denied)
    args, failures = args_of([("T1", two_series[0]), ("FLAIR", Path(stored))])
    assert [s["label"] for s in args["series"]] == ["T1"]
    assert failures == {1: "FLAIR: this series cannot be read (PermissionError)"}


def test_without_webgl2_the_png_viewer_is_used_and_the_page_says_so(two_series):
    at = AppTest.from_function(_app, args=tuple(str(p) for p in two_series), default_timeout=30)
    at.session_state[NO_WEBGL2_KEY] = True
    at.run()
    assert not at.exception
    assert viewer_args(at) == []
    assert "WebGL2" in at.info[0].value
    assert [caption for _, caption in _images(at)] == ["T1 · axial 13/24", "FLAIR · axial 7/12"]


def test_case_panel_renders_both_series_and_slider_moves_them(two_series):
    at = _static(*two_series)
    at.run()
    assert not at.exception
    before = _images(at)
    assert [caption.split(" · ")[0] for _, caption in before] == ["T1", "FLAIR"]
    assert all(url.endswith(".png") for url, _ in before)  # lossless, never JPEG
    assert before[0][1] == "T1 · axial 13/24"
    assert before[1][1] == "FLAIR · axial 7/12"
    assert any("MMSE" in str(df.value) for df in at.dataframe)
    ehr = "**History**: 54-year-old with progressive memory complaints."
    assert [t.value for t in at.text] == [ehr]  # as written: plain text, not markdown
    assert ehr not in " ".join(md.value for md in at.markdown)
    slider = at.slider(key="case-pos-2")
    assert slider.label == "Axial slice"
    assert slider.value == 13  # the number the caption shows (issue 15): 1-based
    slider.set_value(slider.value + 4).run()
    assert not at.exception
    after = _images(at)
    assert [caption for _, caption in after] == ["T1 · axial 17/24", "FLAIR · axial 9/12"]
    assert all(a[0] != b[0] for a, b in zip(before, after, strict=True))  # both images moved


@pytest.mark.parametrize(("position", "caption"), [(1, "T1 · axial 1/24"),
                                                   (24, "T1 · axial 24/24")])
def test_slice_slider_and_caption_show_the_same_number(two_series, position, caption):
    at = _static(*two_series)
    at.run()
    slider = at.slider(key="case-pos-2")
    assert (slider.min, slider.max) == (1, 24)
    slider.set_value(position).run()
    assert not at.exception
    assert _images(at)[0][1] == caption


def _app_with_mask(t1: str, flair: str, mask: str) -> None:
    from pathlib import Path

    from db.study.masks import MaskImage
    from ui.case_panel import case_panel

    case_panel(key="case", title="Case 1", ehr="", scores={},
               series=[("T1", Path(t1)), ("FLAIR", Path(flair))],
               masks=[MaskImage("infarct", Path(mask), "FLAIR")])


@pytest.fixture
def lesion(tmp_path: Path) -> Path:
    labels = np.zeros((20, 22, 24), np.uint8)
    labels[5:9, 5:9, 5:9] = 1
    path = tmp_path / "lesion.nii.gz"
    nib.save(nib.Nifti1Image(labels, np.diag([2.0, 2.0, 2.0, 1.0])), path)
    return path


def test_masks_reach_the_viewer_as_served_copies_with_their_series(two_series, lesion):
    at = AppTest.from_function(_app_with_mask, args=(*map(str, two_series), str(lesion)),
                               default_timeout=30)
    at.run()
    assert not at.exception
    [args] = viewer_args(at)
    [mask] = args["masks"]
    assert (mask["label"], mask["series"]) == ("infarct", "FLAIR")
    copy = browser_copy(mask["url"].rsplit("/", 1)[1].removesuffix(".nii"), lesion)
    assert np.array_equal(nib.load(copy).get_fdata(), nib.load(lesion).get_fdata())


def test_the_png_viewer_says_masks_need_the_interactive_viewer(two_series, lesion):
    at = AppTest.from_function(_app_with_mask, args=(*map(str, two_series), str(lesion)),
                               default_timeout=30)
    at.session_state[VIEWER_MODE_KEY] = "Static"
    at.run()
    assert not at.exception
    assert MASKS_NEED_WEBGL2 in [c.value for c in at.caption]
    assert [caption for _, caption in _images(at)] == ["T1 · axial 13/24", "FLAIR · axial 7/12"]


def test_unreadable_series_is_reported_and_others_still_show(two_series, tmp_path):
    broken = tmp_path / "broken.nii.gz"
    broken.write_bytes(b"not an image")
    at = _static(two_series[0], broken)
    at.run()
    assert not at.exception
    assert [caption for _, caption in _images(at)] == ["T1 · axial 13/24"]
    assert escape_markdown("broken.nii.gz") in at.error[0].value
    at.radio(key="case-plane").set_value("sagittal").run()
    assert [caption for _, caption in _images(at)] == ["T1 · sagittal 11/20"]
    assert at.slider(key="case-pos-0").label == "Sagittal slice"


def _app_with_submit(t1: str, other: str) -> None:
    from pathlib import Path

    import streamlit as st

    from ui.case_panel import case_panel

    case_panel(key="case", title="Case 1", ehr="", scores={},
               series=[("T1", Path(t1)), ("Colour", Path(other))])
    st.button("Submit", key="submit")


@pytest.mark.parametrize("mode", ["Interactive", "Static"])
@pytest.mark.parametrize(("dtype", "message"), [
    (np.dtype([("R", "u1"), ("G", "u1"), ("B", "u1")]), "RGB colour voxels"),
    (np.complex64, "complex-valued voxels"),
])
def test_series_that_cannot_be_shown_leaves_the_page_and_submit_working(two_series, tmp_path,
                                                                        dtype, message, mode):
    """An RGB or complex series (imported before import refused them) gets its own error."""
    odd = tmp_path / "odd.nii.gz"
    nib.save(nib.Nifti1Image(np.zeros((6, 6, 6), dtype), np.eye(4)), odd)
    at = AppTest.from_function(_app_with_submit, args=(str(two_series[0]), str(odd)),
                               default_timeout=30)
    at.session_state[VIEWER_MODE_KEY] = mode
    at.run()
    assert not at.exception
    if mode == "Static":
        assert [caption for _, caption in _images(at)] == ["T1 · axial 13/24"]
    else:
        assert [s["label"] for s in viewer_args(at)[0]["series"]] == ["T1"]
    assert [e.value.split("\\:")[0] for e in at.error] == [escape_markdown("odd.nii.gz")]
    assert escape_markdown(message) in at.error[0].value
    at.button(key="submit").click().run()
    assert not at.exception and at.button(key="submit").value is True


def test_an_unexpected_failure_is_one_line_and_logged(caplog):
    from errors import UserError
    from ui.case_panel import _series_error

    assert _series_error("T1", UserError("t1.nii.gz: not found")) == "t1.nii.gz: not found"
    with caplog.at_level("ERROR", logger="ui.case_panel"):
        line = _series_error("T1", TypeError("cannot cast"))
    assert line == "T1: this series cannot be shown (TypeError; details in the server log)"
    assert caplog.records[0].exc_info[0] is TypeError


def test_a_failure_the_viewer_reported_counts_only_for_its_own_item(two_series):
    """The page keeps one viewer frame for every item, so its last answer outlives its item:
    a failure reported about another item must not send this one to the PNG viewer."""
    at = AppTest.from_function(_app, args=tuple(str(p) for p in two_series), default_timeout=30)
    at.session_state[VIEWER_KEY] = {"failed": ["T1", "FLAIR"], "item": "another"}
    at.run()
    assert not at.exception and viewer_args(at) and not _images(at)
    at.session_state[VIEWER_KEY] = {"failed": ["T1", "FLAIR"], "item": "case"}
    at.run()
    assert not viewer_args(at) and len(_images(at)) == 2
    assert NOT_LOADED in [i.value for i in at.info]
