"""The server logs to stdout, where a container runtime or a process manager collects it: one
line per record with time, level and source. `NMB_LOG_LEVEL` (DEBUG, INFO, WARNING, ERROR;
default INFO) sets the level. Streamlit's and uvicorn's own handlers, which write to stderr,
are turned to stdout too, and so is whatever is written to stderr later (tracebacks).
No Streamlit import here."""

import logging
import os
import sys

from errors import UserError

LOG_LEVEL = "NMB_LOG_LEVEL"
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
QUIET = ("httpx", "httpcore")  # a line per HTTP request to a model: only their warnings


def log_level() -> str:
    """The level `NMB_LOG_LEVEL` names (INFO when unset); UserError naming the value if it is
    not one of LEVELS."""
    value = os.environ.get(LOG_LEVEL, "").strip().upper() or "INFO"
    if value not in LEVELS:
        raise UserError(f"{LOG_LEVEL}: {value[:20]!r} is not one of {', '.join(LEVELS)}")
    return value


def log_to_stdout(level: str) -> None:
    """Send every log record and everything written to stderr from now on to stdout."""
    loggers = [logging.getLogger(), *(logger for logger in logging.Logger.manager.loggerDict.values()
                                      if isinstance(logger, logging.Logger))]
    for logger in loggers:
        for handler in logger.handlers:
            if (isinstance(handler, logging.StreamHandler)
                    and handler.stream in (sys.stderr, sys.__stderr__)):
                handler.setStream(sys.stdout)
    sys.stderr = sys.stdout  # handlers made later (Streamlit makes its loggers lazily)
    root = logging.getLogger()
    if not any(getattr(h, "nmb_stdout", False) for h in root.handlers):
        handler = logging.StreamHandler(sys.stdout)
        handler.setFormatter(logging.Formatter(FORMAT))
        handler.nmb_stdout = True  # type: ignore[attr-defined]
        root.addHandler(handler)
    root.setLevel(level)
    for name in QUIET:
        logging.getLogger(name).setLevel(max(logging.WARNING, logging.getLevelName(level)))
