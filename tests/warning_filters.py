"""A guard for code that must leave the process's warning filters alone."""

import contextlib
import warnings
from collections.abc import Iterator

import pytest


@contextlib.contextmanager
def recorded_without_catch_warnings() -> Iterator[list[warnings.WarningMessage]]:
    """Every warning raised in the block, recorded; the block fails if it calls
    `warnings.catch_warnings`, which swaps the filter list of the whole process and puts it
    back on exit (not thread-safe: Streamlit serves sessions on threads)."""
    def touched(*args, **kwargs):
        raise AssertionError("warnings.catch_warnings used")

    with warnings.catch_warnings(record=True) as seen, pytest.MonkeyPatch.context() as mp:
        warnings.simplefilter("always")
        mp.setattr(warnings, "catch_warnings", touched)
        yield seen
