"""Services the tests start themselves: a throwaway PostgreSQL server.

Without the service a test skips with a reason; with `NMB_REQUIRE_SERVICES=1` (CI) it fails.
"""

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest


def require(ok: bool, reason: str) -> None:
    """Skip (or, with NMB_REQUIRE_SERVICES=1, fail) when a service is missing."""
    if ok:
        return
    if os.environ.get("NMB_REQUIRE_SERVICES") == "1":
        pytest.fail(f"required service missing: {reason}")
    pytest.skip(reason)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _pg_bin() -> Path | None:
    found = shutil.which("pg_ctl")
    if found:
        return Path(found).resolve().parent
    dirs = sorted(glob.glob("/usr/lib/postgresql/*/bin"))
    return Path(dirs[-1]) if dirs else None


class PostgresServer:
    """initdb into a temp dir (as the `postgres` user when root), start on a loopback port."""

    def __init__(self) -> None:
        self.bin = _pg_bin()
        self.dir = Path(tempfile.mkdtemp(prefix="nmb-pg-"))
        self.port = free_port()
        self.as_root = os.geteuid() == 0

    def _run(self, *args: str) -> None:
        cmd = [str(self.bin / args[0]), *args[1:]]
        if self.as_root:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        subprocess.run(cmd, check=True, capture_output=True, text=True)

    def start(self) -> "PostgresServer":
        if self.as_root:
            shutil.chown(self.dir, "postgres")
        data = self.dir / "data"
        self._run("initdb", "-D", str(data), "-U", "postgres", "-A", "trust", "--no-sync")
        opts = f"-p {self.port} -k {self.dir} -h 127.0.0.1 -c fsync=off -c full_page_writes=off"
        self._run("pg_ctl", "-D", str(data), "-o", opts, "-l", str(self.dir / "log"), "-w", "start")
        return self

    def stop(self) -> None:
        try:
            self._run("pg_ctl", "-D", str(self.dir / "data"), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{database}"

    def create_database(self, template: str | None = None) -> str:
        import psycopg

        name = f"t{time.time_ns()}"
        dsn = f"host=127.0.0.1 port={self.port} user=postgres"
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute(f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else ""))
        return self.url(name)


def postgres_available() -> tuple[bool, str]:
    if _pg_bin() is None:
        return False, "PostgreSQL server binaries (pg_ctl, initdb) not installed"
    if os.geteuid() == 0:
        try:
            import pwd

            pwd.getpwnam("postgres")
        except KeyError:
            return False, "running as root but there is no 'postgres' user for initdb"
    return True, ""
