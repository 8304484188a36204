"""The sender process: `nmb grade` sends its requests from a child process started first.

Why: importing the `openai` SDK and importing the database layer (SQLAlchemy, SQLModel, the
tables) each take about 0.6 s of CPU here, and in one process they add up. `nmb grade` starts
the sender before anything heavy: the child imports the SDK on the second core while the parent
opens the study and prepares the requests, then the parent hands over a `SendJob` and stores the
results as they arrive (`docs/grader.md`; measured in `make bench`). The calls are
`calibration.grader_calls.send`, the same as in-process.

The child is `python -P -m calibration.sender FD`, a plain subprocess (no `multiprocessing`
start-up: no resource tracker, no re-import of the parent's `__main__`). Protocol, pickled
messages over a socket pair (`multiprocessing.connection.Connection`): parent to child, one
`SendJob`; child to parent, one `(response_id, CallResult)` per item as it ends, or
`(None, traceback)`. The child is started with SIGINT ignored, so Ctrl-C is the parent's
alone; the parent ends the child when it is done or stopped, and a parent that dies closes the
socket, which the child watches: it cancels what is out and exits.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from calibration.grader_calls import GradeItem, SendJob
    from calibration.llm import CallResult


def _serve(conn: Connection) -> None:
    """The child: import the SDK, wait for the job, send it, report each result."""
    import asyncio
    import gc
    import traceback

    gc.disable()  # as in `cli.main`: the imports make long-lived objects, not garbage
    import openai  # noqa: F401 - the import this process exists to do early

    from calibration.grader_calls import send

    gc.freeze()
    gc.enable()
    try:
        job = conn.recv()
    except EOFError:  # the parent ended (or had nothing to send)
        return

    async def send_reporting() -> None:
        asyncio.get_running_loop().add_reader(conn.fileno(), asyncio.current_task().cancel)
        await send(job, on_done=lambda item, result: conn.send((item.response_id, result)))

    try:
        asyncio.run(send_reporting())
    except (asyncio.CancelledError, BrokenPipeError, ConnectionResetError):
        return  # the parent is gone
    except Exception:  # noqa: BLE001 - a programming error: the parent raises it
        conn.send((None, traceback.format_exc()))


class Sender:
    """A started sender process, importing the SDK while the caller prepares its one job.
    Use as a context manager; start it from the main thread."""

    def __init__(self) -> None:
        mine, theirs = socket.socketpair()
        # The child runs this very code (its job is pickled with these classes), whatever the
        # working directory: `-P` keeps the directory off sys.path, PYTHONPATH names ours.
        paths = [str(Path(__file__).resolve().parents[1]), os.environ.get("PYTHONPATH")]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # the child inherits "ignore"
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-P", "-m", "calibration.sender", str(theirs.fileno())],
                pass_fds=[theirs.fileno()], env=env, stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL)
        finally:
            signal.signal(signal.SIGINT, previous)
            theirs.close()
        self._conn = Connection(mine.detach())
        self._sent = False

    @property
    def pid(self) -> int:
        return self._proc.pid

    def __enter__(self) -> Sender:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def run(self, job: SendJob, on_done: Callable[[GradeItem, CallResult], Any],
            on_idle: Callable[[], Any], idle_every: float) -> None:
        """Send `job` from the child; `on_done(item, result)` as each item ends, `on_idle()`
        after every `idle_every` seconds without one; returns when every item has ended.
        On Ctrl-C, results already in the socket are reported before the interrupt goes on."""
        if self._sent:
            raise RuntimeError("a sender process sends one job; start another")
        self._sent = True
        items = {w.response_id: w for w in job.items}
        try:
            self._conn.send(job)
        except (BrokenPipeError, ConnectionResetError):
            raise self._ended() from None
        try:
            while items:
                if self._conn.poll(idle_every):
                    self._report(items, on_done)
                else:
                    on_idle()
        except KeyboardInterrupt:
            while items and self._conn.poll(0):
                self._report(items, on_done)
            raise

    def _report(self, items: dict[str, GradeItem], on_done: Callable) -> None:
        try:
            message = self._conn.recv()
        except (EOFError, ConnectionResetError):  # reset: it died with data unread
            raise self._ended() from None
        response_id, result = message
        if response_id is None:  # `result` is the child's traceback
            raise RuntimeError(f"the sender process failed:\n{result}")
        on_done(items.pop(response_id), result)

    def _ended(self) -> RuntimeError:
        try:
            code = self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = None
        return RuntimeError(f"the sender process ended early (exit code {code})")

    def close(self) -> None:
        """End the child: its results are in (or no longer wanted), and what is still out
        would only be cancelled."""
        self._conn.close()
        self._proc.terminate()
        self._proc.wait()


if __name__ == "__main__":
    _serve(Connection(int(sys.argv[1])))
