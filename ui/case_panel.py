"""The case panel shown by every page that shows a case: images, title, record and scores.

Layout (the same for every case): on the left the images, kept in view (sticky, one screen
high) while the page scrolls; on the right the title, the health record (plain text, as the
bundle wrote it: `ui.plain_text`) and the neuropsychological scores table, then whatever the
page adds (`case_panel` returns that column: `with case_panel(...): ...`).

The images are the in-browser volume viewer (`ui.volume_viewer`, NiiVue) by default. The PNG
viewer below is the fallback where WebGL2 is missing or the volumes cannot be loaded, and a
choice of the user ("Static"). It runs inside `st.fragment`, so moving its slider reruns only
the viewer. Decoded volumes come from `imaging`'s process-wide cache, shared by every session.
Positions are world (scanner mm) points: every series shows the slice nearest to the same
anatomy through its own affine. Widget keys are `{key}-...` plus a series' position in
`series`, nothing else; keys reach the browser, so pages pass an opaque `key`
(`ui.element_keys.opaque_key`), never a case or task id.

A series that cannot be shown (an unreadable file, or any failure while rendering it) gets an
error of its own; the other series and the rest of the page (the rubric form and its Submit
button) keep working.

Series names, picture captions and the file names a failure quotes come from the bundle: in
the images' captions (markdown) and the error lines they are markdown-escaped
(`ui.plain_text.escape_markdown`).

Pictures (2-D series: key images, figures; `db.study.cases.SeriesImage.picture`) are not volumes:
they follow the volumes, each an image tile of its own aspect ratio (`ui.picture_viewer`,
no WebGL, with zoom, pan, enlarge, brightness and contrast; "Static": `st.image`), with no
plane, slice, crosshair or orientation controls.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from db.study.cases import SeriesImage
from db.study.masks import MaskImage
from db.study.viewer_tools import TOOLS
from errors import UserError
from imaging import (
    PLANES,
    PRESETS,
    Volume,
    Window,
    load_volume,
    preset_window,
    render_png,
    take_slice,
)
from imaging.geometry import NORMAL_AXIS, voxel_to_world
from ui.picture_viewer import picture_args, picture_viewer
from ui.plain_text import escape_markdown, untrusted_heading, untrusted_text
from ui.server.volume_server import display_file
from ui.volume_viewer import (
    NO_WEBGL2,
    NOT_LOADED,
    answer_for,
    cannot_show,
    viewer_args,
    volume_viewer,
)

_log = logging.getLogger(__name__)
AXIS_NAMES = ("R-L", "A-P", "S-I")  # RAS+ axes 0, 1, 2
WINDOW_CHOICES = (*PRESETS, "manual")
VIEWER_MODES = ("Interactive", "Static", "Hidden")
MASKS_NEED_WEBGL2 = "Lesion masks are drawn by the interactive viewer only (it needs WebGL2)."
VIEWER_MODE_KEY = "viewer-mode"  # one choice per session, kept from case to case
NO_WEBGL2_KEY = "viewer-no-webgl2"
# One viewer per page, whatever the item: the browser keeps its frame and NiiVue instances
# from case to case (`ui.volume_viewer`); its answers name the item they are about.
VIEWER_KEY = "nmb-volumes"
# Where the images and the text stand side by side and the viewer (at least 320 px high, below
# the app's 3.75rem top bar) fits the window's height, it stays in view while the page scrolls
# beside it: from 960 x 540 CSS px up, so at 125 % zoom on a 1280 x 800 screen (1024 x 640) too.
_STICKY_CSS = """<style>
@media (min-width: 960px) and (min-height: 540px) {
  div[data-testid="stLayoutWrapper"]:has(> [class*="st-key-nmb-images-"]) {
    position: sticky; top: 3.75rem; z-index: 2;
  }
}
</style>"""


# Under 960 CSS px (a 1280 x 800 screen at 150 % zoom is 853 x 533) the images and the text
# are stacked: the viewer the page's full width, the text below it, the page scrolls.
_STACKED_CSS = f"""<style>
@media (max-width: 959.98px) {{
  [data-testid="stHorizontalBlock"]:has(> [data-testid="stColumn"] > [data-testid="stVerticalBlock"]
      > .st-key-{VIEWER_MODE_KEY}) > [data-testid="stColumn"] {{
    flex: 1 1 100%; width: 100%; min-width: 100%;
  }}
}}
</style>"""


def case_panel(
    *,
    key: str,
    title: str,
    ehr: str,
    scores: dict[str, float],
    series: list[tuple[str, Path]],
    masks: Sequence[MaskImage] = (),
    key_slices: Sequence[dict] = (),
    compact: bool = False,
    opening: dict | None = None,
    family: str | None = None,
    offer_view: bool = False,
    prefetch: Sequence[tuple[str, Path]] = (),
    tools: Sequence[str] = TOOLS,
) -> DeltaGenerator:
    """Show one case: images of `series` (name, stored image path) with `masks` as overlays
    (the caller decides who may see them: `db.study.masks`), then title, record and scores; return
    the right-hand column. The interactive viewer opens at the case's `opening` view (its
    hanging protocol or an admin's), else its `key_slices`, the masks' centre or the middle of
    the brain in the plane of the task's `family` (`imaging.opening_view`); `offer_view`
    (/admin): a "Use this view" button, its answer in `viewer_answer(key)`;
    `prefetch`: the next item's volume series, fetched by the browser while this one is read;
    `tools`: the measuring tools the study offers (`db.study.viewer_tools`).

    `compact` (/score, made for 1280 x 800): the images take three fifths of the width and
    fill the window from where they stand (tiles in one row on a short window), and the
    record and scores are one expander, so the response and the rubric start high."""
    st.html(_STACKED_CSS)  # (a style only: no slot, no gap)
    images, beside = st.columns([3, 2] if compact else [11, 9], gap="small" if compact else "medium")
    with images:
        case_images(key, list(series), masks, key_slices=key_slices,
                    fit="bottom" if compact else None,
                    view={"opening": opening, "family": family, "offer_view": offer_view,
                          "prefetch": prefetch, "tools": tools})
    with beside:
        untrusted_heading(title, level=5 if compact else 3)
        with (st.expander("Health record and scores") if compact else st.container()):
            _record(ehr, scores)
    return beside


def _record(ehr: str, scores: dict[str, float]) -> None:
    st.markdown("##### Health record")
    untrusted_text(ehr, empty="No health record.")
    st.markdown("##### Neuropsychological scores")
    if scores:
        table = pd.DataFrame({"test": list(scores), "score": list(scores.values())})
        st.dataframe(table, hide_index=True, width="stretch")
    else:
        st.caption("No scores.")


def case_images(key: str, series: list[tuple[str, Path]],
                masks: Sequence[MaskImage] = (), *, key_slices: Sequence[dict] = (),
                fit: str | None = None, view: dict | None = None) -> None:
    """The interactive viewer, or the PNG viewer where it cannot run or is not wanted
    (`key_slices`, `fit`, `view`'s opening, family and offer_view:
    `ui.volume_viewer.viewer_args`)."""
    mode = st.segmented_control(
        "Images", VIEWER_MODES, default=VIEWER_MODES[0], key=VIEWER_MODE_KEY,
        help="Interactive: volumes in the browser (WebGL2). Static: slice images drawn on the "
             "server. Hidden: no images.",
        label_visibility="collapsed" if fit else "visible") or VIEWER_MODES[0]
    if mode == "Hidden" or not series:
        if not series:
            st.info("This case has no image series.")
        return
    pictures = [s for s in series if getattr(s, "picture", False)]
    volumes = [SeriesImage(s[0], Path(s[1]), sha256=getattr(s, "sha256", None))
               for s in series if not getattr(s, "picture", False)]
    if volumes:
        _volume_images(key, mode, volumes, masks, sticky=not pictures, key_slices=key_slices,
                       fit=fit, view=view or {})
    if pictures:
        _pictures(key, mode, pictures)


def viewer_answer(key: str) -> dict | None:
    """What the page's viewer last answered about the item of `key` (None: nothing)."""
    return answer_for(st.session_state.get(VIEWER_KEY), key)


def _pictures(key: str, mode: str, pictures: list) -> None:
    """The pictures: the picture component, or (Static) their display copies as images."""
    items = [(item[0], Path(item[1]), getattr(item, "caption", None),
              getattr(item, "sha256", None)) for item in pictures]
    if mode == "Interactive":
        args, failures = picture_args(items, login_token=st.session_state.get("login_token"))
        for message in failures.values():
            st.error(escape_markdown(message))
        picture_viewer(args, key=f"{key}-pictures")
        return
    for name, path, caption, sha256 in items:
        try:
            st.image(str(display_file(path, sha256)),
                     caption=escape_markdown(f"{name} · {caption}" if caption else name),
                     width="stretch")
        except Exception as exc:  # one picture must not take the page down
            st.error(escape_markdown(_series_error(name, exc)))


def _volume_images(key: str, mode: str, series: list[tuple[str, Path]],
                   masks: Sequence[MaskImage], *, sticky: bool = True,
                   key_slices: Sequence[dict] = (), fit: str | None = None,
                   view: dict | None = None) -> None:
    """The volumes: the interactive viewer (kept in view while the page scrolls, unless
    pictures follow it: it would cover them), or the PNG viewer."""
    # What the viewer reported is kept for the session: once the PNG viewer replaces it, the
    # component is not drawn again, and its own state would be gone at the next rerun.
    reported = cannot_show(viewer_answer(key))
    if reported:
        st.session_state[NO_WEBGL2_KEY if reported == NO_WEBGL2 else f"{key}-not-loaded"] = True
    note = (NO_WEBGL2 if st.session_state.get(NO_WEBGL2_KEY) else
            NOT_LOADED if st.session_state.get(f"{key}-not-loaded") else None)
    if mode == "Interactive" and note is None:
        args, failures = viewer_args(series, list(masks),
                                     login_token=st.session_state.get("login_token"),
                                     key_slices=key_slices, fit=fit, item=key, **(view or {}))
        for message in failures.values():
            st.error(escape_markdown(message))
        with st.container(key="nmb-images-volumes"):
            if sticky:
                st.html(_STICKY_CSS)
            volume_viewer(args, key=VIEWER_KEY)
        return
    if note and mode == "Interactive":
        st.info(note)
    if masks:
        st.caption(MASKS_NEED_WEBGL2)
    _viewer(key, series)


@st.fragment
def _viewer(key: str, series: list[tuple[str, Path]]) -> None:
    if not series:
        st.info("This case has no image series.")
        return
    names = [name for name, _ in series]
    top = st.columns([3, 2, 1], vertical_alignment="bottom")
    chosen: list[int] = top[0].multiselect(
        "Series",
        options=list(range(len(series))),
        default=list(range(len(series))),
        format_func=lambda i: names[i],
        key=f"{key}-series",
    )
    plane: str = top[1].radio("Plane", PLANES, horizontal=True, key=f"{key}-plane")
    radiological = top[2].toggle(
        "Radiological",
        value=True,
        key=f"{key}-radiological",
        help="On: patient's right on screen left (radiological). Off: neurological.",
    )
    volumes: dict[int, Volume] = {}
    failures: dict[int, str] = {}
    for i in chosen:
        try:
            volumes[i] = load_volume(series[i][1], int(st.session_state.get(f"{key}-volume-{i}", 0)))
        except Exception as exc:  # one series must not take the page down (module docstring)
            failures[i] = _series_error(names[i], exc)
    if not chosen:
        st.info("Choose at least one series.")
        return
    position_slot = st.container()
    grid_slot = st.container()
    reference = _reference(volumes)
    position = crosshair = None
    if reference is not None:
        with st.expander("Crosshair"):
            show_crosshair = st.checkbox("Show crosshair", value=True, key=f"{key}-crosshair")
            voxel = np.zeros(3)
            for axis in range(3):
                slot = position_slot if axis == NORMAL_AXIS[plane] else st
                voxel[axis] = _position_slider(slot, key, reference, axis, plane)
        position = voxel_to_world(reference.affine, voxel)
        crosshair = position if show_crosshair else None
        position_slot.caption(
            f"World position (scanner mm): x={position[0]:.1f}, y={position[1]:.1f}, "
            f"z={position[2]:.1f} · grid of "
            + escape_markdown(names[_index_of(volumes, reference)]))
    per_row = 2 if len(chosen) <= 4 else 3
    with grid_slot:
        for start in range(0, len(chosen), per_row):
            cells = st.columns(per_row)
            for cell, i in zip(cells, chosen[start : start + per_row], strict=False):
                with cell:
                    if i not in failures:
                        try:
                            _series_cell(key, i, names[i], volumes[i], plane, position,
                                         crosshair, radiological)
                        except Exception as exc:  # as above
                            failures[i] = _series_error(names[i], exc)
                    if i in failures:
                        st.error(escape_markdown(failures[i]))


def _series_error(name: str, exc: Exception) -> str:
    """The one line shown in place of a series: the user error, or a pointer to the log."""
    if isinstance(exc, UserError):
        return str(exc)
    _log.error("series %s cannot be shown", name, exc_info=exc)
    return f"{name}: this series cannot be shown ({type(exc).__name__}; details in the server log)"


def _reference(volumes: dict[int, Volume]) -> Volume | None:
    """The series whose grid the sliders step through: the finest (smallest voxels)."""
    if not volumes:
        return None
    return min(volumes.values(), key=lambda v: float(np.prod(v.voxel_sizes)))


def _index_of(volumes: dict[int, Volume], volume: Volume) -> int:
    return next(i for i, v in volumes.items() if v is volume)


def _position_slider(slot, key: str, reference: Volume, axis: int, plane: str) -> int:
    """The reference grid's voxel index along `axis` (0-based); the slider shows it 1-based,
    as the images' captions do ("95/189")."""
    n = reference.shape[axis]
    is_normal = axis == NORMAL_AXIS[plane]
    label = f"{plane.capitalize()} slice" if is_normal else f"Crosshair {AXIS_NAMES[axis]}"
    shown = slot.slider(
        label,
        min_value=1,
        max_value=max(n, 2),
        value=n // 2 + 1,
        key=f"{key}-pos-{axis}",
        help=f"Slice (1-{n}) of the finest series; the others show the same world position.",
        disabled=n < 2,
    )
    return min(shown, n) - 1


def _series_cell(
    key: str,
    i: int,
    name: str,
    volume: Volume,
    plane: str,
    position: np.ndarray | None,
    crosshair: np.ndarray | None,
    radiological: bool,
) -> None:
    image_slot = st.empty()
    window = _window_controls(key, i, volume)
    if volume.n_volumes > 1:
        st.number_input(
            f"Volume (of {volume.n_volumes})",
            min_value=0,
            max_value=volume.n_volumes - 1,
            step=1,
            key=f"{key}-volume-{i}",
        )
    sl = take_slice(
        volume, plane, world_mm=position, crosshair_mm=crosshair, radiological=radiological
    )
    where = f"{sl.index + 1}/{sl.n_slices}" if sl.in_view else "outside this series"
    image_slot.image(
        render_png(sl, window),
        caption=escape_markdown(f"{name} · {plane} {where}"),
        output_format="PNG",
        width="stretch",
    )


def _window_controls(key: str, i: int, volume: Volume) -> Window:
    stats = volume.intensity_stats()
    choice = st.selectbox("Window", WINDOW_CHOICES, key=f"{key}-window-{i}")
    if choice != "manual":
        return preset_window(stats, choice)
    auto = preset_window(stats, "auto")
    level_col, width_col = st.columns(2)
    level = level_col.number_input("Level", value=float(auto.level), key=f"{key}-level-{i}")
    width = width_col.number_input(
        "Width", value=float(auto.width), min_value=1e-6, key=f"{key}-width-{i}"
    )
    return Window.from_level_width(level, width)
