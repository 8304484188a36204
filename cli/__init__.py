"""The `nmb` command: parse, call a package, print. One module per command group, each
registering its subcommands beside their handlers.

A user mistake (`errors.UserError`, a bad argument) is one line on stderr and exit code 2;
programming errors keep their traceback.
"""

import argparse
import errno
import os
import select
import signal
import sqlite3
import sys

from sqlalchemy.exc import DatabaseError, OperationalError

from cli import (
    calibration,
    imports,
    models,
    package,
    people,
    results,
    retire,
    runs,
    study,
    versions,
)
from cli.common import Parser, Terminated
from errors import UserError, not_permitted, one_line

GROUPS = (study, people, imports, runs, calibration, package, results, retire, models, versions)


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="nmb", description="Neural-MedBench Studio: the study from the command line.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=Parser)
    for group in GROUPS:
        group.register(sub)
    return p


def _shown_url() -> str:
    """The study database's URL as it may be shown: without its password."""
    from sqlalchemy.engine import make_url

    from db.engine import database_url

    return make_url(database_url()).render_as_string(hide_password=True)


def _shortened(text: str, most: int = 495) -> str:
    """`text`, or when longer than `most` its start and its end around " ... ": a refusal quoting
    a 10,000-character value keeps what is refused and what to do, not screens of the value."""
    return text if len(text) <= most else f"{text[:300]} ... {text[-(most - 305):]}"


def _reader_gone() -> bool:
    """Whether standard output is a pipe whose reading end is closed (poll reports an error)."""
    poll = select.poll()
    poll.register(sys.stdout.fileno(), select.POLLOUT)
    return any(events & select.POLLERR for _, events in poll.poll(0))


def main(argv: list[str] | None = None) -> int:
    reconfigure = getattr(sys.stdout, "reconfigure", None)
    if reconfigure:  # a summary naming 脑肿瘤 under an ASCII locale: escaped, not a traceback
        reconfigure(errors="backslashreplace")
    try:
        args = build_parser().parse_args(argv)
        args.fn(args)
        sys.stdout.flush()  # a closed pipe shows here, not at the interpreter's exit
    except BrokenPipeError:  # `nmb results | head`: the reader has what it wanted
        if not _reader_gone():
            raise
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # the exit's flush
        return 128 + signal.SIGPIPE
    except UserError as e:
        print(f"nmb: {_shortened(str(e))}", file=sys.stderr)
        return 2
    except (OperationalError, DatabaseError) as e:
        # the database does not answer (down, wrong address, locked), or the SQLite file is no
        # database (sqlite3.DatabaseError itself: "file is not a database", "malformed");
        # other database errors (integrity, programming) are not the user's: their traceback
        if not isinstance(e, OperationalError) and type(e.orig) is not sqlite3.DatabaseError:
            raise
        print(f"nmb: the database {_shown_url()} failed: {one_line(str(e.orig or e), 300)}",
              file=sys.stderr)
        return 2
    except PermissionError as e:  # a file or folder this account may not read or write
        if (refusal := not_permitted(e)) is None:
            raise
        print(f"nmb: {refusal}", file=sys.stderr)
        return 2
    except OSError as e:  # a name no file can have, given on the command line
        if e.errno != errno.ENAMETOOLONG:
            raise
        print(f"nmb: a file name is too long: {one_line(repr(e.filename), 60)}", file=sys.stderr)
        return 2
    except Terminated:
        print("nmb: terminated", file=sys.stderr)
        return 128 + signal.SIGTERM
    except KeyboardInterrupt:
        print("nmb: interrupted", file=sys.stderr)
        return 130
    return 0
