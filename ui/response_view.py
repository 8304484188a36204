"""A task and the answers to it, shown the same way whoever wrote them (blinding).

The page's own labels are bold markdown; every text from the bundle or the answer's author is
a plain-text box below its label (`ui.plain_text`), so it cannot pose as a label.
"""

import streamlit as st

from ui.plain_text import untrusted_text

FAMILY_NAMES = {"differential": "Differential diagnosis", "lesion": "Lesion identification",
                "rationale": "Rationale generation"}
LEVEL_NAMES = {1: "direct", 2: "complex", 3: "multi-turn"}


def response_view(family: str, level: int, prompt: str, stages: list[str], answers: list[str],
                  *, missing: str | None = None) -> None:
    """The task prompt and the first answer, then each revealed stage and the answer after it.

    `stages` are the stages to show (all of a scored response's; the revealed ones in an
    exam); a stage without an answer shows `missing`, or nothing when `missing` is None (the
    exam, where the answer is being written below).
    """
    st.caption(f"{FAMILY_NAMES.get(family, family)} · level {level} ({LEVEL_NAMES.get(level, '')})")
    st.markdown("**Task**")
    untrusted_text(prompt)
    for k in range(1 + len(stages)):
        if k > 0:
            st.markdown(f"**Stage {k + 1} revealed**")
            untrusted_text(stages[k - 1])
        if k < len(answers) or missing is not None:
            st.markdown("**Answer**" if k == 0 else f"**Answer after stage {k + 1}**")
            untrusted_text(answers[k] if k < len(answers) else "", empty=missing or "")
