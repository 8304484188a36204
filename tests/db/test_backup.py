"""`nmb backup` and `nmb restore` (db/backup/): the demo study backed up and restored on SQLite
and PostgreSQL is the same study (`nmb status`, the calibration report's `--check`, the image
store); a damaged, truncated or hostile file is refused in one line and writes nothing."""

import hashlib
import io
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from db.engine import HEAD_REVISION

ROOT = Path(__file__).resolve().parents[2]


def nmb(*args: str, home: Path, url: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "NMB_HOME": str(home)}
    env.pop("NMB_DATABASE_URL", None)
    if url:
        env["NMB_DATABASE_URL"] = url
    return subprocess.run([sys.executable, "-m", "cli", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)


def ok(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 0, done.stderr
    return done.stdout


def refused(done: subprocess.CompletedProcess, *phrases: str) -> str:
    """The command failed with one line on stderr (exit 2) holding every phrase."""
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("nmb: "), done.stderr
    for phrase in phrases:
        assert phrase in done.stderr, done.stderr
    return done.stderr


def store(home: Path) -> dict[str, str]:
    """{path under NMB_HOME: sha256} of the image store."""
    return {p.relative_to(home).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted((home / "images").rglob("*")) if p.is_file()}


def nothing_restored(home: Path) -> None:
    assert not (home / "study.db").exists()
    assert not (home / "images").exists() or store(home) == {}
    assert not (home / "tmp").exists() or [p.name for p in (home / "tmp").iterdir()] == [".lock"]


@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_backup_then_restore_reproduces_the_study(kind: str, request: pytest.FixtureRequest,
                                                  demo_template: Path, tmp_path: Path) -> None:
    source, target, out = tmp_path / "source", tmp_path / "target", tmp_path / "study.tar"
    url = new_url = None
    if kind == "sqlite":
        shutil.copytree(demo_template, source)
    else:
        server = request.getfixturevalue("postgres_server")
        url, new_url = server.create_database(), server.create_database()
        ok(nmb("demo", "--resolution", "2", home=source, url=url))
    look = json.loads(ok(nmb("calibrate", "--config", "1", "--part", "heldout", home=source,
                             url=url)))
    before = {cmd: ok(nmb(*cmd.split(), home=source, url=url))
              for cmd in ("status", "users list --json")}

    assert f"revision {HEAD_REVISION}" in ok(nmb("backup", "--out", str(out), home=source, url=url))
    assert out.stat().st_mode & 0o777 == 0o600  # it holds password hashes
    ok(nmb("db", "upgrade", home=target, url=new_url))  # a started app's empty tables are fine
    said = ok(nmb("restore", str(out), home=target, url=new_url))

    assert "10 cases, 30 series" in said
    assert {cmd: ok(nmb(*cmd.split(), home=target, url=new_url)) for cmd in before} == before
    check = json.loads(ok(nmb("calibrate", "--check", str(look["report_id"]), home=target,
                              url=new_url)))
    assert check["matches"] and check["data_hash_now"] == look["data_sha256"]
    assert store(target) == store(source) and len(store(target)) == 31  # 30 series and a mask
    refused(nmb("restore", str(out), home=target, url=new_url), "not empty")


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A backup of the sample bundle's study (SQLite): 3 series in the store."""
    folder = tmp_path_factory.mktemp("small")
    ok(nmb("import", str(ROOT / "examples" / "sample-bundle"), home=folder / "home"))
    ok(nmb("backup", "--out", str(folder / "small.tar"), home=folder / "home"))
    return folder / "small.tar"


def _members(path: Path) -> dict[str, tarfile.TarInfo]:
    with tarfile.open(path) as tf:
        return {m.name: m for m in tf.getmembers()}


def _first_image(path: Path) -> tarfile.TarInfo:
    return next(m for name, m in _members(path).items() if name.startswith("images/"))


@pytest.mark.slow
@pytest.mark.parametrize("cut", ["in the database", "in an image", "before the manifest",
                                 "in the manifest"])
def test_a_truncated_backup_is_refused_in_one_line(small: Path, tmp_path: Path, cut: str) -> None:
    members = _members(small)
    at = {"in the database": members["database/study.sqlite"].offset_data + 1000,
          "in an image": _first_image(small).offset_data + 10,
          "before the manifest": members["manifest.json"].offset,
          "in the manifest": members["manifest.json"].offset_data + 20}[cut]
    bad = tmp_path / "cut.tar"
    bad.write_bytes(small.read_bytes()[:at])
    home = tmp_path / "home"
    err = refused(nmb("restore", str(bad), home=home), "cut.tar: ", "nothing was restored")
    assert ("no manifest.json" in err) == (cut == "before the manifest")
    nothing_restored(home)


def _flip(path: Path, offset: int, dest: Path) -> Path:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0xFF
    dest.write_bytes(bytes(data))
    return dest


@pytest.mark.slow
@pytest.mark.parametrize("member", ["database/study.sqlite", "image"])
def test_a_tampered_member_is_refused(small: Path, tmp_path: Path, member: str) -> None:
    info = _first_image(small) if member == "image" else _members(small)[member]
    bad = _flip(small, info.offset_data + info.size // 2, tmp_path / "tampered.tar")
    home = tmp_path / "home"
    refused(nmb("restore", str(bad), home=home), f"member {info.name} does not match its sha256")
    nothing_restored(home)


def repack(src: Path, dest: Path, extra: list[tuple[tarfile.TarInfo, bytes]] = (),
           edit: Callable[[dict], None] = lambda manifest: None) -> Path:
    """`src`'s members, then `extra` (listed in the manifest with their hashes), then its
    manifest changed by `edit`."""
    with tarfile.open(src) as tf, tarfile.open(dest, "w", format=tarfile.PAX_FORMAT) as out:
        manifest = json.loads(tf.extractfile("manifest.json").read())
        for m in tf.getmembers():
            if m.name != "manifest.json":
                out.addfile(m, tf.extractfile(m))
        for info, data in extra:
            info.size = len(data) if info.isreg() else 0
            out.addfile(info, io.BytesIO(data) if info.isreg() else None)
            manifest["members"].append({"name": info.name, "size": len(data),
                                        "sha256": hashlib.sha256(data).hexdigest()})
        edit(manifest)
        data = json.dumps(manifest).encode()
        info = tarfile.TarInfo("manifest.json")
        info.size = len(data)
        out.addfile(info, io.BytesIO(data))
    return dest


def _entry(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, link
    return info


@pytest.mark.slow
@pytest.mark.parametrize("entry, why", [
    (_entry("../evil.zip"), "has an unsafe path"),
    (_entry("packages/../../evil.zip"), "has an unsafe path"),
    (_entry("/tmp/evil.zip"), "has an absolute path"),
    (_entry("images/ab/evil", tarfile.SYMTYPE, "/etc/passwd"), "is a link"),
    (_entry("packages/evil.zip", tarfile.LNKTYPE, "database/study.sqlite"), "is a link"),
    (_entry("images/ab", tarfile.DIRTYPE), "is not a regular file"),
    (_entry("packages/fifo.zip", tarfile.FIFOTYPE), "is not a regular file"),
    (_entry("packages/null.zip", tarfile.CHRTYPE), "is not a regular file"),
    (_entry("run.sh"), "is not a file a backup holds"),
])
def test_a_member_outside_the_study_is_refused(small: Path, tmp_path: Path,
                                               entry: tarfile.TarInfo, why: str) -> None:
    bad = repack(small, tmp_path / "hostile.tar", [(entry, b"#!/bin/sh\necho pwned\n")])
    home = tmp_path / "deep" / "home"
    refused(nmb("restore", str(bad), home=home), f"member {entry.name!r} {why}")
    nothing_restored(home)
    assert not (tmp_path / "evil.zip").exists() and not (tmp_path / "deep" / "evil.zip").exists()


@pytest.mark.slow
def test_a_member_not_in_the_manifest_or_a_missing_one_is_refused(small: Path,
                                                                  tmp_path: Path) -> None:
    image = _first_image(small).name

    def drop(manifest: dict) -> None:
        manifest["members"] = [m for m in manifest["members"] if m["name"] != image]

    refused(nmb("restore", str(repack(small, tmp_path / "a.tar", edit=drop)),
                home=tmp_path / "a"), f"member {image} is not in manifest.json")

    def add(manifest: dict) -> None:
        manifest["members"].append({"name": "packages/gone.zip", "size": 1, "sha256": "0" * 64})

    refused(nmb("restore", str(repack(small, tmp_path / "b.tar", edit=add)),
                home=tmp_path / "b"), "member packages/gone.zip is missing")
    not_tar = tmp_path / "notes.tar"
    not_tar.write_text("not a backup\n" * 100)
    refused(nmb("restore", str(not_tar), home=tmp_path / "c"), "not a backup file")


@pytest.mark.slow
def test_a_newer_revision_is_refused(small: Path, tmp_path: Path) -> None:
    def newer(manifest: dict) -> None:
        manifest["revision"] = "9999"

    bad = repack(small, tmp_path / "newer.tar", edit=newer)
    refused(nmb("restore", str(bad), home=tmp_path / "home"),
            "made by a newer version (database revision 9999; this code knows up to "
            f"{HEAD_REVISION})")
    nothing_restored(tmp_path / "home")


@pytest.mark.slow
def test_an_older_revision_is_restored_then_migrated(nmb_home: Path, tmp_path: Path) -> None:
    from alembic import command

    from db.engine import alembic_config, database_url

    command.upgrade(alembic_config(database_url()), "0012")
    out = tmp_path / "old.tar"
    assert "revision 0012" in ok(nmb("backup", "--out", str(out), home=nmb_home))
    assert f"(revision 0012, migrated to {HEAD_REVISION})" in ok(nmb("restore", str(out),
                                                         home=tmp_path / "new"))
    with sqlite3.connect(tmp_path / "new" / "study.db") as conn:
        [revision] = conn.execute("SELECT version_num FROM alembic_version").fetchone()
        assert revision == HEAD_REVISION
    assert sorted(p.name for p in (tmp_path / "new").iterdir()) == ["study.db", "tmp"]


@pytest.mark.slow
def test_a_backup_never_overwrites_a_file(small: Path, tmp_path: Path) -> None:
    kept = tmp_path / "kept.tar"
    kept.write_text("an older backup")
    refused(nmb("backup", "--out", str(kept), home=tmp_path / "home"), "exists")
    assert kept.read_text() == "an older backup"
    refused(nmb("backup", "--out", str(tmp_path / "no" / "b.tar"), home=tmp_path / "home"),
            "no folder")


@pytest.mark.slow
def test_a_backup_never_writes_through_a_link_at_its_temporary_name(nmb_home: Path,
                                                                      tmp_path: Path) -> None:
    """In a shared folder (/tmp), another user may plant `.NAME.partial` as a link to a file
    of the user who runs the backup."""
    ok(nmb("import", str(ROOT / "examples" / "sample-bundle"), home=nmb_home))
    victim = tmp_path / "victim"
    victim.write_text("precious")
    (tmp_path / ".b.tar.partial").symlink_to(victim)
    ok(nmb("backup", "--out", str(tmp_path / "b.tar"), home=nmb_home))
    assert victim.read_text() == "precious"
    assert not (tmp_path / "b.tar").is_symlink() and "manifest.json" in _members(tmp_path / "b.tar")


@pytest.mark.postgres
def test_postgres_restore_checks_the_kind_the_rows_and_the_dump(postgres_server, small: Path,
                                                                 tmp_path: Path) -> None:
    import psycopg

    home = tmp_path / "home"
    url = postgres_server.create_database()
    refused(nmb("restore", str(small), home=home, url=url),
            "small.tar is a backup of a sqlite study, and the database here is postgresql")
    ok(nmb("import", str(ROOT / "examples" / "sample-bundle"), home=home, url=url))
    refused(nmb("restore", str(small), home=tmp_path / "other", url=url), "not empty")

    ok(nmb("backup", "--out", str(tmp_path / "clean.tar"), home=home, url=url))
    dsn = url.replace("postgresql+psycopg", "postgresql")
    with psycopg.connect(dsn, autocommit=True) as conn:  # what a study's migrations never make
        conn.execute("CREATE FUNCTION evil() RETURNS int LANGUAGE sql AS 'SELECT 1'")
    ok(nmb("backup", "--out", str(tmp_path / "pg.tar"), home=home, url=url))
    empty = postgres_server.create_database()
    refused(nmb("restore", str(tmp_path / "pg.tar"), home=tmp_path / "new", url=empty),
            "the database dump holds 'FUNCTION public evil()")
    nothing_restored(tmp_path / "new")
    ok(nmb("restore", str(tmp_path / "clean.tar"), home=tmp_path / "new", url=empty))  # no tables
    assert (ok(nmb("status", home=tmp_path / "new", url=empty))
            == ok(nmb("status", home=home, url=url)))
    assert store(tmp_path / "new") == store(home)


@pytest.mark.slow
def test_a_manifest_field_that_would_be_printed_must_be_plain_text(small: Path,
                                                                  tmp_path: Path) -> None:
    def hostile(manifest: dict) -> None:
        manifest["counts"]["cases\x1b[2J\nowned"] = 1

    bad = repack(small, tmp_path / "hostile.tar", edit=hostile)
    refused(nmb("restore", str(bad), home=tmp_path / "home"),
            "manifest.json is not a backup manifest (counts.")
    nothing_restored(tmp_path / "home")


@pytest.mark.slow
def test_the_images_backed_up_are_those_the_database_references(nmb_home: Path,
                                                                tmp_path: Path) -> None:
    ok(nmb("import", str(ROOT / "examples" / "sample-bundle"), home=nmb_home))
    referenced = store(nmb_home)
    orphan = nmb_home / "images" / "00" / f"{'0' * 64}.nii.gz"  # as a killed import leaves one
    orphan.parent.mkdir()
    orphan.write_bytes(b"not referenced")
    ok(nmb("backup", "--out", str(tmp_path / "b.tar"), home=nmb_home))
    assert {n for n in _members(tmp_path / "b.tar") if n.startswith("images/")} == set(referenced)

    victim = nmb_home / next(iter(referenced))
    victim.write_bytes(victim.read_bytes()[:-1])  # the store damaged under its name
    refused(nmb("backup", "--out", str(tmp_path / "c.tar"), home=nmb_home),
            f"{victim.relative_to(nmb_home).as_posix()} does not match the sha256 of its name",
            "nothing was written")
    assert sorted(p.name for p in tmp_path.iterdir() if "tar" in p.name) == ["b.tar"]


def test_caps_refuse_a_file_before_anything_is_extracted(small: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    import gzip

    from db.backup import archive
    from errors import UserError

    monkeypatch.setattr(archive, "MAX_MEMBERS", 2)
    with pytest.raises(UserError, match="more than 2 members"):
        archive.read_backup(small, tmp_path / "a")
    monkeypatch.undo()
    monkeypatch.setattr(archive, "RATIO_FROM_BYTES", 2**20)  # a gzip bomb, in small

    def only_zeros(manifest: dict) -> None:
        manifest["members"] = [m for m in manifest["members"]
                               if m["name"] in ("database/study.sqlite", "packages/zeros.zip")]

    plain = repack(small, tmp_path / "zeros.tar", [(_entry("packages/zeros.zip"), bytes(8 << 20))],
                   only_zeros)
    with tarfile.open(plain) as tf, tarfile.open(tmp_path / "bomb.tar", "w") as out:
        for m in tf.getmembers():
            if not m.name.startswith("images/"):
                out.addfile(m, tf.extractfile(m))
    bomb = tmp_path / "zeros.tar.gz"
    bomb.write_bytes(gzip.compress((tmp_path / "bomb.tar").read_bytes()))
    with pytest.raises(UserError, match=r"zeros.tar.gz: unpacks to [\d,]+ bytes, more than 100x"):
        archive.read_backup(bomb, tmp_path / "b")
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def _tar_with(dest: Path, entries: list[tuple[tarfile.TarInfo, bytes]], mode: str = "w",
              tar_format: int = tarfile.PAX_FORMAT) -> Path:
    """A tar of `entries` exactly as given (a hostile file: no manifest unless one is given)."""
    with tarfile.open(dest, mode, format=tar_format) as out:
        for info, data in entries:
            info.size = len(data)
            out.addfile(info, io.BytesIO(data))
    return dest


@pytest.mark.slow
def test_a_deeply_nested_manifest_is_one_line(small: Path, tmp_path: Path) -> None:
    with tarfile.open(small) as tf:
        entries = [(m, tf.extractfile(m).read()) for m in tf.getmembers()
                   if m.name != "manifest.json"]
    nested = b"[" * 5_000 + b"]" * 5_000  # under the manifest's cap, past the decoder's depth
    bad = _tar_with(tmp_path / "nested.tar", [*entries, (_entry("manifest.json"), nested)])
    refused(nmb("restore", str(bad), home=tmp_path / "home"),
            "manifest.json is not a backup manifest")
    nothing_restored(tmp_path / "home")


def test_an_extended_header_is_capped_before_it_is_read(tmp_path: Path) -> None:
    """A GNU long name of 64 MiB (a gzip bomb of 64 KiB) is refused at its header: tarfile
    would read it whole into memory."""
    import tracemalloc

    from db.backup import archive
    from errors import UserError

    bomb = _tar_with(tmp_path / "long.tar.gz", [
        (_entry("packages/a.zip"), b"a package"),
        (_entry("././@LongLink", tarfile.GNUTYPE_LONGNAME), bytes(64 << 20)),
        (_entry("packages/b.zip"), b"another")], "w:gz", tarfile.GNU_FORMAT)
    assert bomb.stat().st_size < 1 << 20
    tracemalloc.start()
    try:
        with pytest.raises(UserError, match=r"long.tar.gz: damaged or truncated \(an extended "
                                            r"header of 67,108,864 bytes"):
            archive.read_backup(bomb, tmp_path / "out")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20


@pytest.mark.slow
@pytest.mark.parametrize("options", [["--format=gnu"], ["--format=pax"],
                                     ["--format=pax", "--sparse-version=0.1"]])
def test_a_sparse_member_is_refused(tmp_path: Path, options: list[str]) -> None:
    """GNU tar's sparse files (tarfile takes them for regular files and reads their maps, of any
    length, into memory) are not what a backup writes."""
    folder = tmp_path / "src" / "packages"
    folder.mkdir(parents=True)
    with open(folder / "holes.zip", "wb") as f:
        f.seek(8 << 20)
        f.write(b"end")
    bad = tmp_path / "holes.tar"
    subprocess.run(["tar", "-C", str(tmp_path / "src"), "--sparse", *options, "-cf", str(bad),
                    "packages/holes.zip"], check=True)
    home = tmp_path / "home"
    refused(nmb("restore", str(bad), home=home), "holes.tar: ", "is a sparse file")
    nothing_restored(home)


def test_a_gzip_bomb_is_refused_at_its_header(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The unpacked size is checked as each header is read, not after every member has been
    decompressed to find the next header."""
    from db.backup import archive
    from errors import UserError

    monkeypatch.setattr(archive, "RATIO_FROM_BYTES", 2**20)
    whole = _tar_with(tmp_path / "whole.tar.gz", [(_entry("packages/zeros.zip"), bytes(32 << 20)),
                                                  (_entry("packages/b.zip"), b"after")], "w:gz")
    bomb = tmp_path / "bomb.tar.gz"  # cut: reading past the zeros would find the damage first
    bomb.write_bytes(whole.read_bytes()[: whole.stat().st_size * 2 // 3])
    with pytest.raises(UserError, match=r"bomb.tar.gz: unpacks to [\d,]+ bytes, more than 100x"):
        archive.read_backup(bomb, tmp_path / "out")
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_a_restore_never_overwrites_a_package_in_the_home(small: Path, tmp_path: Path) -> None:
    """The database may be empty while NMB_HOME still holds frozen packages (a new database
    URL): a package of the same name is the home's, not the backup's, to keep."""
    bad = repack(small, tmp_path / "with-package.tar", [(_entry("packages/p.zip"), b"theirs")])
    home = tmp_path / "home"
    (home / "packages").mkdir(parents=True)
    (home / "packages" / "p.zip").write_bytes(b"mine")
    refused(nmb("restore", str(bad), home=home), "not empty (NMB_HOME holds packages/p.zip)",
            "nothing was restored")
    assert (home / "packages" / "p.zip").read_bytes() == b"mine"
    nothing_restored(home)


SQLITE_EDITS = {  # what a hostile SQLite file holds that the migrations never create
    "a trigger of its own": ("CREATE TRIGGER evil AFTER INSERT ON expertscore BEGIN "
                             "UPDATE user SET role = 'admin'; END", "holds trigger 'evil'"),
    "a view": ("CREATE VIEW evil AS SELECT * FROM user", "holds view 'evil'"),
    "a table": ("CREATE TABLE evil (x)", "holds table 'evil'"),
    "the audit log's trigger dropped": ("DROP TRIGGER auditlog_no_delete",
                                        "lacks trigger 'auditlog_no_delete'"),
    "the audit log's trigger rewritten": (
        "DROP TRIGGER auditlog_no_update; CREATE TRIGGER auditlog_no_update BEFORE UPDATE ON "
        "auditlog BEGIN SELECT 1; END",
        "holds trigger 'auditlog_no_update' other than the migrations write it"),
}


@pytest.mark.slow
@pytest.mark.parametrize("edit", list(SQLITE_EDITS))
def test_a_sqlite_file_holds_only_what_the_migrations_create(nmb_home: Path, tmp_path: Path,
                                                             edit: str) -> None:
    """As a PostgreSQL dump's table of contents is (test_postgres_restore_checks_...)."""
    sql, why = SQLITE_EDITS[edit]
    ok(nmb("import", str(ROOT / "examples" / "sample-bundle"), home=nmb_home))
    with sqlite3.connect(nmb_home / "study.db") as conn:
        conn.executescript(sql)
    ok(nmb("backup", "--out", str(tmp_path / "b.tar"), home=nmb_home))
    home = tmp_path / "new"
    refused(nmb("restore", str(tmp_path / "b.tar"), home=home),
            f"b.tar: the database {why}")
    nothing_restored(home)


@pytest.mark.slow
def test_a_file_that_cannot_be_placed_is_one_line(small: Path, tmp_path: Path) -> None:
    """NMB_HOME/images that is not a folder (or not writable): one line, and the images
    already placed are removed again."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "images").write_text("not a folder")
    refused(nmb("restore", str(small), home=home), "cannot place images/", "nothing was restored")
    assert (home / "images").read_text() == "not a folder"
    assert not (home / "study.db").exists()


@pytest.mark.slow
def test_a_database_that_cannot_be_read_or_written_is_one_line(small: Path,
                                                               tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "study.db").write_bytes(b"not a database, " * 500)
    refused(nmb("backup", "--out", str(tmp_path / "b.tar"), home=home),
            "cannot back up the database at", "file is not a database")
    assert not (tmp_path / "b.tar").exists()

    (tmp_path / "file").write_text("not a folder")
    url = f"sqlite:///{tmp_path / 'file' / 'study.db'}"
    refused(nmb("restore", str(small), home=tmp_path / "new", url=url),
            "cannot restore the database at", "nothing was restored")
    nothing_restored(tmp_path / "new")


def _at_0013_with_a_weird_source(url: str | None, home: Path) -> None:
    """The sample bundle's study at revision 0013 (SQLite when `url` is None), one response's
    source a word 0014's check constraint refuses."""
    from alembic import command

    from db.engine import alembic_config, engine_for

    ok(nmb("import", str(ROOT / "examples" / "sample-bundle"), home=home, url=url))
    url = url or f"sqlite:///{home / 'study.db'}"
    command.downgrade(alembic_config(url), "0013")
    with engine_for(url).begin() as conn:
        conn.exec_driver_sql("UPDATE response SET source = 'weird' WHERE response_id = "
                             "(SELECT min(response_id) FROM response)")
    engine_for(url).dispose()


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_an_older_backup_the_migrations_refuse_restores_nothing(kind: str, tmp_path: Path,
                                                                request: pytest.FixtureRequest
                                                                ) -> None:
    """One line naming the constraint; on PostgreSQL, where pg_restore has committed the older
    revision before the migrations run, the restored tables are dropped again: an empty
    study, not a half-restored one."""
    from db.engine import engine_for

    url = new_url = None
    if kind == "postgres":
        server = request.getfixturevalue("postgres_server")
        url, new_url = server.create_database(), server.create_database()
    _at_0013_with_a_weird_source(url, tmp_path / "home")
    ok(nmb("backup", "--out", str(tmp_path / "old.tar"), home=tmp_path / "home", url=url))
    refused(nmb("restore", str(tmp_path / "old.tar"), home=tmp_path / "new", url=new_url),
            f"old.tar: the database cannot be migrated to {HEAD_REVISION}",
            "ck_response_source", "nothing was restored")
    nothing_restored(tmp_path / "new")
    if new_url:
        with engine_for(new_url).connect() as conn:
            assert conn.exec_driver_sql("SELECT count(*) FROM pg_tables WHERE schemaname = "
                                        "'public'").scalar() == 0
        engine_for(new_url).dispose()
        ok(nmb("db", "upgrade", home=tmp_path / "new", url=new_url))  # empty: a restore may follow


@pytest.mark.postgres
def test_a_database_password_is_never_shown_or_backed_up(postgres_server,
                                                         tmp_path: Path) -> None:
    password = "s3cret-Pa55word"
    url = postgres_server.create_database().replace("postgres@", f"postgres:{password}@")
    home = tmp_path / "home"
    said = ok(nmb("import", str(ROOT / "examples" / "sample-bundle"), home=home, url=url))
    said += ok(nmb("backup", "--out", str(tmp_path / "b.tar"), home=home, url=url))
    assert password.encode() not in (tmp_path / "b.tar").read_bytes()
    gone = url.rsplit("/", 1)[0] + "/no_such_database"
    err = refused(nmb("backup", "--out", str(tmp_path / "c.tar"), home=home, url=gone))
    err += refused(nmb("restore", str(tmp_path / "b.tar"), home=tmp_path / "new", url=gone))
    assert password not in said + err and "no_such_database" in err


PG_EDITS = {  # made with the one function a dump may hold: what the migrations never create
    "the audit function's body rewritten": (
        "CREATE OR REPLACE FUNCTION auditlog_append_only() RETURNS trigger AS $$ BEGIN "
        "UPDATE \"user\" SET role = 'admin'; RETURN NEW; END $$ LANGUAGE plpgsql",
        "UPDATE"),
    "a trigger of its own": ("CREATE TRIGGER evil BEFORE INSERT ON response FOR EACH ROW "
                             "EXECUTE FUNCTION auditlog_append_only()", "CREATE TRIGGER evil"),
    "the audit trigger on inserts too": (
        "DROP TRIGGER auditlog_append_only ON auditlog; CREATE TRIGGER auditlog_append_only "
        "BEFORE INSERT OR UPDATE OR DELETE ON auditlog FOR EACH ROW EXECUTE FUNCTION "
        "auditlog_append_only()", "BEFORE INSERT"),
    "a default that reads the server's settings": (
        "ALTER TABLE response ALTER COLUMN model SET DEFAULT current_setting('data_directory')",
        "current_setting"),
}


def _backup_edited(postgres_server, tmp_path: Path, sql: str) -> tuple[Path, str]:
    """(a backup of the sample study after `sql` ran on its PostgreSQL database, the URL of an
    empty database to restore it into)."""
    import psycopg

    url, empty = postgres_server.create_database(), postgres_server.create_database()
    ok(nmb("import", str(ROOT / "examples" / "sample-bundle"), home=tmp_path / "home", url=url))
    with psycopg.connect(url.replace("postgresql+psycopg", "postgresql"), autocommit=True) as conn:
        conn.execute(sql)
    ok(nmb("backup", "--out", str(tmp_path / "b.tar"), home=tmp_path / "home", url=url))
    return tmp_path / "b.tar", empty


def _dump_refused(tmp_path: Path, backup: Path, empty: str, *phrases: str) -> None:
    """Restoring `backup` into `empty` is refused (one line holding `phrases`) and restores
    nothing: no file, no table, not the audit log's function."""
    from db.engine import engine_for

    refused(nmb("restore", str(backup), home=tmp_path / "new", url=empty),
            f"{backup.name}: the database dump holds", *phrases, "nothing was restored")
    nothing_restored(tmp_path / "new")
    with engine_for(empty).connect() as conn:
        assert conn.exec_driver_sql("SELECT count(*) FROM pg_tables WHERE schemaname = "
                                    "'public'").scalar() == 0
        assert conn.exec_driver_sql("SELECT count(*) FROM pg_proc WHERE proname = "
                                    "'auditlog_append_only'").scalar() == 0
    engine_for(empty).dispose()


@pytest.mark.postgres
@pytest.mark.parametrize("edit", list(PG_EDITS))
def test_a_postgres_dump_holds_only_the_migrations_trigger_and_function(
        postgres_server, tmp_path: Path, edit: str) -> None:
    """A dump's table of contents names kinds of entry; its definitions (what a trigger, a
    default or the audit log's function does) are compared with the migrations' before any
    is run."""
    sql, named = PG_EDITS[edit]
    backup, empty = _backup_edited(postgres_server, tmp_path, sql)
    _dump_refused(tmp_path, backup, empty, named, "which a study's migrations to")


@pytest.mark.postgres
def test_a_dump_is_checked_before_its_constraints_run(postgres_server, tmp_path: Path) -> None:
    """A CHECK constraint is evaluated on every row as pg_restore copies the data: one calling
    a function that writes a file (COPY TO, under the superuser the test server gives) is
    refused before it runs, nothing restored, no file written."""
    folder = Path(tempfile.mkdtemp())  # the server's user writes here: not under tmp_path
    folder.chmod(0o777)
    marker = folder / "written"
    backup, empty = _backup_edited(  # under the one function name a dump's contents may hold
        postgres_server, tmp_path,
        "DROP TRIGGER auditlog_append_only ON auditlog; DROP FUNCTION auditlog_append_only(); "
        "CREATE FUNCTION auditlog_append_only() RETURNS boolean AS $$ BEGIN "
        f"COPY (SELECT 1) TO '{marker}'; RETURN true; END $$ LANGUAGE plpgsql; "
        "ALTER TABLE task ADD CONSTRAINT evil CHECK (auditlog_append_only())")
    assert marker.exists()  # the constraint ran on the source's rows: it would run on restore
    marker.unlink()
    _dump_refused(tmp_path, backup, empty)
    assert not marker.exists()
    shutil.rmtree(folder)


@pytest.mark.postgres
def test_the_functions_and_triggers_a_restore_allows_are_the_migrations(postgres_server) -> None:
    from db.backup import postgres
    from db.engine import engine_for, upgrade

    url = postgres_server.create_database()
    upgrade(url)
    with engine_for(url).connect() as conn:
        assert postgres.functions_and_triggers(conn) == (postgres.FUNCTIONS, postgres.TRIGGERS)
    assert postgres.restored_problem(url) is None
    engine_for(url).dispose()


def test_a_manifest_larger_than_its_members_need_is_not_parsed(small: Path,
                                                               tmp_path: Path) -> None:
    """JSON of empty objects, `[{},{},...]`, takes about 20 times its size in memory: the
    manifest of 4 members may not be megabytes (under the gzip it is a few kilobytes)."""
    from db.backup import archive
    from errors import UserError

    with tarfile.open(small) as tf:
        entries = [(m, tf.extractfile(m).read()) for m in tf.getmembers()
                   if m.name != "manifest.json"]
    bomb = b"[" + b"{}," * (1 << 20) + b"{}]"
    bad = _tar_with(tmp_path / "objects.tar.gz", [*entries, (_entry("manifest.json"), bomb)],
                    "w:gz")
    with pytest.raises(UserError, match=rf"objects.tar.gz: manifest.json is {len(bomb):,} bytes, "
                                        r"more than [\d,]+ \(for 4 members\)"):
        archive.read_backup(bad, tmp_path / "out")


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_a_manifest_whose_counts_lie_is_refused(kind: str, small: Path, tmp_path: Path,
                                                request: pytest.FixtureRequest) -> None:
    """The restore's line says what the restored database holds, and a manifest that says
    otherwise is refused (a count this code does not know is not printed)."""
    source = url = new_url = None
    if kind == "postgres":
        server = request.getfixturevalue("postgres_server")
        url, new_url = server.create_database(), server.create_database()
        ok(nmb("import", str(ROOT / "examples" / "sample-bundle"), home=tmp_path / "src",
               url=url))
        source = tmp_path / "pg.tar"
        ok(nmb("backup", "--out", str(source), home=tmp_path / "src", url=url))

    def lie(manifest: dict) -> None:
        manifest["counts"]["cases"] = 99

    def unknown(manifest: dict) -> None:
        manifest["counts"]["hacked_accounts"] = 7

    refused(nmb("restore", str(repack(source or small, tmp_path / "lie.tar", edit=lie)),
                home=tmp_path / "a", url=new_url),
            "lie.tar: the database holds 2 cases, manifest.json says 99", "nothing was restored")
    nothing_restored(tmp_path / "a")
    said = ok(nmb("restore", str(repack(source or small, tmp_path / "more.tar", edit=unknown)),
                  home=tmp_path / "b", url=new_url))
    assert "2 cases, 3 series" in said and "hacked" not in said
