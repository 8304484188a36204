"""The calibration report in the app: compute, show the gate, the tables and the figures."""

import pandas as pd
import streamlit as st

from calibration import report
from calibration.grader import config_labels
from calibration.html import STAT_HEADER, TAG_HEADER, fmt, render, stat_rows, tag_rows
from calibration.plots import all_figures
from db.engine import session
from errors import UserError


def _table(header: list[str], rows: list[list]) -> None:
    """The rows as the HTML report formats them (`fmt`), under `header`."""
    st.dataframe(pd.DataFrame([[fmt(v) for v in row] for row in rows], columns=header),
                 hide_index=True)


def report_section(actor: str) -> None:
    with session() as s:
        names = config_labels(s)
    if not names:
        st.info("Create a grader config and run it first.")
        return
    c1, c2, c3 = st.columns(3)
    config_id = c1.selectbox("Grader config ", list(names), format_func=names.get)
    part = c2.selectbox("Part", report.PARTS,
                        help="The gate is judged on the held-out part; tune prompts on dev.")
    boot = c3.number_input("Bootstrap resamples", 200, 10000, 2000, step=200)
    if not st.button("Compute report", type="primary"):
        return
    try:
        with session() as s:
            data = report.collect(s, config_id=config_id, part=part)
            results = report.build(data, bootstrap=int(boot))
            row = report.save(s, config_id=config_id, part=part, results=results, actor=actor)
    except UserError as e:
        st.error(str(e))
        return
    for flag in results["flags"]:
        st.warning(flag)
    gate = results["gate"]
    verdict = "passed" if results["passed"] else "failed"
    st.subheader(f"Report {row.id}: gate {verdict} on {results['n_items']} {part} items")
    cols = st.columns(3)
    for col, (label, key, value, threshold) in zip(cols, [
        ("Pearson r", "pearson", gate["pearson"]["value"], f"≥ {gate['pearson']['threshold']}"),
        ("ICC2 (absolute agreement)", "icc2", gate["icc2"]["value"],
         f"≥ {gate['icc2']['threshold']}"),
        ("Alt-test winning rate", "alt_test", gate["alt_test"]["winning_rate"],
         f"≥ 0.5 at ε = {gate['alt_test']['epsilon']}"),
    ], strict=True):
        verdict = "pass" if gate[key]["passed"] else "fail"
        col.metric(f"{label} ({threshold})", f"{fmt(value)} · {verdict}")
    _table(["criterion", *STAT_HEADER[1:]], stat_rows(results))
    _table(TAG_HEADER, tag_rows(results))
    figures = all_figures(data, results)
    cols = st.columns(2)
    for i, png in enumerate(figures.values()):
        cols[i % 2].image(png, output_format="PNG")
    page = render(results, figures, title=f"Calibration report {row.id}")  # figures made once
    st.download_button("Download HTML report", page, file_name=f"calibration-report-{row.id}.html",
                       mime="text/html")
