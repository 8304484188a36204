"""A page's header line that holds at 125 % and 150 % browser zoom (docs/viewer.md, "Zoom").

Streamlit's columns share the width by their weights and squeeze their content when the
window is narrow (at 125 % a 1280 px window is 1024 CSS px wide): a title wraps, a select box's
label and a search box's placeholder are cut. Here each column has a least width (rem) and the
header's columns come in groups: where a group does not fit beside the one before, the group
moves onto a line of its own, whole, and nothing is cut. Above the sum of the least widths the
columns share the width by their weights, as `st.columns` does.

The CSS also hides the page's element slots that hold only a style or a script (a page's
keyboard script, the login cookie): each would cost a gap of blank space above the images; and
on a short window (up to 720 CSS px high: 1280 x 800 at 125 % is 640) the app's top bar, which
holds only the sidebar's button, is 2.75rem high instead of 3.75rem and the page starts below it.
"""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

GAP_REM = 1.0  # Streamlit's gap="small" between columns
# An element slot with nothing to show (only <style>/<script>: the scripts have run) takes no gap.
_EMPTY_SLOTS = """[data-testid="stElementContainer"]:has(> [data-testid="stHtml"] > :is(style, script)):not(
  :has(> [data-testid="stHtml"] > :not(style, script))) { display: none; }
@media (max-height: 720px) {
  header[data-testid="stHeader"] { height: 2.75rem; min-height: 2.75rem; }
  [data-testid="stMain"] [data-testid="stMainBlockContainer"] { padding-top: 2.75rem; }
}"""


def _flex(weight: float, least_rem: float) -> str:
    return (f"flex: {weight:g} 1 {least_rem:g}rem; min-width: {least_rem:g}rem; width: auto; "
            "max-width: 100%;")


def header_css(key: str, groups: Sequence[Sequence[tuple[float, float]]]) -> str:
    """The header's CSS: `groups` of (weight, least width in rem) per column."""
    rules = [_EMPTY_SLOTS,
             f".st-key-{key} h5, .st-key-{key} [data-testid='stMarkdownContainer'] p "
             "{ white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }"]
    for n, group in enumerate(groups):
        least = sum(m for _, m in group) + GAP_REM * (len(group) - 1)
        rules.append(f".st-key-{key} [data-testid='stColumn']:has(.st-key-{key}-{n}) "
                     f"{{ {_flex(sum(w for w, _ in group), least)} }}")
        for j, (weight, m) in enumerate(group, start=1):
            rules.append(f".st-key-{key}-{n} [data-testid='stColumn']:nth-child({j}) "
                         f"{{ {_flex(weight, m)} }}")
    return "<style>\n" + "\n".join(rules) + "\n</style>"


def header_columns(key: str, groups: Sequence[Sequence[tuple[float, float]]],
                   vertical_alignment: str = "center") -> list[DeltaGenerator]:
    """The header's columns, in order, from `groups` of (weight, least width in rem): a group
    wraps onto its own line, whole, when the window is too narrow for it beside the others."""
    st.html(header_css(key, groups))  # (a style only: no slot, no gap)
    columns: list[DeltaGenerator] = []
    with st.container(key=key):
        outer = st.columns([sum(w for w, _ in g) for g in groups], gap="small",
                           vertical_alignment=vertical_alignment)
        for n, (box, group) in enumerate(zip(outer, groups, strict=True)):
            with box, st.container(key=f"{key}-{n}"):
                columns += st.columns([w for w, _ in group], gap="small",
                                      vertical_alignment=vertical_alignment)
    return columns
