"""How a grader run's end is shown: the outcome of grading.runs (the history's
status column) as the Streamlit call that shows it, so a run that graded nothing but failed is
red here and "failed" there."""

from typing import Literal

from grading.runs import Outcome, outcome

Alert = Literal["error", "warning", "success", "info"]
ALERTS: dict[Outcome, Alert] = {"failed": "error", "partial": "warning",
                                "interrupted": "warning", "finished": "success",
                                "running": "info"}


def run_outcome(graded: int, failed: int, status: str = "finished") -> Alert:
    """The name of the Streamlit call that shows a run with these counts."""
    return ALERTS[outcome(status, graded, failed)]
