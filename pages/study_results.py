"""/results: the study's results as a paper reports them (admin)."""

from dataclasses import replace

import pandas as pd
import streamlit as st

from calibration.plots import png
from db.bundle.store import Workspace
from db.bundle.upload_name import safe_upload_name
from db.engine import database_url, session, snapshot
from errors import UserError, counted
from grading.grader import config_labels
from importers import Options, run_import
from results import results
from results.bertscore import SERVER_MODEL, BertScorer, server_model
from results.judgments import default_config
from results.publish.export import as_text, render_html
from results.publish.leaderboard_layout import split_tables
from results.publish.plots import all_figures, leaderboard_chart
from results.publish.tables import MEASURE_LINES, compare_table, fmt, headline_table, tables
from results.splits import SPLITS
from stats.intervals import MIN_CASES
from ui.actions import redraw_after, show_error, show_written
from ui.auth import require_role
from ui.plain_text import escape_markdown

user = require_role("admin")
st.title("Results")
# The first screen: the headline table and its figure, then one line per measure; the
# settings, notices and every other table below (filled once the results are computed).
headline = st.container()

BY = {"family,level": "family x level", "family": "family", "level": "level", "": "overall only"}


@st.cache_data(max_entries=16, show_spinner="Computing the results…")
def cached(database: str, config_id: int, by: str, ks: tuple, reveal: bool, judge: str,
           model: str, splits: bool, answered_only: bool,
           key: tuple) -> tuple[results.Results, dict[str, bytes]]:
    with snapshot() as s:  # every table of one state, while a grader run commits
        res = results.build(s, config_id=config_id, by=tuple(b for b in by.split(",") if b),
                            ks=ks, reveal=reveal, judge=judge,
                            bertscore=BertScorer(model) if model else None,
                            splits=SPLITS if splits else None, answered_only=answered_only)
    return res, all_figures(res)


@st.cache_data(max_entries=16, show_spinner="Comparing…")
def cached_compare(database: str, config_id: int, a: str, b: str, judge: str,
                   answered_only: bool, key: tuple) -> list:
    with snapshot() as s:
        return results.comparisons(s, config_id=config_id, pairs=((a, b),), judge=judge,
                                   answered_only=answered_only)


@st.cache_data(max_entries=16, show_spinner=False)
def cached_downloads(database: str, config_id: int, by: str, ks: tuple, reveal: bool, judge: str,
                     model: str, splits: bool, answered_only: bool, key: tuple, a: str | None,
                     b: str | None) -> dict[str, str]:
    """The download files of these results and of the comparison of `a` and `b`, made once:
    the JSON of a 4x study alone takes seconds, which every rerun paid (docs/benchmarks.md)."""
    res, figures = cached(database, config_id, by, ks, reveal, judge, model, splits,
                          answered_only, key)
    ts = tables(res)
    if a and b:
        res = replace(res, comparisons=cached_compare(database, config_id, a, b, judge,
                                                      answered_only, key))
        ts.append(compare_table(res.comparisons, res))
    return {**{fmt_: as_text(res, fmt_, ts) for fmt_ in ("json", "md", "latex", "csv")},
            "html": render_html(res, figures, ts)}


with session() as s:
    graders = config_labels(s)
    try:
        default = default_config(s, None).id
    except UserError as e:
        st.info(escape_markdown(str(e)))
        st.stop()
settings = st.expander("Settings: grader config, cells, pass@k, judge, names, layout, view")
c1, c2, c3 = settings.columns(3)
config_id = c1.selectbox("Grader config", list(graders), format_func=graders.get,
                         index=list(graders).index(default))
by = c2.selectbox("Cells", list(BY), format_func=BY.get)
ks = tuple(sorted(c3.multiselect("pass@k and top-k", [1, 3, 5, 10], default=[1, 5]))) or (1,)
c1, c2 = settings.columns(2)
judge = c1.radio("Judge of the main tables", list(results.JUDGED_BY), horizontal=True,
                 format_func=lambda j: f"{j}: {results.JUDGED_BY[j]}")
reveal = c2.toggle("Show people's names (not pseudonyms)", value=False)
splits = settings.toggle("The published leaderboard's layout: one table per split (nmb results "
                         "--layout leaderboard; --site writes it as a static site)", value=False)
answered_only = settings.toggle(f"View: {results.ANSWERED_ONLY} (by default a model's failed or "
                          "missing answers count as wrong)", value=False)
with session() as s:  # closed before the cached function opens its own (SQLite write lock)
    key = results.results_key(s, config_id=config_id)
model = server_model()
try:
    # the splits always (the headline is by split); their full tables only on request
    res, figures = cached(database_url(), config_id, by, ks, reveal, judge, model, True,
                          answered_only, key)
except UserError as e:  # e.g. NMB_BERTSCORE_MODEL is not a model folder
    show_error(e)
    st.stop()

with headline:
    top = headline_table(res)
    st.markdown(f"**{escape_markdown(top.title)}**")  # bold, not a heading: no text imitates one
    st.dataframe(pd.DataFrame(top.rows, columns=top.header), hide_index=True, width="stretch",
                 column_config={"who": st.column_config.TextColumn(pinned=True)})
    chart = leaderboard_chart([c.row() for c in res.overall], res.ks)
    if chart is not None:
        st.image(png(chart), width="stretch")
    st.markdown("\n".join(f"- **{name}**: {line}" for name, line in MEASURE_LINES))
warned = f" ({counted(len(res.flags), 'warning')})" if res.flags else ""
notices = st.expander(f"Notices: the judge, the intervals, the grader{warned}")
for flag in res.flags:  # may quote a revocation's reason
    notices.warning(escape_markdown(flag))
if res.grader.get("validation_terms"):
    notices.caption(f"Grader config #{res.grader['id']} is validated under "
               f"{escape_markdown(res.grader['validation_terms'])}.")
notices.caption(f"Judge: {res.judge} ({res.judged_by}): {counted(res.sources[res.judge], 'response')}, "
           f"{res.unjudged} not judged by it (expert ties: {res.expert_ties}, counted not "
           f"correct). Rows stand on {res.view}. The sensitivity table shows every estimate "
           "under each judge. Intervals: "
           "95%, from resamples of cases (with their tasks; for human groups, people and "
           f"cases), none from fewer than {MIN_CASES} cases (docs/results.md).")
if not model:
    notices.caption(f"BERTScore (secondary): not computed; the server adds it when started with "
               f"{SERVER_MODEL}=DIR, a local model folder (docs/results.md).")
ts = tables(res)


def show(t) -> None:
    st.subheader(t.title)
    # the column's width, scrolling inside it; the first column (who) stays in view
    st.dataframe(pd.DataFrame([[fmt(v) for v in row] for row in t.rows], columns=t.header),
                 hide_index=True, width="stretch",
                 column_config={t.header[0]: st.column_config.Column(pinned=True)})
    if t.note:
        st.caption(t.note)


if splits:
    for t in split_tables(res):
        show(t)
for t in ts:
    show(t)
st.subheader("Paired differences")
whos = [c.who for c in res.overall]
humans = [c.who for c in res.overall if c.group == "human"] or whos
c1, c2 = st.columns(2)
a = c1.selectbox("A", whos, index=whos.index(humans[0]) if len(whos) > 1 else 0)
b = c2.selectbox("B (A - B on the tasks both answered)", [w for w in whos if w != a])
if a and b:
    res = replace(res, comparisons=cached_compare(database_url(), config_id, a, b, judge,
                                                  answered_only, key))
    show(compare_table(res.comparisons, res))  # in the downloads too
with st.expander("Breadth scores: import a CSV (model, benchmark, score; optional n, source)"):
    st.caption("Each model's published score on a broad benchmark, set beside its depth here "
               "(the tables 'Breadth against depth' and the scatter). A (model, benchmark) "
               "imported before is replaced; also `nmb breadth import FILE`.")
    upload = st.file_uploader("Breadth scores (.csv)", type=["csv"], key="breadth_upload")
    if st.button("Import breadth scores", disabled=upload is None, key="breadth_import"):
        try:
            with Workspace("upload") as area, session() as s:
                path = area.path / safe_upload_name(upload.name, ".csv")
                path.write_bytes(upload.getvalue())
                summary = run_import(s, "breadth", [path], Options(actor=user.name))
        except UserError as e:
            show_error(e)
        else:
            redraw_after(str(summary))  # the tables above, computed again with them
    show_written("breadth")
st.subheader("Figures")
for name, data in figures.items():
    st.image(data, caption=name.replace("_", " "))
st.subheader("Download")
files = cached_downloads(database_url(), config_id, by, ks, reveal, judge, model, splits,
                         answered_only, key, a, b)
cols = st.columns(5)
for col, (label, fmt_, mime, ext) in zip(cols, (
        ("JSON", "json", "application/json", "json"), ("Markdown", "md", "text/markdown", "md"),
        ("LaTeX", "latex", "application/x-tex", "tex"), ("CSV (cells)", "csv", "text/csv", "csv")),
        strict=False):
    col.download_button(label, files[fmt_], file_name=f"results.{ext}", mime=mime)
cols[4].download_button("HTML report", files["html"], file_name="results.html",
                        mime="text/html")
