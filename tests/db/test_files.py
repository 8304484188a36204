"""A file a user named is written under a new name beside it (`db.files.new_partial`)."""

import os
import stat
from pathlib import Path

import pytest

from db import files
from db.files import new_partial, write_file
from errors import UserError


def test_each_partial_is_a_new_file_of_its_own(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "grader.zip"
    names = iter(["aaaaaaaaaaaa", "aaaaaaaaaaaa", "bbbbbbbbbbbb"])
    monkeypatch.setattr(files.secrets, "token_hex", lambda _: next(names))
    first = new_partial(out)
    second = new_partial(out)  # the first name is taken: another is drawn, never shared
    assert (first.name, second.name) == (".grader.zip.aaaaaaaaaaaa.partial",
                                         ".grader.zip.bbbbbbbbbbbb.partial")
    assert first.stat().st_size == second.stat().st_size == 0 and not out.exists()


def test_a_partial_is_never_a_planted_link_and_takes_the_umask(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch
                                                               ) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious")
    planted = tmp_path / ".b.tar.cccccccccccc.partial"
    planted.symlink_to(victim)
    names = iter(["cccccccccccc", "dddddddddddd", "eeeeeeeeeeee"])
    monkeypatch.setattr(files.secrets, "token_hex", lambda _: next(names))
    old = os.umask(0o027)
    try:
        partial = new_partial(tmp_path / "b.tar")
        private = new_partial(tmp_path / "c.tar", 0o600)
    finally:
        os.umask(old)
    assert partial.name == ".b.tar.dddddddddddd.partial" and not partial.is_symlink()
    assert victim.read_text() == "precious"
    assert stat.S_IMODE(partial.stat().st_mode) == 0o640
    assert stat.S_IMODE(private.stat().st_mode) == 0o600


def test_a_link_device_or_pipe_at_the_name_is_refused_and_left(tmp_path: Path) -> None:
    """Renamed over, a link planted at the name (or /dev/stdout), a device or a named pipe would
    be replaced, for every user of the machine when run as root; written to, a link would
    write through to its target."""
    victim = tmp_path / "victim"
    victim.write_text("precious")
    (tmp_path / "report.json").symlink_to(victim)
    os.mkfifo(tmp_path / "pipe")
    for name in ("report.json", "pipe"):
        with pytest.raises(UserError, match=f"cannot write .*{name}: it is not a regular file"):
            write_file(tmp_path / name, "{}")
    assert victim.read_text() == "precious" and (tmp_path / "report.json").is_symlink()
    assert stat.S_ISFIFO(os.lstat(tmp_path / "pipe").st_mode)
    assert write_file(tmp_path / "victim", "{}").read_text() == "{}"  # a file: replaced whole
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe", "report.json", "victim"]
