"""What every command group shares: the parser class, the study session, argument types,
progress, SIGTERM as Ctrl-C, output helpers."""

import argparse
import contextlib
import json
import math
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from errors import UserError, one_line


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2 (argparse prints usage too)
        command = self.prog.removeprefix("nmb").strip()  # main() puts "nmb: " before it
        raise UserError(f"{command}: {message}" if command else message)


def open_study(*, reading: bool = False):
    """A session on the current study, created or migrated (and swept) first; `reading`: for
    commands that only read, whose reads then all see one state (`db.engine.snapshot`)."""
    from db.bundle.store import prepare_study
    from db.engine import session, snapshot

    prepare_study()
    return snapshot() if reading else session()


@contextlib.contextmanager
def progress_bar(desc: str) -> Iterator[Any]:
    """A tqdm bar on a terminal; None otherwise (tqdm is not even imported then)."""
    if not sys.stderr.isatty():
        yield None
        return
    from tqdm import tqdm

    with tqdm(desc=desc, unit="item", file=sys.stderr) as bar:
        yield bar


class Terminated(KeyboardInterrupt):
    """Stopped by SIGTERM, handled as Ctrl-C."""


@contextlib.contextmanager
def sigterm_as_ctrl_c() -> Iterator[None]:
    """While open, SIGTERM does what Ctrl-C does (a KeyboardInterrupt, or under `asyncio.run`
    the cancellation of its task), so a terminated run ends itself as interrupted with what it
    finished committed; the command then ends as `Terminated`. Only the main thread can set a
    handler: elsewhere a no-op."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []

    def as_ctrl_c(signum: int, frame: Any) -> None:
        received.append(signum)
        handler = signal.getsignal(signal.SIGINT)
        if not callable(handler):  # SIGINT ignored: a SIGTERM still stops the command
            raise KeyboardInterrupt
        handler(signal.SIGINT, frame)

    previous = signal.signal(signal.SIGTERM, as_ctrl_c)
    try:
        yield
    except KeyboardInterrupt:
        if received:
            raise Terminated from None
        raise
    finally:
        signal.signal(signal.SIGTERM, previous)


def file_out(text: str) -> Path:
    """The path of --out where it names a file: refused when it ends in a slash (a folder the
    user means, which would otherwise become a file of the folder's name)."""
    if text.endswith("/"):
        raise UserError(f"--out {text!r} names a folder (it ends in /): give a file name")
    return Path(text)


def warn_plain_http(base_url: str | None) -> None:
    from llm.grader_request import plain_http_warning

    if warning := plain_http_warning(base_url, os.environ.get("OPENAI_API_KEY")):
        print(f"nmb: warning: {warning}", file=sys.stderr)


def print_json(data: object) -> None:
    print(json.dumps(data, indent=None, default=str))


def positive(kind: type[int] | type[float], most: float) -> Callable[[str], int | float]:
    """An argparse type: a finite `kind` in (0, most]."""
    def parse(text: str) -> int | float:
        try:
            value = kind(text)
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and 0 < value <= most):
            what = "integer" if kind is int else "number"
            limit = "" if math.isinf(most) else f" at most {most:g}"
            raise argparse.ArgumentTypeError(f"expected a positive {what}{limit}, got {text!r}")
        return value

    return parse


LARGEST_ID = 2**31 - 1  # of a PostgreSQL integer column (ids, and the seeds stored with a draw)


def whole(least: int, what: str) -> Callable[[str], int]:
    """An argparse type: an integer from `least` to LARGEST_ID (`what`: "an id", "a seed")."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = least - 1
        if not least <= value <= LARGEST_ID:
            raise argparse.ArgumentTypeError(f"expected {what} from {least} to {LARGEST_ID}, "
                                             f"got {one_line(text, 40)!r}")
        return value

    return parse


ID, SEED = whole(1, "an id"), whole(0, "a seed")


JSON = "print JSON instead of text"


def adder(sub: argparse._SubParsersAction) -> Callable[..., argparse.ArgumentParser]:
    """`add(name, fn, help)`: a subcommand of `sub` running `fn`, its help also its description."""
    def add(name: str, fn: Callable[[argparse.Namespace], None], help: str) -> argparse.ArgumentParser:
        sp = sub.add_parser(name, help=help, description=help)
        sp.set_defaults(fn=fn)
        return sp

    return add


def bertscorer(args: argparse.Namespace):
    if not args.bertscore_model:
        return None
    from results.bertscore import BertScorer

    return BertScorer(args.bertscore_model)
