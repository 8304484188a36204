"""A grader run's end: nothing graded and some failed is a failure, not green, on the page and
in the history alike (one rule, grading.runs.outcome)."""

import pytest

from grading.runs import outcome
from ui.admin.run_outcome import run_outcome


@pytest.mark.parametrize(("status", "graded", "failed", "named", "shown"), [
    ("finished", 0, 1, "failed", "error"), ("finished", 3, 1, "partial", "warning"),
    ("finished", 3, 0, "finished", "success"), ("finished", 0, 0, "finished", "success"),
    ("interrupted", 0, 1, "interrupted", "warning"), ("running", 2, 0, "running", "info")])
def test_outcome_and_how_it_is_shown(status: str, graded: int, failed: int, named: str,
                                     shown: str) -> None:
    assert outcome(status, graded, failed) == named
    assert run_outcome(graded, failed, status) == shown
