"""/admin's review of responses that name a model: the names found, the original beside the
redacted text, which the admin keeps, edits or restores (db.raters.response_flags)."""

import streamlit as st

from db.engine import session
from db.raters.assignments import join_design
from db.raters.response_flags import Flagged, pending, review
from db.text_limits import ANSWER
from errors import counted
from ui.actions import run_write
from ui.plain_text import escape_markdown, untrusted_text

SHOWN = 20  # flags on the page at once; the next ones appear as these are reviewed


def flag_review(actor: str) -> None:
    with session() as s:
        flags = pending(s)
    if not flags:
        st.info("No response waits for review: none names a model or its maker.")
        return
    verb = "names" if len(flags) == 1 else "name"
    st.caption(f"{counted(len(flags), 'response')} {verb} a model or its maker. Raters and the "
               "grader see them redacted; once reviewed here, each joins the raters' queues of the "
               "assignment design it belongs to (or you are told to assign it). Keep or "
               "edit the redaction, or restore the original when the name was a false alarm.")
    for flag in flags[:SHOWN]:
        source = flag.model or "an exam answer"
        with st.expander(escape_markdown(f"{flag.response_id} · {source} · names: "
                                         f"{names_found(flag.names)}")):
            _one(flag, actor)


def names_found(names: list[str], *, most: int = 10) -> str:
    """Each name found once, as first written, with its count when it recurs ("xAI (3 times),
    GPT-4o"); at most `most` of them (an answer may name one 40,000 times)."""
    counts: dict[str, int] = {}
    spelled: dict[str, str] = {}
    for name in names:
        counts[name.lower()] = counts.get(name.lower(), 0) + 1
        spelled.setdefault(name.lower(), name)
    shown = [spelled[k] + (f" ({n:,} times)" if n > 1 else "")
             for k, n in list(counts.items())[:most]]
    left = len(counts) - most
    return ", ".join(shown) + (f" and {left} more" if left > 0 else "")


def _one(flag: Flagged, actor: str) -> None:
    with st.form(f"flag-{flag.response_id}"):
        edited = []
        for i, (original, shown) in enumerate(zip(flag.original, flag.shown, strict=True)):
            label = "Answer" if i == 0 else f"Answer after stage {i + 1}"
            left, right = st.columns(2)
            with left:
                st.markdown(f"**{label}, as imported**")
                untrusted_text(original)
            # a redaction may be longer than an answer may be ("[name removed]" for "xAI"):
            # the box holds it whole (a shorter max_chars cut it, and the cut was saved);
            # saving more than ANSWER is refused (`review`)
            edited.append(right.text_area(f"{label}, as raters and the grader read it", shown,
                                          height=200, key=f"flag-{flag.response_id}-{i}",
                                          max_chars=max(ANSWER, len(shown))))
        keep = st.form_submit_button("Save and release", type="primary",
                                     key=f"flag-keep-{flag.response_id}")
        restore = st.form_submit_button("Restore the original (false alarm) and release",
                                        key=f"flag-restore-{flag.response_id}")
    if keep or restore:
        texts = flag.original if restore else edited

        def write(s) -> str:
            review(s, response_id=flag.response_id, texts=texts, actor=actor)
            joined = join_design(s, response_id=flag.response_id, actor=actor)
            return f"Response {flag.response_id} reviewed; {joined}."

        run_write(write, redraw=True)  # the flag leaves the list above
