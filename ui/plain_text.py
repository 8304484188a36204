"""Text from outside the tool, shown exactly as it was written and never as markdown.

Every field from a bundle, a response, a rater or an exam taker is untrusted: rendered as
markdown, `![](http://host/x)` would make the rater's browser fetch that URL (a beacon), and
its headings or bold could pose as the page's own labels ("**Reference answer:**").
`untrusted_text` shows such a field as plain text (line breaks kept, long lines wrapped) in a
bordered box that marks where it begins and ends; `untrusted_heading` shows one (a case title)
as a heading, as written; `escape_markdown` makes a short value safe inside the page's own
markdown (an error message that quotes a value; markdown still turns "->" into an arrow).
"""

import html
import re

import streamlit as st

# The characters of markdown's and Streamlit's syntax (":red[x]", ":material/icon:", "$math$");
# CommonMark lets a backslash escape any ASCII punctuation.
_SYNTAX = re.compile(r"""([\\`*_{}\[\]()#+\-.!|<>~$:&])""")


def untrusted_text(body: str, *, empty: str = "(empty)") -> None:
    """Show `body` verbatim in a bordered box (`empty`, in grey, when there is nothing)."""
    with st.container(border=True):
        if body:
            st.text(body, width="stretch")
        else:
            st.caption(empty)


def untrusted_heading(value: str, *, level: int = 3) -> None:
    """`value` as a heading (h`level`), exactly as written (HTML-escaped text, no markdown)."""
    st.html(f"<h{level}>{html.escape(' '.join(value.split()))}</h{level}>")


def escape_markdown(value: str) -> str:
    """`value` as literal text inside markdown, on one line."""
    return _SYNTAX.sub(r"\\\1", " ".join(value.split()))
