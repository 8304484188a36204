"""The banner that says which data are synthetic, shown on every page while demo data is in
the study (`db.study.cases.count_demo_cases`): all of it, some of it, or none (no banner)."""

import streamlit as st

from db.engine import session
from db.study.cases import count_demo_cases

ALL_DEMO = "Demo data: every case, record, response and score here is synthetic."


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
    st.warning(text, icon=":material/science:")
