"""How a grader run's end is shown: a run that graded nothing but failed is a failure."""

from typing import Literal


def run_outcome(graded: int, failed: int) -> Literal["error", "warning", "success"]:
    """"error" when items failed and none was graded, "warning" when some failed, else
    "success" (the name of the Streamlit call that shows it)."""
    if failed and not graded:
        return "error"
    return "warning" if failed else "success"
