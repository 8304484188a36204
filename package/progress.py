"""The progress file of `nmb package grade`: each grade kept as it comes back, so that a run
that stops (Ctrl-C, a crash, a lost connection, failed requests) loses no grade already paid
for, and the same command run again sends only the responses still without one.

`SCORES.progress.jsonl` beside `--out SCORES.jsonl`: a first line naming the package's sha256,
then a line per graded response: its id, `answer` (what was graded: `package.format.Answer.key`,
so an edited response is graded again), the grader's answer as it came back and what the server
said of it (model name, fingerprint, cost). The
file is read back as untrusted input (size capped, every line checked: `package.freeze`, `package.verify`
checks each grader's answer again, as a live one is, before reusing it) and locked while a run writes it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from errors import UserError, one_line

SUFFIX = ".progress.jsonl"
HEADER = "nmb package grade progress"
MAX_BYTES = 1 << 30  # far above a run's rows (well under 2 kB each, 256 MiB of responses at most)


def progress_path(out: Path) -> Path:
    """Where a run writing `out` keeps its progress: `scores.jsonl` -> `scores.progress.jsonl`."""
    return out.with_suffix(SUFFIX)


class Progress:
    """An open progress file: `kept` holds the lines read back, by response id; `keep` appends
    one. Open with `opened`."""

    def __init__(self, path: Path, fd: int, kept: dict[str, dict[str, Any]]) -> None:
        self.path, self._fd, self.kept, self.written = path, fd, kept, 0

    def keep(self, response_id: str, answer: str, fields: dict[str, Any]) -> None:
        """Append a graded response's line, written to the file before the next one comes."""
        line = {"response_id": response_id, "answer": answer, **fields}
        os.write(self._fd, (json.dumps(line, separators=(",", ":")) + "\n").encode())
        self.written += 1


def _read(path: Path, fd: int, package_sha256: str) -> dict[str, dict[str, Any]]:
    """The rows a progress file holds. A last line cut short by a crash is dropped, and cut off
    the file (once its first line has shown the file is one) so that the next row starts on a
    line of its own."""
    size = os.fstat(fd).st_size
    if size > MAX_BYTES:
        raise UserError(f"{path}: larger than {MAX_BYTES} bytes; remove it to grade everything "
                        "again")
    if size == 0:
        os.write(fd, (json.dumps({"format": HEADER, "package_sha256": package_sha256})
                      + "\n").encode())
        return {}
    with open(fd, "rb", closefd=False) as f:
        data = f.read(size)
    complete = data.rfind(b"\n") + 1
    lines = data[:complete].decode("utf-8", errors="replace").splitlines() or [""]
    refuse = "remove it to grade everything again"
    try:
        header = json.loads(lines[0])
    except (ValueError, RecursionError):
        header = None
    if not (isinstance(header, dict) and header.get("format") == HEADER):
        raise UserError(f"{path} line 1: not the progress of nmb package grade; {refuse}")
    if header.get("package_sha256") != package_sha256:
        theirs = one_line(repr(header.get("package_sha256")), 80)
        raise UserError(f"{path}: the progress of grading with another package (sha256 "
                        f"{theirs}, this one {package_sha256}); {refuse}, or give another --out")
    from llm.http_client import MAX_JSON_VALUES, json_values  # lazy: no HTTP client before

    kept: dict[str, dict[str, Any]] = {}
    for n, line in enumerate(lines[1:], 2):
        try:
            item = json.loads(line) if json_values(line.encode()) <= MAX_JSON_VALUES else None
        except (ValueError, RecursionError):
            item = None
        if not (isinstance(item, dict) and isinstance(item.get("response_id"), str)
                and isinstance(item.get("answer"), str)):
            raise UserError(f"{path} line {n}: not a graded response's line; {refuse}")
        kept[item["response_id"]] = item
    os.ftruncate(fd, complete)
    return kept


@contextlib.contextmanager
def opened(path: Path, package_sha256: str) -> Iterator[Progress]:
    """The progress file at `path`, created if absent (never through a link), locked against a
    second run writing it; UserError if it belongs to another package or is not one."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o666)
    except OSError as e:
        raise UserError(f"cannot write {path}: {e.strerror}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UserError(f"cannot write {path}: it is not a regular file; remove it or give "
                            "another --out")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise UserError(f"{path}: another nmb package grade is writing it") from None
        progress = Progress(path, fd, _read(path, fd, package_sha256))
        try:
            yield progress
        finally:  # a run that graded nothing (refused, no key, stopped at once) leaves no file
            if not (progress.kept or progress.written) and _same_file(path, fd):
                path.unlink()
    finally:
        os.close(fd)


def _same_file(path: Path, fd: int) -> bool:
    """Whether `path` still names the file open as `fd` (not one put there since)."""
    try:
        there, ours = os.lstat(path), os.fstat(fd)
    except OSError:
        return False
    return (there.st_dev, there.st_ino) == (ours.st_dev, ours.st_ino)
