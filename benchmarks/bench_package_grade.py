"""`nmb package grade` as a whole process: does its memory grow with the number of responses?

A vision package (three key slices per case, carried in the package) is frozen from a small
study, then `python -m cli package grade` grades FEW and MANY responses (the package's tasks in
turn) against the local OpenAI-compatible server (`tests.openai_server`, its own process, no
latency) at concurrency 8, alternating `REPEAT` times. Printed: per size, the median wall time
and peak resident memory of the process (`tests.peak_memory`), and the ratios MANY / FEW of
each. Requests are built as they go out, so memory should barely move with the number of
responses while the time grows with it. Figures are printed, never asserted.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.bench_grader import KEY, server_process

ROOT = Path(__file__).resolve().parent.parent
FEW, MANY, CONCURRENCY, REPEAT = 250, 2_500, 8, 3

FREEZE = """
import sys
from pathlib import Path
from sqlmodel import Session
from db.engine import engine_for, upgrade
from package.freeze import freeze
from tests.factories import validated_config
from tests.openai_server import OpenAIServer
url = f"sqlite:///{sys.argv[1]}/study.db"
upgrade(url)
with OpenAIServer() as srv, Session(engine_for(url), expire_on_commit=False) as s:
    cid = validated_config(s, srv.base_url, api_key=sys.argv[3], vision=True)
    freeze(s, config_id=cid, out=Path(sys.argv[2]), canary_size=3, with_images=True)
"""


def _responses(path: Path, n: int) -> Path:
    path.write_text("".join(json.dumps({
        "response_id": f"r{i}", "task_id": f"task{i % 12}", "model": "bench-model",
        "text": f"Answer {i}: relapsing-remitting multiple sclerosis."}) + "\n" for i in range(n)))
    return path


def _grade(tmp: Path, package: Path, responses: Path, url: str, env: dict) -> tuple[float, int]:
    from tests.peak_memory import run_measured

    out = tmp / "scores.jsonl"
    for leftover in tmp.glob("scores.*"):
        leftover.unlink()
    start = time.perf_counter()
    done, peak = run_measured(
        [sys.executable, "-m", "cli", "package", "grade", str(package), str(responses),
         "--out", str(out), "--base-url", url, "--concurrency", str(CONCURRENCY)],
        tmp / "peak", cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    elapsed = time.perf_counter() - start
    if done.returncode != 0 or json.loads(done.stdout.splitlines()[-1])["failed"]:
        raise RuntimeError(f"package grade failed: {done.stderr[-2000:]}")
    return elapsed, peak


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="nmb-bench-package-") as name:
        tmp = Path(name)
        env = {**os.environ, "NMB_HOME": str(tmp / "home"), "OPENAI_API_KEY": KEY}
        env.pop("NMB_DATABASE_URL", None)
        package = tmp / "vision.zip"
        subprocess.run([sys.executable, "-c", FREEZE, str(tmp), str(package), KEY], cwd=ROOT,
                       env=env, check=True, timeout=900)
        files = {n: _responses(tmp / f"responses-{n}.jsonl", n) for n in (FEW, MANY)}
        times: dict[int, list[float]] = {FEW: [], MANY: []}
        peaks: dict[int, list[int]] = {FEW: [], MANY: []}
        with server_process(0.0) as url:
            for i in range(REPEAT):  # alternate, so drift on a shared machine hits both alike
                for n in ((FEW, MANY) if i % 2 == 0 else (MANY, FEW)):
                    elapsed, peak = _grade(tmp, package, files[n], url, env)
                    times[n].append(elapsed)
                    peaks[n].append(peak)
                    print(f"  {n:5,} responses: {elapsed:6.2f} s, peak {peak / 2**20:6.1f} MiB",
                          flush=True)
    t = {n: statistics.median(v) for n, v in times.items()}
    m = {n: statistics.median(v) for n, v in peaks.items()}
    print(f"vision package (3 key slices a case), concurrency {CONCURRENCY}, median of {REPEAT}:")
    for n in (FEW, MANY):
        print(f"  {n:5,} responses: wall {t[n]:6.2f} s, peak RSS {m[n] / 2**20:6.1f} MiB")
    print(f"ratio {MANY:,} / {FEW:,}: wall {t[MANY] / t[FEW]:.2f}, peak RSS "
          f"{m[MANY] / m[FEW]:.2f} (responses x{MANY // FEW})")
