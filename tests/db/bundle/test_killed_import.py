"""A real `nmb import` killed with SIGKILL at several points leaves no process behind, and the
next command leaves nothing unreferenced in the image store or the temp area."""

import gzip
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import nibabel as nib
import numpy as np
import pytest
from sqlalchemy import text

from db.engine import engine_for, upgrade
from tests.db.bundle.bundles import TASKS, write_jsonl

pytestmark = pytest.mark.slow  # starts processes or takes seconds: make test only

ROOT = Path(__file__).resolve().parents[3]
N_IMAGES = 40  # 1.25 GiB decoded, above PROCESS_BYTES: inspected by worker processes, for a few seconds


def _volume_gz(n: int = 256) -> Callable[[int], bytes]:
    """Distinct n^3 int16 .nii.gz files (32 MiB each once decoded, ~150 KB on disk), made
    fast: one gzip member of zeros shared by all, then a member with the last voxel."""
    header = nib.Nifti1Header()
    header.set_data_dtype(np.int16)
    header.set_data_shape((n, n, n))
    header.set_data_offset(352)
    header.set_sform(np.eye(4), code=1)  # an orientation: without one the image is refused
    head = gzip.compress(header.binaryblock + b"\0" * 4 + bytes(n**3 * 2 - 2), 1)
    return lambda k: head + gzip.compress(np.int16(k).tobytes())


@pytest.fixture(scope="module")
def big_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One case per image, so a kill at any point leaves work undone."""
    root = tmp_path_factory.mktemp("big") / "big"
    image = _volume_gz()
    (root / "cases").mkdir(parents=True)
    (root / "bundle.json").write_text(json.dumps({"format": "nmb-bundle/1", "name": "big"}))
    tasks = []
    for k in range(N_IMAGES):
        case = root / "cases" / f"c{k}"
        case.mkdir()
        (case / "t1.nii.gz").write_bytes(image(k + 1))
        (case / "case.json").write_text(json.dumps({
            "case_id": f"c{k}", "title": "synthetic", "ehr": "", "series": [
                {"sequence": "T1", "file": "t1.nii.gz"}],
            "ground_truth": {"final_diagnosis": "x", "differential": [], "lesion": "",
                             "reasoning": ""}}))
        tasks.append({**TASKS[0], "task_id": f"t{k}", "case_id": f"c{k}"})
    write_jsonl(root / "tasks.jsonl", tasks)
    return root


def _stat(pid: int) -> list[str] | None:
    """Fields of /proc/PID/stat after the command name, or None if the process is gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return raw.rsplit(")", 1)[1].split()


def _alive(pid: int) -> bool:
    fields = _stat(pid)
    return fields is not None and fields[0] not in ("Z", "X")  # a zombie has exited


def _descendants(pid: int) -> set[int]:
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (fields := _stat(int(entry.name))) is not None:
            parents[int(entry.name)] = int(fields[1])
    found, frontier = set(), {pid}
    while frontier:
        frontier = {p for p, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def _open_files(pid: int) -> set[str]:
    out = set()
    for fd in Path(f"/proc/{pid}/fd").glob("*"):
        try:
            out.add(os.readlink(fd))
        except OSError:
            pass
    return out


def _until(condition: Callable[[], object], what: str, proc: subprocess.Popen,
           limit: float = 120) -> object:
    """Poll `condition` until it is true; fail if the import ends first or it never happens."""
    give_up = time.monotonic() + limit
    while time.monotonic() < give_up:
        if result := condition():
            return result
        assert proc.poll() is None, f"the import ended before {what}"
        time.sleep(0.005)
    pytest.fail(f"{what} did not happen within {limit} s")


def _nmb(*args: str, env: dict) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "cli", *args], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _kill(proc: subprocess.Popen) -> None:
    """SIGKILL the import; every process it started must end on its own (polled, 60 s)."""
    children = _descendants(proc.pid)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    give_up = time.monotonic() + 60
    while (alive := {p for p in children if _alive(p)}) and time.monotonic() < give_up:
        time.sleep(0.05)
    assert not alive, f"processes left by the killed import: {sorted(alive)}"


def _next_command_cleans_up(home: Path, env: dict, url: str) -> None:
    """After `nmb status`, the temp area is empty and every stored image has a Series row."""
    done = subprocess.run([sys.executable, "-m", "cli", "status"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert [p.name for p in (home / "tmp").iterdir()] == [".lock"]
    stored = {p.relative_to(home).as_posix() for p in (home / "images").rglob("*")
              if p.is_file()} if (home / "images").exists() else set()
    with engine_for(url).connect() as conn:
        referenced = set(conn.execute(text("SELECT path FROM series")).scalars())
    assert stored == referenced


def _env(home: Path, url: str | None = None) -> dict:
    env = {**os.environ, "NMB_HOME": str(home)}
    env.pop("NMB_DATABASE_URL", None)
    return {**env, "NMB_DATABASE_URL": url} if url else env


def test_killed_while_workers_inspect_images(big_bundle: Path, sqlite_url: str,
                                             nmb_home: Path) -> None:
    env = _env(nmb_home)
    proc = _nmb("import", str(big_bundle), env=env)

    def a_worker_reads_an_image() -> bool:
        return any(str(big_bundle) in f for child in _descendants(proc.pid)
                   for f in _open_files(child))

    _until(a_worker_reads_an_image, "a worker process reading an image", proc)
    _kill(proc)
    _next_command_cleans_up(nmb_home, env, sqlite_url)


def test_killed_while_a_zip_is_extracted_or_checked(big_bundle: Path, sqlite_url: str,
                                                    nmb_home: Path, tmp_path: Path) -> None:
    archive = shutil.make_archive(str(tmp_path / "big"), "zip", big_bundle.parent, "big")
    env = _env(nmb_home)
    proc = _nmb("import", archive, env=env)
    extracted = nmb_home / "tmp"
    _until(lambda: any(extracted.glob("import-*/bundle/*")), "the zip's extraction", proc)
    _kill(proc)
    assert any(extracted.glob("import-*/bundle"))  # what a killed import leaves: swept next
    _next_command_cleans_up(nmb_home, env, sqlite_url)


@pytest.mark.postgres
def test_killed_after_images_are_stored_before_commit(big_bundle: Path, nmb_home: Path,
                                                      postgres_server) -> None:
    """The import blocks on a table lock held here, right after copying every image."""
    url = postgres_server.create_database()
    env = _env(nmb_home, url)
    upgrade(url)
    watcher = engine_for(url).connect()
    with engine_for(url).connect() as blocker:
        blocker.exec_driver_sql("LOCK TABLE series IN EXCLUSIVE MODE")  # reads still pass
        proc = _nmb("import", str(big_bundle), env=env)

        def blocked_on_insert() -> bool:
            waiting = watcher.exec_driver_sql(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                "AND query LIKE 'INSERT INTO series%%'").scalar()
            watcher.rollback()
            return bool(waiting)

        _until(blocked_on_insert, "the insert of the series rows", proc)
        stored = list((nmb_home / "images").rglob("*.nii.gz"))
        assert len(stored) == N_IMAGES  # orphans if nothing sweeps them
        _kill(proc)
        blocker.rollback()
    watcher.close()
    _next_command_cleans_up(nmb_home, env, url)
    again = subprocess.run([sys.executable, "-m", "cli", "import", str(big_bundle)], cwd=ROOT,
                           env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    _next_command_cleans_up(nmb_home, env, url)
    assert len(list((nmb_home / "images").rglob("*.nii.gz"))) == N_IMAGES
