"""`nmb collect` throughput against a bare `AsyncOpenAI` loop, a cached re-run, key-slice rendering.

On the 2 mm demo study against the test server (`tests.openai_server`, its own process, 1 s
latency): `nmb collect --levels 1 2 --samples 8 --concurrency 32` (single-turn tasks, so a bare
loop does the same work: one request per item, every body with the case's key slices as PNG
data URLs), timed as a whole process (interpreter start, imports, key slices read from disk,
request building and hashing, calls, commits), against `benchmarks/openai_bare_loop.py`, also a
whole process, sending as many requests of the first item's body at the same concurrency, in
the same run (as in `bench_grader`). Each repeat collects under a
new model name, so nothing is cached. Then one model's responses are deleted (the request cache
kept) and `nmb collect` is re-run: every item from the cache. Rendering every case's key
slices once from cold (what the first run of a study pays) is timed in-process. Figures are
printed, never asserted.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.bench_grader import KEY, ROOT, server_process

SAMPLES, CONCURRENCY, LATENCY, REPEAT = 8, 32, 1.0, 3


def _env(home: Path) -> dict[str, str]:
    env = {**os.environ, "NMB_HOME": str(home), "OPENAI_API_KEY": KEY}
    env.pop("NMB_DATABASE_URL", None)
    return env


def _collect(home: Path, url: str, model: str) -> tuple[float, dict]:
    cmd = [sys.executable, "-m", "cli", "collect", "--model", model, "--base-url", url,
           "--levels", "1", "2", "--samples", str(SAMPLES), "--concurrency", str(CONCURRENCY),
           "--json"]
    start = time.perf_counter()
    out = subprocess.run(cmd, cwd=ROOT, env=_env(home), capture_output=True, text=True,
                         timeout=600)
    elapsed = time.perf_counter() - start
    if out.returncode != 0:
        raise RuntimeError(f"nmb collect exited {out.returncode}: {out.stderr.strip()[-500:]}")
    summary = json.loads(out.stdout.strip().splitlines()[-1])
    if summary["failed"]:
        raise RuntimeError(f"nmb collect: {summary['failed']} items failed")
    return elapsed, summary


def _in_study(home: Path, code: str) -> str:
    """Run `code` in a fresh interpreter on the study in `home`; its last stdout line."""
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=_env(home), check=True,
                         capture_output=True, text=True, timeout=600)
    return out.stdout.strip().splitlines()[-1]


FIRST_BODY = """
import json
from sqlmodel import select
from llm.key_images import key_images
from llm.model_request import CollectSettings, turn_request
from db.engine import session
from db.models import Case, Task
with session() as s:
    task = s.exec(select(Task).where(Task.level < 3).order_by(Task.task_id)).first()
    case = s.get(Case, task.case_id)
    settings = CollectSettings(model="bench-bare", base_url="http://bench/v1")
    print(json.dumps(turn_request(settings, task, case, key_images(s, case), []).body()))
"""

RENDER_COLD = """
import time
from sqlmodel import select
from llm.key_images import key_images
from db.engine import session
from db.models import Case
with session() as s:
    cases = list(s.exec(select(Case)))
    start = time.perf_counter()
    n = sum(len(key_images(s, c)) for c in cases)
    print(f"{n} {time.perf_counter() - start:.3f}")
"""

FORGET = """
from sqlmodel import delete, select
from db.engine import session
from db.models import CollectedResponse, Response
with session() as s:
    ids = list(s.exec(select(Response.response_id).where(Response.model == "bench-vlm-0")))
    s.exec(delete(CollectedResponse).where(CollectedResponse.response_id.in_(ids)))
    s.exec(delete(Response).where(Response.response_id.in_(ids)))
    s.commit()
print(len(ids))
"""


def main() -> None:
    collect_s, bare_s, cached_s = [], [], []
    with tempfile.TemporaryDirectory(prefix="nmb-bench-collect-") as tmp, \
            server_process(LATENCY) as url:
        home = Path(tmp) / "home"
        subprocess.run([sys.executable, "-m", "cli", "demo", "--resolution", "2"], cwd=ROOT,
                       env=_env(home), check=True, capture_output=True, timeout=600)
        shutil.rmtree(home / "key-slices", ignore_errors=True)
        images, render_s = _in_study(home, RENDER_COLD).split()
        body = json.loads(_in_study(home, FIRST_BODY))
        body_file = Path(tmp) / "body.json"
        body_file.write_text(json.dumps(body))
        for i in range(REPEAT):  # alternate, so drift on a shared machine hits both alike
            elapsed, summary = _collect(home, url, f"bench-vlm-{i}")
            n, shown = summary["items"], summary["image_count"] // max(summary["items"], 1)
            collect_s.append(elapsed)
            start = time.perf_counter()
            subprocess.run([sys.executable, str(ROOT / "benchmarks" / "openai_bare_loop.py"), url,
                            str(n), str(CONCURRENCY), str(body_file)], env=_env(home),
                           check=True, timeout=600)
            bare_s.append(time.perf_counter() - start)
            print(f"  nmb collect {collect_s[-1]:6.2f} s   bare loop {bare_s[-1]:6.2f} s",
                  flush=True)
        for _ in range(REPEAT):
            _in_study(home, FORGET)
            elapsed, summary = _collect(home, url, "bench-vlm-0")
            if summary["from_cache"] != n:
                raise RuntimeError(f"expected {n} items from the cache, got {summary}")
            cached_s.append(elapsed)
    per = len(json.dumps(body))
    print(f"{n} single-turn items, concurrency {CONCURRENCY}, latency {LATENCY:g} s, "
          f"request body {per:,} bytes ({shown} images); "
          f"ideal {-(-n // CONCURRENCY) * LATENCY:.1f} s")
    med_c, med_b = statistics.median(collect_s), statistics.median(bare_s)
    print(f"nmb collect (whole process)     median {med_c:6.2f} s  {n / med_c:6.1f} items/s")
    print(f"bare AsyncOpenAI loop (process) median {med_b:6.2f} s  {n / med_b:6.1f} req/s")
    print(f"throughput nmb collect / bare = {med_b / med_c:.3f}")
    print(f"fully cached re-run ({n} items from cache)  median "
          f"{statistics.median(cached_s):5.2f} s")
    print(f"key slices rendered from cold: {images} PNGs in {float(render_s):.2f} s")


if __name__ == "__main__":
    main()
