"""`nmb restore` refuses a backup whose database points an image outside the study: an
absolute path, a climb out of it, or a file that is not a regular one (a FIFO already in the
store). One line, exit 2, nothing restored (in process: the fast lane)."""

import hashlib
import io
import json
import os
import sqlite3
import tarfile
from pathlib import Path

import pytest
from sqlmodel import Session

import cli
from db.backup import backup_study
from db.engine import engine_for
from tests.factories import make_study

FIFO = f"images/ab/ab{'0' * 62}.nii.gz"  # a store name no member of the backup holds


def _hostile_backup(src: Path, dest: Path, path: str) -> Path:
    """`src` with one series of its database pointing at `path` (the manifest's hash updated)."""
    with tarfile.open(src) as tf:
        members = {m.name: (m, tf.extractfile(m).read()) for m in tf.getmembers()}
    db = dest.with_suffix(".sqlite")
    db.write_bytes(members["database/study.sqlite"][1])
    with sqlite3.connect(db) as conn:
        conn.execute("INSERT INTO series (case_id, position, sequence, path, sha256, shape, "
                     "voxel_sizes, picture) VALUES ('case0', 0, 'T1', ?, ?, '[2,2,2]', "
                     "'[1.0,1.0,1.0]', 0)", (path, "0" * 64))
    data = db.read_bytes()
    manifest = json.loads(members["manifest.json"][1])
    for m in manifest["members"]:
        if m["name"] == "database/study.sqlite":
            m.update(size=len(data), sha256=hashlib.sha256(data).hexdigest())
    members["database/study.sqlite"] = (members["database/study.sqlite"][0], data)
    members["manifest.json"] = (members["manifest.json"][0], json.dumps(manifest).encode())
    with tarfile.open(dest, "w", format=tarfile.PAX_FORMAT) as out:
        for info, content in members.values():
            info.size = len(content)
            out.addfile(info, io.BytesIO(content))
    return dest


@pytest.mark.parametrize("path, why", [
    ("/etc/hostname", "is an absolute path"),
    ("images/../../etc/hostname", "climbs out of the study"),
    ("cache/x.nii", "is not in the image store"),
    (FIFO, "is not a regular file"),
])
def test_a_stored_image_path_outside_the_study_is_refused(
        sqlite_url: str, nmb_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture, path: str, why: str) -> None:
    with Session(engine_for(sqlite_url)) as s:
        make_study(s, n_tasks=1, experts=0)
    engine_for(sqlite_url).dispose()
    backup_study(tmp_path / "good.tar")
    bad = _hostile_backup(tmp_path / "good.tar", tmp_path / "bad.tar", path)
    home = tmp_path / "new-home"
    monkeypatch.setenv("NMB_HOME", str(home))
    (home / "images" / "ab").mkdir(parents=True)
    os.mkfifo(home / FIFO)
    assert cli.main(["restore", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"bad.tar: the database names the image {path!r}" in err
    assert why in err and "nothing was restored" in err
    assert not (home / "study.db").exists()
    left = [p.relative_to(home) for p in home.rglob("*") if not p.is_dir()]
    assert sorted(p.as_posix() for p in left if p.parts[0] != "tmp") == [FIFO]
