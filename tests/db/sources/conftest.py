"""The study the response importers' tests import into."""

from pathlib import Path

import pytest
from sqlmodel import Session

from db.bundle.importer import import_bundle
from db.engine import engine_for
from tests.db.bundle.bundles import write_bundle


@pytest.fixture
def study(database_url: str, tmp_path: Path) -> str:
    """The base bundle's study (t1, t2: levels 1-2; t3: level 3 with 2 stages), no response;
    its task file is tmp_path/base/tasks.jsonl (rows 0, 1, 2: t1, t2, t3)."""
    with Session(engine_for(database_url)) as s:
        import_bundle(s, write_bundle(tmp_path / "base", with_responses=[]))
    return database_url
