"""Run a command and measure its peak resident memory, for memory-bound tests.

The command runs under a small Python wrapper that waits for it and reads
`resource.getrusage(RUSAGE_CHILDREN).ru_maxrss`: the peak of the command's process alone (a
child forked from the test process itself would count the test process's memory at the fork).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

_WRAPPER = (
    "import resource, subprocess, sys\n"
    "limit = int(sys.argv[2])\n"
    "cap = lambda: resource.setrlimit(resource.RLIMIT_AS, (limit, limit)) if limit else None\n"
    "code = subprocess.call(sys.argv[3:], preexec_fn=cap)\n"
    "with open(sys.argv[1], 'w') as fh:\n"
    "    fh.write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))\n"  # KiB on Linux
    "sys.exit(code)\n"
)


def run_measured(cmd: list[str], report: Path, *, address_space: int = 0,
                 **kwargs) -> tuple[subprocess.CompletedProcess, int]:
    """(the finished process, its peak resident memory in bytes), the command limited to
    `address_space` bytes (`ulimit -v`) if given; `kwargs` go to `subprocess.run`
    (`capture_output`, `text`, `env`, `cwd`, `timeout`...)."""
    out = subprocess.run([sys.executable, "-c", _WRAPPER, str(report), str(address_space),
                          *cmd], **kwargs)
    return out, int(report.read_text()) * 1024
