"""Two imports at once (threads, SQLite and PostgreSQL): the same bundle twice, or two bundles
giving one case different content. Each import is the whole bundle or nothing, the second is
judged against what the first committed (skipped when identical, one problem line when it
conflicts), never an IntegrityError traceback."""

import json
from pathlib import Path

import pytest
from sqlalchemy import event, insert
from sqlmodel import Session, select

from db.bundle.importer import BundleInvalid, import_bundle
from db.engine import engine_for, upgrade
from db.models import Response, Series
from errors import UserError
from tests.db.bundle.bundles import responses, snapshot, write_bundle
from tests.db.interleave import released_together

# Held while both imports run: each stops at its first insert (PostgreSQL; reads still pass),
# after reading the study to plan, so both plan against a study without the bundle.
BLOCK = 'LOCK TABLE "case" IN EXCLUSIVE MODE'


def _both(url: str, first: Path, second: Path) -> list[object]:
    return released_together(url, BLOCK, lambda s: import_bundle(s, first),
                             lambda s: import_bundle(s, second))


def test_the_same_bundle_imported_twice_at_once(database_url: str, tmp_path: Path) -> None:
    bundle = write_bundle(tmp_path / "b")
    outcome = _both(database_url, bundle, bundle)
    assert not [o for o in outcome if isinstance(o, Exception)], outcome
    assert sorted(o.new_cases for o in outcome) == [0, 2]  # the second found it imported
    study = snapshot(database_url)
    assert len(study["case"]) == 2 and len(study["response"]) == 12 and not study["temp"]
    with Session(engine_for(database_url)) as s:
        stored = {sha for sha in s.exec(select(Series.sha256))}
    files = [f for f in study["files"] if "/" in f]
    assert {Path(f).name.split(".")[0] for f in files} == stored  # no orphan, no .tmp


def test_two_bundles_giving_one_case_other_content_at_once(database_url: str,
                                                           tmp_path: Path) -> None:
    one = write_bundle(tmp_path / "one")
    other = write_bundle(tmp_path / "other")
    case_file = next((other / "cases").glob("*/case.json"))
    case = json.loads(case_file.read_text())
    case["title"] = "Another title"
    case_file.write_text(json.dumps(case))
    outcome = _both(database_url, one, other)
    refused = [o for o in outcome if isinstance(o, Exception)]
    assert len(refused) == 1 and isinstance(refused[0], BundleInvalid), outcome
    assert "already exists with different content" in " ".join(map(str, refused[0].problems))
    assert len(snapshot(database_url)["case"]) == 2


@pytest.mark.postgres
def test_a_response_collected_during_the_import_is_one_line(postgres_server, monkeypatch,
                                                             tmp_path: Path) -> None:
    """Right before the import writes its responses, a collection run commits a response for
    one of the same (model, task, sample) (PostgreSQL: on SQLite the import holds the write
    lock): one line, nothing of the bundle written, its images swept (an IntegrityError
    traceback before)."""
    url = postgres_server.create_database()
    monkeypatch.setenv("NMB_DATABASE_URL", url)
    upgrade(url)
    with Session(engine_for(url)) as s:
        import_bundle(s, write_bundle(tmp_path / "a"))
    before = snapshot(url)
    rows = responses(models=("model-new",), samples=(0,))
    bundle = write_bundle(tmp_path / "b", with_responses=rows)
    eng = engine_for(url)

    def collected(conn, _cursor, statement, *_args) -> None:
        if statement.startswith("INSERT INTO response") and not done:
            done.append(True)
            with eng.connect() as other:  # a run's commit, in between
                other.execute(insert(Response).values(
                    response_id="collected-1", task_id=rows[0]["task_id"], model="model-new",
                    sample=0, source="model", text="Collected meanwhile.", blind_code="R-RACE1"))
                other.commit()

    done: list[bool] = []
    event.listen(eng, "before_cursor_execute", collected)
    try:
        with Session(eng) as s, pytest.raises(UserError, match="changed while it was imported"):
            import_bundle(s, bundle)
    finally:
        event.remove(eng, "before_cursor_execute", collected)
    after = snapshot(url)
    assert [r for r in after["response"] if r not in before["response"]] == [
        r for r in after["response"] if "collected-1" in r]
    assert after["files"] == before["files"] and after["temp"] == []
