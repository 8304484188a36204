"""Text from outside the tool, shown exactly as it was written and never as markdown.

Every field from a bundle, a response, a rater or an exam taker is untrusted: rendered as
markdown, `![](http://host/x)` would make the rater's browser fetch that URL (a beacon), and
its headings or bold could pose as the page's own labels ("**Reference answer:**").
`untrusted_text` shows such a field as plain text (line breaks kept, long lines wrapped) in a
bordered box that marks where it begins and ends; `escape_markdown` makes a short value safe
inside the page's own markdown (a title, an error message that quotes a value).
"""

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


def escape_markdown(value: str) -> str:
    """`value` as literal text inside markdown, on one line."""
    return _SYNTAX.sub(r"\\\1", " ".join(value.split()))
