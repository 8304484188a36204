"""The one exception type for user mistakes.

The CLI turns a `UserError` into one line on stderr and exit code 2; a page shows it
with `st.error`. Programming errors are never wrapped: they keep their traceback.
"""


class UserError(Exception):
    """A mistake the user can fix: bad argument, missing file, invalid data, wrong state."""


def one_line(text: str, limit: int) -> str:
    """`text` on one line (whitespace runs become one space), cut to `limit` with "..."."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
