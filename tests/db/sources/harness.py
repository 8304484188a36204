"""Running a harness-output import on a test study, and its refusals."""

from pathlib import Path

import pytest
from sqlmodel import Session

from collection.batch_responses import import_harness_responses
from db.bundle.importer import BundleInvalid
from db.engine import engine_for
from tests.db.bundle.bundles import snapshot


def run(url: str, path: Path, source: str, **kw):
    with Session(engine_for(url), expire_on_commit=False) as s:
        return import_harness_responses(s, path, source=source, actor="admin", **kw)


def refused(url: str, path: Path, source: str, **kw) -> list[str]:
    """The problems of a refused import; the study unchanged."""
    before = snapshot(url)
    with pytest.raises(BundleInvalid) as info:
        run(url, path, source, **kw)
    assert snapshot(url) == before
    return [str(p) for p in info.value.problems]
