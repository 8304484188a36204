"""`nmb package grade` keeps each grade as it comes back: a run stopped, or with failed
requests, loses nothing paid for, and the same command sends only what is left."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from errors import UserError
from package.progress import HEADER, opened, progress_path
from tests.openai_server import OpenAIServer
from tests.package.conftest import KEY

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def server():
    with OpenAIServer() as srv:
        yield srv


def _responses(path: Path, n: int = 6, edit: dict[int, str] | None = None) -> Path:
    edit = edit or {}
    path.write_text("".join(
        json.dumps({"response_id": f"n{i}", "task_id": f"task{i % 6}",
                    "text": edit.get(i, f"Answer {i}: multiple sclerosis."), "model": "m-new"})
        + "\n" for i in range(n)))
    return path


def _grade(package: Path, responses: Path, out: Path, server: OpenAIServer,
           **popen) -> subprocess.CompletedProcess | subprocess.Popen:
    args = [sys.executable, "-m", "cli", "package", "grade", str(package), str(responses),
            "--out", str(out), "--base-url", server.base_url, "--concurrency", "1"]
    env = {**os.environ, "OPENAI_API_KEY": KEY}
    if popen:
        return subprocess.Popen(args, cwd=ROOT, env=env, text=True, **popen)
    return subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def _graded_but_the_last(package: Path, server: OpenAIServer, tmp_path: Path,
                         n: int) -> tuple[Path, Path, Path]:
    """`n` responses graded but the last (refused by the server): (responses, out, progress)."""
    responses, out = _responses(tmp_path / "new.jsonl", n=n), tmp_path / "scores.jsonl"
    server.inject_when(f"Answer {n - 1}:", "400")
    assert _grade(package, responses, out, server).returncode == 0
    server.clear_faults()
    return responses, out, progress_path(out)


@pytest.mark.slow
def test_failed_responses_are_sent_again_and_only_they(frozen_package, server: OpenAIServer,
                                                       tmp_path: Path) -> None:
    package, _ = frozen_package
    responses, out = _responses(tmp_path / "new.jsonl"), tmp_path / "scores.jsonl"
    server.inject_when("Answer 2:", "400")  # refused, not retried: the row says why
    server.inject_when("Answer 4:", "400")
    first = _grade(package, responses, out, server)
    assert first.returncode == 0, first.stderr
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["ok"] for r in rows] == [True, True, False, True, False, True]
    assert "2 responses failed" in first.stderr and "the same command sends them again" in first.stderr
    kept = progress_path(out).read_text().splitlines()
    assert json.loads(kept[0]) == {"format": HEADER, "package_sha256": json.loads(
        (tmp_path / "scores.summary.json").read_text())["package_sha256"]}
    assert len(kept) == 1 + 4
    server.clear_faults()
    before = len(server.chat_requests())
    second = _grade(package, responses, out, server)
    assert second.returncode == 0, second.stderr
    again = [json.dumps(r.body) for r in server.chat_requests()[before:]]
    assert len(again) == 2  # only the two that failed
    assert "Answer 2:" in again[0] and "Answer 4:" in again[1]
    assert (f"4 of 6 responses already graded; 2 requests to gpt-4o-2024-08-06 at "
            f"{server.base_url}, each grade kept in {progress_path(out)}") in second.stderr
    final = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["response_id"] for r in final] == [f"n{i}" for i in range(6)]  # input order
    assert all(r["ok"] for r in final)
    assert final[0] == rows[0]  # a kept row is written as it was graded
    assert not progress_path(out).exists()  # all graded: nothing left to resume
    assert json.loads((tmp_path / "scores.summary.json").read_text())["graded"] == 6


@pytest.mark.slow
def test_a_stopped_run_keeps_its_grades(frozen_package, server: OpenAIServer, tmp_path: Path) -> None:
    """SIGTERM (as Ctrl-C) mid-run: the grades already back are kept, and the next run sends
    only the others, including the one that was in flight."""
    package, _ = frozen_package
    responses, out = _responses(tmp_path / "new.jsonl"), tmp_path / "scores.jsonl"
    server.inject_when("Answer 3:", "slow:30", times=1)
    run = _grade(package, responses, out, server, stderr=subprocess.PIPE,
                 stdout=subprocess.DEVNULL)
    progress = progress_path(out)
    deadline = time.monotonic() + 60
    while not (progress.exists() and len(progress.read_text().splitlines()) == 1 + 3):
        assert time.monotonic() < deadline and run.poll() is None
        time.sleep(0.1)
    time.sleep(0.5)  # the fourth request is out, held by the server
    run.send_signal(signal.SIGTERM)
    _, err = run.communicate(timeout=60)
    assert run.returncode != 0 and not out.exists()
    assert f"the responses graded so far are kept in {progress}" in err
    assert "Traceback" not in err
    before = len(server.chat_requests())
    second = _grade(package, responses, out, server)
    assert second.returncode == 0, second.stderr
    assert "3 of 6 responses already graded" in second.stderr
    assert len(server.chat_requests()) - before == 3
    assert [json.loads(x)["ok"] for x in out.read_text().splitlines()] == [True] * 6


@pytest.mark.slow
def test_an_edited_response_is_graded_again(frozen_package, server: OpenAIServer,
                                            tmp_path: Path) -> None:
    package, _ = frozen_package
    responses, out = _responses(tmp_path / "new.jsonl"), tmp_path / "scores.jsonl"
    server.inject_when("Answer 5:", "400")
    assert _grade(package, responses, out, server).returncode == 0
    server.clear_faults()
    _responses(responses, edit={1: "Edited: glioma."})  # n1 was graded; its text changed
    before = len(server.chat_requests())
    assert _grade(package, responses, out, server).returncode == 0
    sent = [json.dumps(r.body) for r in server.chat_requests()[before:]]
    assert len(sent) == 2 and any("Edited: glioma." in b for b in sent)
    assert any("Answer 5:" in b for b in sent)


def _edited(line: str, **fields) -> str:
    return json.dumps({**json.loads(line), **fields})


def _grade_edited(line: str, **fields) -> str:
    return _edited(line, grade=json.dumps({**json.loads(json.loads(line)["grade"]), **fields}))


@pytest.mark.slow
@pytest.mark.parametrize(("change", "refusal"), [
    (lambda lines, other: [lines[0].replace("a", "b", 1)] + lines[1:],
     "line 1: not the progress of nmb package grade"),
    (lambda lines, other: [_edited(lines[0], package_sha256=other)] + lines[1:],
     "the progress of grading with another package"),
    (lambda lines, other: lines + ['{"answer": 3}'], "line 3: not a graded response's line"),
    (lambda lines, other: [lines[0], _grade_edited(lines[1], correct_diagnosis=7)],
     "response 'n0': correct_diagnosis"),
    (lambda lines, other: [lines[0], _grade_edited(lines[1], overall=1.0)],
     "response 'n0': unexpected field(s): overall"),
    (lambda lines, other: [lines[0], _edited(lines[1], grade={"criteria": {}})],
     "response 'n0': not a grader's answer as it came back"),
    (lambda lines, other: [lines[0], _edited(lines[1], cost_usd="free")],
     "response 'n0': not a grader's answer as it came back"),
])
def test_a_damaged_progress_file_is_one_line_and_sends_nothing(frozen_package, server: OpenAIServer,
                                                               tmp_path: Path, change,
                                                               refusal: str) -> None:
    package, _ = frozen_package
    responses, out, progress = _graded_but_the_last(package, server, tmp_path, 2)
    lines = progress.read_text().splitlines()
    assert len(lines) == 2
    progress.write_text("\n".join(change(lines, "0" * 64)) + "\n")
    before = len(server.chat_requests())
    got = _grade(package, responses, out, server)
    verified, refused = got.stderr.splitlines()  # the package's digest, then one line
    assert got.returncode == 2 and verified.startswith("nmb: verified"), got.stderr
    assert refusal in refused and str(progress) in refused
    assert len(server.chat_requests()) == before


@pytest.mark.slow
def test_a_row_cut_short_is_dropped_and_graded_again(frozen_package, server: OpenAIServer,
                                                     tmp_path: Path) -> None:
    package, _ = frozen_package
    responses, out, progress = _graded_but_the_last(package, server, tmp_path, 3)
    text = progress.read_text()
    progress.write_text(text[: text.rindex("\n", 0, len(text) - 1) + 20])  # n1's line, cut
    server.clear_faults()
    before = len(server.chat_requests())
    got = _grade(package, responses, out, server)
    assert got.returncode == 0, got.stderr
    assert "1 of 3 responses already graded" in got.stderr
    assert len(server.chat_requests()) - before == 2


def test_a_file_that_is_not_a_progress_file_is_never_changed(tmp_path: Path) -> None:
    """The responses themselves at the progress file's name (`--out new.jsonl` beside
    `new.progress.jsonl`): refused, not cut to its last line nor appended to."""
    responses = tmp_path / "new.progress.jsonl"
    responses.write_text('{"response_id": "n0", "task_id": "task0", "text": "MS"}')
    before = responses.read_bytes()
    with pytest.raises(UserError, match="line 1: not the progress of nmb package grade"):
        with opened(progress_path(tmp_path / "new.jsonl"), "0" * 64):
            pass
    assert responses.read_bytes() == before
    link = tmp_path / "link.progress.jsonl"
    link.symlink_to(responses)
    with pytest.raises(UserError, match="cannot write"):
        with opened(link, "0" * 64):
            pass
    assert responses.read_bytes() == before


def test_two_runs_cannot_write_one_progress_file(tmp_path: Path) -> None:
    path = tmp_path / "s.progress.jsonl"
    with opened(path, "0" * 64) as first:
        with pytest.raises(UserError, match="another nmb package grade is writing it"):
            with opened(path, "0" * 64):
                pass
        first.keep("n0", "k", {"grade": "{}"})
    with opened(path, "0" * 64) as again:
        assert again.kept == {"n0": {"response_id": "n0", "answer": "k", "grade": "{}"}}


def test_a_run_that_graded_nothing_leaves_no_progress_file(frozen_package, tmp_path: Path,
                                                           monkeypatch) -> None:
    """Refused before any request (no API key for the official API): nothing to resume, so no
    file is left beside --out (before: a header-only progress file)."""
    from cli import main

    package, _ = frozen_package
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    out = tmp_path / "scores.jsonl"
    assert main(["package", "grade", str(package), str(_responses(tmp_path / "new.jsonl")),
                 "--out", str(out)]) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new.jsonl"]

