"""Fixtures of the package tests."""

from pathlib import Path

import pytest
from sqlmodel import Session

from db.engine import engine_for, upgrade
from package.freeze import freeze
from tests.factories import validated_config
from tests.openai_server import OpenAIServer

KEY = "sk-test-package-0000"


@pytest.fixture(scope="module")
def frozen_package(tmp_path_factory) -> tuple[Path, str]:
    """One frozen text package (path, sha256), shared by a module's tests."""
    root = tmp_path_factory.mktemp("frozen")
    url = f"sqlite:///{root / 'study.db'}"
    with pytest.MonkeyPatch.context() as mp, OpenAIServer() as srv:
        mp.setenv("NMB_HOME", str(root / "home"))
        upgrade(url)
        with Session(engine_for(url), expire_on_commit=False) as s:
            cid = validated_config(s, srv.base_url, api_key=KEY)
            row = freeze(s, config_id=cid, out=root / "good.zip", canary_size=3)
    return root / "good.zip", row.sha256
