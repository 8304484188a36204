"""Fixtures shared by the server routes' tests."""

from collections.abc import Iterator

import pytest
from streamlit import config


@pytest.fixture
def prefix() -> Iterator[None]:
    """The app configured with `server.baseUrlPath` = "/nmb/" (slashes as a user may type)."""
    old = config.get_option("server.baseUrlPath")
    config.set_option("server.baseUrlPath", "/nmb/")
    try:
        yield
    finally:
        config.set_option("server.baseUrlPath", old)
