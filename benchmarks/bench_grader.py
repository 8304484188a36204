"""`nmb grade` as a whole process against the bare `AsyncOpenAI` loop as a whole process (issue 13).

Both are programs started with this interpreter, against the same local OpenAI-compatible server
(`tests.openai_server`, its own process, fixed latency) at the same concurrency, on N = 2,048
requests so that the start-up of either (interpreter, imports) is amortised:

- `python -m cli grade --base-url URL --concurrency C --json` on a fresh 2,048-response study
  (a copy of one study built beforehand, so nothing is cached): migrations check, prompt
  building, calls, validation, commits, exit;
- `python benchmarks/openai_bare_loop.py URL N C BODY.json`: the same number of requests with one
  of the bodies the grader really sends, and nothing else.

They alternate `PAIRS` times (which one goes first alternates too, so drift on a shared machine
hits both alike). Printed: each pair, the medians, the ratio bare time / nmb time (the goal is at
least 0.9) and the tool's overhead per request in ms, in wall time and in CPU time (user + sys of
the process, which moves less than wall time when others load the machine). Then the last
study's grades are deleted (the request cache kept) and `nmb grade` re-run: every item comes from
the cache; and a no-op run (nothing left to grade) gives the fixed cost of a process start.
Figures are printed, never asserted.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KEY = "sk-bench-not-a-key"
N_TASKS, SAMPLES = 64, 16  # 64 tasks x 2 models x 16 samples = 2,048 responses
N = N_TASKS * 2 * SAMPLES
CONCURRENCY, LATENCY, PAIRS, CACHED_RUNS = 32, 0.5, 3, 3
RATIO_GOAL = 0.9


@contextlib.contextmanager
def server_process(latency: float) -> Iterator[str]:
    """The test server in a child process on a free port (its threads do not share the GIL with
    the client measured); yields its base URL."""
    cmd = [sys.executable, "-m", "tests.openai_server", "--port", "0", "--latency", str(latency)]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline().strip() if proc.stdout else ""
        if not line.startswith("http://"):
            raise RuntimeError(f"test server did not start (printed {line!r})")
        yield line
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _env(home: Path) -> dict[str, str]:
    env = {**os.environ, "NMB_HOME": str(home), "OPENAI_API_KEY": KEY}
    env.pop("NMB_DATABASE_URL", None)
    return env


def _build_study(home: Path, base_url: str) -> dict:
    """A study of N responses in `home`; returns the body the grader sends for the first one
    (the config as `nmb grade --base-url` stores it)."""
    code = f"""
import json
from grading.grader import prepare
from grading.config import GraderSettings, store_config
from db.engine import session, upgrade
from db.models import Response
from db.rubrics import rubric_by_hash
from tests.factories import make_study
upgrade()
with session() as s:
    rids = make_study(s, n_tasks={N_TASKS}, samples={SAMPLES}, experts=0)
    assert len(rids) == {N}, len(rids)
    config = store_config(s, GraderSettings(base_url={base_url!r}))
    s.commit()
    item = prepare(s, config, rubric_by_hash(s, config.rubric_hash), s.get(Response, rids[0]))
print(json.dumps(item.request.body()))
"""
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=_env(home), check=True,
                         capture_output=True, text=True)
    return json.loads(out.stdout)


def _cpu_of_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _timed(cmd: list[str], home: Path) -> tuple[float, float, str]:
    """Wall seconds of one process, start to exit, its CPU seconds, and its stdout."""
    cpu, start = _cpu_of_children(), time.perf_counter()
    out = subprocess.run(cmd, cwd=ROOT, env=_env(home), capture_output=True, text=True,
                         timeout=900)
    elapsed, cpu = time.perf_counter() - start, _cpu_of_children() - cpu
    if out.returncode != 0:
        raise RuntimeError(f"{cmd[1:3]} exited {out.returncode}: {out.stderr.strip()[-500:]}")
    return elapsed, cpu, out.stdout


def _nmb_grade(home: Path, url: str, graded: int, from_cache: int) -> tuple[float, float]:
    cmd = [sys.executable, "-m", "cli", "grade", "--base-url", url,
           "--concurrency", str(CONCURRENCY), "--json"]
    elapsed, cpu, stdout = _timed(cmd, home)
    summary = json.loads(stdout.strip().splitlines()[-1])
    got = (summary["graded"], summary["from_cache"], summary["failed"])
    if got != (graded, from_cache, 0):
        raise RuntimeError(f"nmb grade: (graded, from_cache, failed) = {got}, "
                           f"expected {(graded, from_cache, 0)}")
    return elapsed, cpu


def _forget_grades(home: Path) -> None:
    """Delete the grades of the study in `home`; the request cache stays."""
    code = """
from sqlmodel import delete
from db.engine import session
from db.models import GraderScore
with session() as s:
    s.exec(delete(GraderScore))
    s.commit()
"""
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=_env(home), check=True)


def main() -> None:
    nmb, bare_runs, cached_s, noop_s = [], [], [], []  # (wall, cpu) of each nmb / bare run
    with tempfile.TemporaryDirectory(prefix="nmb-bench-grader-") as tmp, \
            server_process(LATENCY) as url:
        template = Path(tmp) / "template"
        body = _build_study(template, url)
        body_file = Path(tmp) / "body.json"
        body_file.write_text(json.dumps(body))
        bare = [sys.executable, str(ROOT / "benchmarks" / "openai_bare_loop.py"), url, str(N),
                str(CONCURRENCY), str(body_file)]
        print(f"{N} requests, concurrency {CONCURRENCY}, server latency {LATENCY:g} s, request "
              f"body {len(json.dumps(body))} bytes; ideal {N / CONCURRENCY * LATENCY:.1f} s",
              flush=True)
        for pair in range(PAIRS):
            home = Path(tmp) / f"home{pair}"
            shutil.copytree(template, home)
            for nmb_turn in (True, False) if pair % 2 == 0 else (False, True):
                if nmb_turn:
                    nmb.append(_nmb_grade(home, url, N, 0))
                else:
                    bare_runs.append(_timed(bare, home)[:2])
            (wall, cpu), (bare_wall, bare_cpu) = nmb[-1], bare_runs[-1]
            print(f"  nmb grade {wall:6.2f} s (cpu {cpu:5.2f} s)   bare loop {bare_wall:6.2f} s "
                  f"(cpu {bare_cpu:5.2f} s)   ratio {bare_wall / wall:.3f}", flush=True)
        for _ in range(CACHED_RUNS):
            noop_s.append(_nmb_grade(home, url, 0, 0)[0])
            _forget_grades(home)
            cached_s.append(_nmb_grade(home, url, N, N)[0])

    nmb_med, nmb_cpu = (statistics.median(column) for column in zip(*nmb, strict=True))
    bare_med, bare_cpu = (statistics.median(column) for column in zip(*bare_runs, strict=True))
    ratio = bare_med / nmb_med  # = throughput(nmb grade) / throughput(bare loop)
    print(f"nmb grade (whole process)        median {nmb_med:6.2f} s  {N / nmb_med:6.1f} req/s  "
          f"cpu {nmb_cpu:5.2f} s")
    print(f"bare AsyncOpenAI loop (process)  median {bare_med:6.2f} s  {N / bare_med:6.1f} req/s  "
          f"cpu {bare_cpu:5.2f} s")
    print(f"ratio bare / nmb grade = {ratio:.3f}  "
          f"(goal >= {RATIO_GOAL}: {'MET' if ratio >= RATIO_GOAL else 'NOT MET'}); overhead per "
          f"request {(nmb_med - bare_med) / N * 1000:.2f} ms wall, "
          f"{(nmb_cpu - bare_cpu) / N * 1000:.2f} ms cpu")
    print(f"fully cached re-run ({N} items from cache)  median "
          f"{statistics.median(cached_s):5.2f} s")
    print(f"no-op run (nothing to grade; process start-up)  median "
          f"{statistics.median(noop_s):5.2f} s")


if __name__ == "__main__":
    main()
