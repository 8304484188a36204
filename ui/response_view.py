"""A task and an answer to it, shown the same way whoever wrote it (blinding)."""

import streamlit as st

FAMILY_NAMES = {"differential": "Differential diagnosis", "lesion": "Lesion identification",
                "rationale": "Rationale generation"}
LEVEL_NAMES = {1: "direct", 2: "complex", 3: "multi-turn"}


def response_view(family: str, level: int, prompt: str, stages: list[str], text: str,
                  turns: list[str]) -> None:
    """The task prompt, then the answer; for multi-turn tasks each stage beside its answer."""
    st.caption(f"{FAMILY_NAMES.get(family, family)} · level {level} ({LEVEL_NAMES.get(level, '')})")
    st.markdown(f"**Task.** {prompt}")
    with st.container(border=True):
        st.markdown("**Answer**")
        st.markdown(text)
    for i, stage in enumerate(stages):
        st.markdown(f"**Stage {i + 2} revealed.** {stage}")
        with st.container(border=True):
            st.markdown(turns[i] if i < len(turns) else "*No answer given for this stage.*")
