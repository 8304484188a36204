"""The one exception type for user mistakes.

The CLI turns a `UserError` into one line on stderr and exit code 2; a page shows it
with `st.error`. Programming errors are never wrapped: they keep their traceback.
"""


class UserError(Exception):
    """A mistake the user can fix: bad argument, missing file, invalid data, wrong state."""
