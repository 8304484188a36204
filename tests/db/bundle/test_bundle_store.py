"""The image store's workspaces and the sweep: what dead imports left goes, nothing else."""

import hashlib
import shutil
from pathlib import Path

import pytest
from sqlalchemy import event
from sqlmodel import Session

from db.bundle.importer import import_bundle
from db.bundle.store import Workspace, image_path, sweep
from db.engine import engine_for
from db.models import Series
from tests.db.bundle.bundles import write_bundle


def _dead_workspace(home: Path, name: str, added: list[str]) -> Path:
    """What a killed import leaves: its folder, the images it listed, a partial copy."""
    ws = home / "tmp" / name
    (ws / "bundle" / "cases").mkdir(parents=True)
    (ws / "added.txt").write_text("".join(f"{rel}\n" for rel in added))
    for rel in added:
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_bytes(b"image")
    partial = home / added[-1]
    partial.with_name(f".{partial.name}.{name}.tmp").write_bytes(b"ima")
    return ws


def test_sweep_removes_dead_workspaces_and_their_unreferenced_images(
        sqlite_url: str, nmb_home: Path, tmp_path: Path) -> None:
    with Session(engine_for(sqlite_url)) as s:
        import_bundle(s, write_bundle(tmp_path / "b"))
        kept = s.exec(Series.__table__.select()).first().path  # in the study
    orphan = image_path("ab" * 32, ".nii.gz").as_posix()
    _dead_workspace(nmb_home, "import-dead", [kept, orphan])
    (nmb_home / kept).write_bytes((nmb_home / kept).read_bytes())  # untouched below
    stored = hashlib.sha256((nmb_home / kept).read_bytes()).hexdigest()
    assert sweep(engine_for(sqlite_url)) == 1
    assert [p.name for p in (nmb_home / "tmp").iterdir()] == [".lock"]
    assert not (nmb_home / orphan).exists()
    assert not list((nmb_home / "images").rglob("*.tmp"))
    assert hashlib.sha256((nmb_home / kept).read_bytes()).hexdigest() == stored


def test_sweep_leaves_everything_while_an_import_runs(sqlite_url: str, nmb_home: Path) -> None:
    orphan = image_path("cd" * 32, ".nii").as_posix()
    with Workspace(engine=engine_for(sqlite_url)) as live:
        dead = _dead_workspace(nmb_home, "import-dead", [orphan])
        assert sweep(engine_for(sqlite_url)) == 0
        assert live.path.is_dir() and dead.is_dir() and (nmb_home / orphan).exists()
    assert sweep(engine_for(sqlite_url)) == 1
    assert not dead.exists() and not (nmb_home / orphan).exists()


def test_a_new_workspace_first_sweeps_what_dead_ones_left(sqlite_url: str,
                                                         nmb_home: Path) -> None:
    """A server that runs for weeks catches up at its next import, not only at its start."""
    orphan = image_path("ef" * 32, ".nii").as_posix()
    dead = _dead_workspace(nmb_home, "import-dead", [orphan])
    with Workspace(engine=engine_for(sqlite_url)) as live:
        assert not dead.exists() and not (nmb_home / orphan).exists()
        assert sorted(p.name for p in (nmb_home / "tmp").iterdir()) == [".lock", live.path.name]


def test_an_upload_workspace_holds_the_import_and_its_leftovers(sqlite_url: str, nmb_home: Path,
                                                                 tmp_path: Path) -> None:
    """The admin page's upload: the zip and its extraction share one workspace, and images a
    failed import stored are swept when the page closes it."""
    write_bundle(tmp_path / "study")
    engine = engine_for(sqlite_url)

    def fail(conn, cursor, statement, *args) -> None:
        if statement.lstrip().upper().startswith("INSERT INTO TASK"):
            raise RuntimeError("injected")

    with Workspace("upload", engine=engine) as upload:
        archive = shutil.make_archive(str(upload.path / "bundle"), "zip", tmp_path, "study")
        event.listen(engine, "after_cursor_execute", fail)
        try:
            with Session(engine) as s, pytest.raises(RuntimeError):
                import_bundle(s, Path(archive), workspace=upload)
        finally:
            event.remove(engine, "after_cursor_execute", fail)
        assert (upload.path / "bundle" / "study" / "bundle.json").is_file()
        assert len(list((nmb_home / "images").rglob("*.nii*"))) == 3  # stored, not committed
    assert not list((nmb_home / "images").rglob("*"))
    assert [p.name for p in (nmb_home / "tmp").iterdir()] == [".lock"]


def test_an_import_that_fails_after_storing_removes_its_images(sqlite_url: str, nmb_home: Path,
                                                                tmp_path: Path) -> None:
    source = tmp_path / "t1.nii"
    source.write_bytes(b"not what was hashed")
    with Workspace(engine=engine_for(sqlite_url)) as ws:
        sha = hashlib.sha256(b"an image").hexdigest()
        try:
            ws.store_image(source, sha, ".nii")
        except Exception as e:
            assert "changed while it was being imported" in str(e)
    assert not (nmb_home / image_path(sha, ".nii")).exists()
    assert not list((nmb_home / "images").rglob("*"))
    assert [p.name for p in (nmb_home / "tmp").iterdir()] == [".lock"]
