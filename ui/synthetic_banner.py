"""The banner that says which data are synthetic, shown on every page while demo data is in
the study (`db.study.cases.count_demo_cases`): all of it, some of it, or none (no banner)."""

import streamlit as st

from db.engine import session
from db.study.cases import count_demo_cases

ALL_DEMO = "Demo data: every case, record, response and score here is synthetic."
BANNER_KEY = "nmb-synthetic-banner"
# On a short window (a laptop at 125 % zoom is 640 CSS px high) the banner is one slim line,
# so the reading room's images still fit below it.
_SLIM = f"""<style>@media (max-height: 720px) {{
  .st-key-{BANNER_KEY} [data-testid="stAlertContainer"] {{ padding: 0.3rem 0.75rem; }}
}}</style>"""


def synthetic_data_banner() -> None:
    with session() as s:
        share = count_demo_cases(s)
    if share.demo_cases == 0:
        return
    if share.demo_cases == share.cases:
        text = ALL_DEMO
    else:
        text = (f"Some cases are synthetic demo data: {share.demo_cases} of {share.cases} cases "
                "come from the demo bundle, with their records, responses and scores; the other "
                "cases come from imported bundles.")
    st.html(_SLIM)  # (a style only: no slot, no gap)
    with st.container(key=BANNER_KEY):
        st.warning(text, icon=":material/science:")
