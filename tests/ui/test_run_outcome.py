"""A grader run's end: nothing graded and some failed is shown as a failure, not green."""

import pytest

from ui.run_outcome import run_outcome


@pytest.mark.parametrize(("graded", "failed", "shown"), [
    (0, 1, "error"), (3, 1, "warning"), (3, 0, "success"), (0, 0, "success")])
def test_run_outcome(graded: int, failed: int, shown: str) -> None:
    assert run_outcome(graded, failed) == shown
