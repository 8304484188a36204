"""A bundle may mark stages of a multi-turn task as disconfirming: one true/false per stage,
stored on the task; a wrong shape is refused with the rest of the bundle's problems."""

import json
from pathlib import Path

import pytest
from sqlmodel import Session

from db.bundle.importer import BundleInvalid, import_bundle
from db.engine import engine_for
from db.models import Task
from tests.db.bundle.bundles import TASKS, write_bundle, write_jsonl


def _with_marks(path: Path, marks: dict[str, object]) -> Path:
    bundle = write_bundle(path)
    write_jsonl(bundle / "tasks.jsonl",
                [{**t, "disconfirming": marks[t["task_id"]]} if t["task_id"] in marks else t
                 for t in TASKS])
    return bundle


def test_marks_are_stored_one_per_stage(sqlite_url: str, tmp_path: Path) -> None:
    n = len(next(t for t in TASKS if t["task_id"] == "t3")["stages"])
    marks = [False] * (n - 1) + [True]
    with Session(engine_for(sqlite_url)) as s:
        import_bundle(s, _with_marks(tmp_path / "b", {"t3": marks, "t2": []}))
        assert s.get(Task, "t3").disconfirming == marks
        assert s.get(Task, "t2").disconfirming is None and s.get(Task, "t1").disconfirming is None


@pytest.mark.parametrize(("marks", "message"), [
    ({"t3": [True]}, "disconfirming has 1 mark for 2 stages (one true or false per stage)"),
    ({"t3": ["yes", False]}, 'tasks.jsonl:3: disconfirming ["yes", false] is not a list of true or false'),
    ({"t1": [True]}, "disconfirming has 1 mark for 0 stages (one true or false per stage)"),
])
def test_a_wrong_shape_is_refused(sqlite_url: str, tmp_path: Path, marks, message) -> None:
    with Session(engine_for(sqlite_url)) as s, pytest.raises(BundleInvalid) as info:
        import_bundle(s, _with_marks(tmp_path / "b", marks))
    assert [p.file for p in info.value.problems] == ["tasks.jsonl"]
    assert message in str(info.value.problems[0]), json.dumps([str(p) for p in
                                                               info.value.problems])
