"""Migrations at start and the refused downgrade (db.engine.upgrade, `nmb db upgrade`)."""

import pytest
from alembic import command
from sqlalchemy import text

import cli
from db.engine import HEAD_REVISION, alembic_config, engine_for, upgrade
from errors import UserError


def _revision(url: str) -> str:
    with engine_for(url).connect() as conn:
        return conn.execute(text("SELECT version_num FROM alembic_version")).scalar()


def _set_revision(url: str, revision: str) -> None:
    with engine_for(url).begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = :r"), {"r": revision})


def test_a_new_database_is_migrated_to_the_newest_revision(database_url: str) -> None:
    assert _revision(database_url) == HEAD_REVISION
    upgrade(database_url)  # at the newest: nothing to do
    assert _revision(database_url) == HEAD_REVISION


def test_a_database_at_an_older_revision_is_migrated(database_url: str) -> None:
    command.downgrade(alembic_config(database_url), "0012")
    assert _revision(database_url) == "0012"
    upgrade(database_url)
    assert _revision(database_url) == HEAD_REVISION


def test_a_database_newer_than_the_code_is_refused_and_left_unchanged(database_url: str) -> None:
    _set_revision(database_url, "0099")
    with pytest.raises(UserError, match=r"revision '0099', newer than .* \(newest "
                                        rf"{HEAD_REVISION}\): a downgrade is refused"):
        upgrade(database_url)
    assert _revision(database_url) == "0099"


def test_nmb_db_upgrade_refuses_a_newer_database_in_one_line(database_url: str, capsys) -> None:
    _set_revision(database_url, "0099")
    assert cli.main(["db", "upgrade"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "a downgrade is refused" in err and "Traceback" not in err
    assert _revision(database_url) == "0099"
