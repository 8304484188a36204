"""How runs end, checked alike for grader runs (tests/grading/test_grader.py) and collection
runs (tests/collection/test_collect.py): only abandoned runs are marked "interrupted", and a
real `python -m cli ...` is signalled in the middle of its run."""

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlmodel import Session, select

from db.audit import record
from db.engine import engine_for
from llm.run_writer import AUDIT, Run, mark_abandoned, owner, process_start


@contextmanager
def ctrl_c_reaches_children() -> Iterator[None]:
    """Commands started inside see SIGINT as a terminal's foreground job does, however pytest
    was started: a process that ignores SIGINT (a background job of a shell without job
    control, `cmd &` in a script) passes the ignoring on through exec, so a `python -m cli`
    it starts would never see the Ctrl-C under test. A handler, unlike SIG_IGN, is reset to
    the default by exec, so one is set here for the time being."""
    kept = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, kept)


def check_only_abandoned_runs_are_marked(database_url: str,
                                         new_run: Callable[[Session], Run]) -> None:
    """Six runs of `new_run`'s kind, one per owner (this process, an ended one, a live one, a
    live one reusing the ended pid, another host's, none): the ended and the reused are marked."""
    ended = subprocess.Popen(["true"])
    ended.wait()
    alive = subprocess.Popen(["sleep", "60"])
    here = owner()
    owners = {"this process": here,
              "ended": {**here, "pid": ended.pid},
              "alive": {**here, "pid": alive.pid, "pid_start": process_start(alive.pid)},
              "pid reused": {**here, "pid": alive.pid},
              "other host": {**here, "host": "elsewhere", "pid": ended.pid},
              "no owner": {}}
    try:
        with Session(engine_for(database_url)) as s:
            runs = {}
            for name, who in owners.items():
                run = new_run(s)
                s.add(run)
                s.flush()
                record(s, AUDIT[type(run)], actor=None, run=run.id, **who)
                runs[name] = run.id
            s.commit()
            table = type(run)
            assert sorted(mark_abandoned(s, table)) == sorted([runs["ended"], runs["pid reused"]])
            s.commit()
            assert mark_abandoned(s, table) == []
            status = dict(s.exec(select(table.id, table.status)).all())
    finally:
        alive.kill()
        alive.wait()
    assert {name: status[i] for name, i in runs.items()} == {
        "this process": "running", "ended": "interrupted", "alive": "running",
        "pid reused": "interrupted", "other host": "running", "no owner": "running"}


def add_abandoned(s: Session, run: Run) -> int:
    """Store `run` as "running", owned by a process of this host that has ended (committed);
    its id."""
    ended = subprocess.Popen(["true"])
    ended.wait()
    s.add(run)
    s.flush()
    record(s, AUDIT[type(run)], actor=None, run=run.id, **{**owner(), "pid": ended.pid})
    s.commit()
    return run.id


ROOT = Path(__file__).resolve().parents[2]


def signal_mid_run(args: list[str], stored: Callable[[], int], n: int, sig: int, *,
                   env: dict[str, str] | None = None) -> tuple[int, str]:
    """Run `python -m cli *args`, send it `sig` once `stored()` reaches `n` while it is still
    running, and wait for its end (bounded: the slow answers it waits for come much later);
    (return code, stderr)."""
    proc = subprocess.Popen([sys.executable, "-m", "cli", *args], cwd=ROOT,
                            env={**os.environ, **(env or {})}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while stored() < n and time.monotonic() < deadline:
            time.sleep(0.05)
        assert stored() == n and proc.poll() is None  # the slow requests are still out
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=20)
    finally:
        proc.kill()
        proc.wait()
    return proc.returncode, err
