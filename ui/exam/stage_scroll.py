"""Bring a newly revealed stage of a multi-turn task into view.

After an answer is recorded the page reruns and its next stage appears far below the top
(under the task, the record and the earlier stages). `scroll_to_stage` scrolls the page so
that the stage's heading ("Stage k of n", bold markdown the page wrote) sits at the top of
the window, below Streamlit's header. It looks for the heading only inside the container of
`container_key` (`st.container(key=...)`), and only among the page's own bold labels: text
from a bundle or a taker is drawn by `st.text` and cannot be mistaken for it. It waits for the
heading to be drawn (at most 3 s), holds it there for a second while the page above settles,
and stops at once if the user scrolls or clicks first.
"""

import json

import streamlit as st

_SCRIPT = """<script>/* %(n)d */ (() => {
  const box = %(box)s, label = %(label)s, doc = document;
  let moved = false, tries = 0, settle = 0;
  const stop = () => { moved = true; };
  for (const type of ["wheel", "touchmove", "keydown", "pointerdown"]) {
    doc.addEventListener(type, stop, { once: true, passive: true });
  }
  const attempt = () => {
    if (moved) return;
    const found = [...doc.querySelectorAll(`.st-key-${box} [data-testid="stMarkdownContainer"] strong`)]
      .filter((el) => el.textContent.trim() === label).pop();
    if (!found) { if (++tries < 60) setTimeout(attempt, 50); return; }
    const target = found.closest('[data-testid="stElementContainer"]') || found;
    target.style.scrollMarginTop = "4.5rem";
    target.scrollIntoView({ block: "start" });
    if (++settle < 10) setTimeout(attempt, 100); // again while the page above it settles
  };
  setTimeout(attempt, 50);
})();</script>"""


def scroll_to_stage(container_key: str, label: str) -> None:
    """Scroll the heading `label` inside the container `container_key` to the window's top
    once this run has drawn it. A counter makes each call a new element, so it runs again."""
    n = st.session_state["_scroll_to_stage"] = st.session_state.get("_scroll_to_stage", 0) + 1
    st.html(_SCRIPT % {"n": n, "box": json.dumps(container_key), "label": json.dumps(label)},
            unsafe_allow_javascript=True)
