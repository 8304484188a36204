"""The leaderboard on /calibrate: its chart (`chart_png`: the first pass@k with its interval per
model and human group) and the table with one rule for decimals
(results.leaderboard.display_rows)."""

import pandas as pd
import streamlit as st

from results.leaderboard import display_rows


def leaderboard_view(rows: list[dict], chart: bytes | None) -> None:
    """The chart (`chart_png`), then the table."""
    if chart is not None:
        st.image(chart, output_format="PNG")
    st.dataframe(pd.DataFrame(display_rows(rows)).convert_dtypes(),  # counts stay integers
                 hide_index=True)


def chart_png(rows: list[dict], ks: tuple[int, ...]) -> bytes | None:
    """The leaderboard's chart as PNG (results.publish.plots.leaderboard_chart)."""
    from calibration.plots import png  # matplotlib: only when a leaderboard is drawn
    from results.publish.plots import leaderboard_chart

    fig = leaderboard_chart(rows, ks)
    return None if fig is None else png(fig)
