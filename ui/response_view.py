"""A task and the answers to it, shown the same way whoever wrote them (blinding).

The page's own labels are bold markdown; every text from the bundle or the answer's author is
a plain-text box below its label (`ui.plain_text`), so it cannot pose as a label.
"""

import streamlit as st

from ui.plain_text import untrusted_text

FAMILY_NAMES = {"differential": "Differential diagnosis", "lesion": "Lesion identification",
                "rationale": "Rationale generation"}
LEVEL_NAMES = {1: "direct", 2: "complex", 3: "multi-turn"}


def stage_label(k: int, n: int) -> str:
    """ "Stage k of n" (1-based), or "" for a one-stage task."""
    return f"Stage {k} of {n}" if n > 1 else ""


def response_view(family: str, level: int, prompt: str, stages: list[str], answers: list[str],
                  *, missing: str | None = None, n_stages: int | None = None) -> None:
    """The task, in "Stage k of n" order: each stage's information (the prompt at stage 1,
    then what was revealed) and the answer given at that stage.

    `stages` are the stages to show (all of a scored response's; the revealed ones in an
    exam, where `n_stages` counts them all); a stage without an answer shows `missing`, or
    nothing when `missing` is None (the exam, where the answer is being written below).
    """
    n = n_stages or 1 + len(stages)
    st.caption(f"{FAMILY_NAMES.get(family, family)} · level {level} ({LEVEL_NAMES.get(level, '')})")
    for k in range(1 + len(stages)):
        if n > 1:
            st.markdown(f"**{stage_label(k + 1, n)}**")
        st.caption("Task" if k == 0 else "Information revealed at this stage")
        untrusted_text(prompt if k == 0 else stages[k - 1])
        if k < len(answers) or missing is not None:
            st.caption("Answer" + (f" given at stage {k + 1}" if n > 1 else ""))
            untrusted_text(answers[k] if k < len(answers) else "", empty=missing or "")
