"""`nmb grade` throughput against a bare `AsyncOpenAI` loop, and a fully cached re-run (issue 6).

Against the test server (`tests.openai_server`, its own process) with a fixed 1 s latency:
`nmb grade --concurrency 32` on 320 responses, timed as a whole process (interpreter start,
imports, its sender process, migrations check, prompt building, calls, commits), must reach at
least 0.8 of the throughput of `benchmarks.openai_bare_loop.bare_loop` sending 320 requests at
concurrency 32 in the same run, with a body the grader really sends. The in-process loop pays
neither the interpreter start nor the `openai` import; the same loop run as its own program
(`benchmarks.bare_process`) pays both, as any script using the SDK would, so the ratio against
it shows what the tool itself adds. The three alternate, `REPEAT` times each, each grade run on
a fresh study (fresh NMB_HOME) so nothing is cached.
Then the last study's grades are deleted (the request cache kept) and `nmb grade` is re-run:
every item comes from the cache, target under 2 s. A no-op run (nothing left to grade) is
timed too: the fixed cost of a process start. Figures are printed, never asserted.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from benchmarks.openai_bare_loop import BENCH_KEY, ROOT, bare_loop, server_process

N_TASKS, SAMPLES = 32, 5  # 32 tasks x 2 models x 5 samples = 320 responses
CONCURRENCY, LATENCY, REPEAT = 32, 1.0, 5  # five: the ratio sits near its target
RATIO_TARGET, CACHED_TARGET_S = 0.8, 2.0


@contextlib.contextmanager
def _nmb_home(path: Path) -> Iterator[None]:
    """NMB_HOME set to `path` (and NMB_DATABASE_URL unset) for this process, restored after."""
    saved = {k: os.environ.get(k) for k in ("NMB_HOME", "NMB_DATABASE_URL")}
    os.environ["NMB_HOME"] = str(path)
    os.environ.pop("NMB_DATABASE_URL", None)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _build_study(home: Path, base_url: str) -> dict:
    """A fresh study of N_TASKS x 2 x SAMPLES responses in `home`; returns the body the grader
    would send for the first response (config as `nmb grade --base-url` stores it)."""
    from calibration.grader import prepare
    from calibration.grader_config import GraderSettings, store_config
    from db.engine import session, upgrade
    from db.models import Response
    from db.rubrics import rubric_by_hash
    from tests.factories import make_study

    with _nmb_home(home):
        upgrade()
        with session() as s:
            rids = make_study(s, n_tasks=N_TASKS, samples=SAMPLES, experts=0)
            config = store_config(s, GraderSettings(base_url=base_url))
            s.commit()
            first = prepare(s, config, rubric_by_hash(s, config.rubric_hash),
                            s.get(Response, rids[0]))
    if len(rids) != N_TASKS * 2 * SAMPLES:
        raise RuntimeError(f"expected {N_TASKS * 2 * SAMPLES} responses, built {len(rids)}")
    return first.request.body()


def _forget_grades(home: Path) -> None:
    """Delete every GraderScore row of the study in `home`; GraderCache stays."""
    from sqlmodel import delete

    from db.engine import session
    from db.models import GraderScore

    with _nmb_home(home), session() as s:
        s.exec(delete(GraderScore))
        s.commit()


def _nmb_grade(home: Path, base_url: str) -> tuple[float, dict]:
    """Wall seconds of one `nmb grade ... --json` process, and its JSON summary."""
    env = {**os.environ, "NMB_HOME": str(home), "OPENAI_API_KEY": BENCH_KEY}
    env.pop("NMB_DATABASE_URL", None)
    cmd = [sys.executable, "-m", "cli", "grade", "--base-url", base_url,
           "--concurrency", str(CONCURRENCY), "--json"]
    start = time.perf_counter()
    out = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    elapsed = time.perf_counter() - start
    if out.returncode != 0:
        raise RuntimeError(f"nmb grade exited {out.returncode}: {out.stderr.strip()[-500:]}")
    return elapsed, json.loads(out.stdout.strip().splitlines()[-1])


def _bare_process(base_url: str, body_file: Path) -> float:
    """Wall seconds of `benchmarks.bare_process` as a whole process."""
    cmd = [sys.executable, "-m", "benchmarks.bare_process", base_url, str(N_TASKS * 2 * SAMPLES),
           str(CONCURRENCY), str(body_file)]
    start = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, check=True, timeout=300)
    return time.perf_counter() - start


def _check(summary: dict, graded: int, from_cache: int) -> None:
    got = (summary["graded"], summary["from_cache"], summary["failed"])
    if got != (graded, from_cache, 0):
        raise RuntimeError(f"nmb grade: (graded, from_cache, failed) = {got}, "
                           f"expected {(graded, from_cache, 0)}")


def main() -> None:
    n = N_TASKS * 2 * SAMPLES
    grade_s, bare_s, process_s, cached_s, noop_s = [], [], [], [], []
    with tempfile.TemporaryDirectory(prefix="nmb-bench-grader-") as tmp, \
            server_process(LATENCY) as url:
        homes = [Path(tmp) / f"home{i}" for i in range(REPEAT)]
        bodies = [_build_study(home, url) for home in homes]
        body = bodies[0]
        body_file = Path(tmp) / "body.json"
        body_file.write_text(json.dumps(body))
        print(f"{n} responses, concurrency {CONCURRENCY}, server latency {LATENCY:g} s, "
              f"request body {len(json.dumps(body))} bytes; ideal "
              f"{n / CONCURRENCY * LATENCY:.1f} s", flush=True)
        for home in homes:  # alternate, so drift on a shared machine hits both alike
            elapsed, summary = _nmb_grade(home, url)
            _check(summary, n, 0)
            grade_s.append(elapsed)
            bare_s.append(asyncio.run(bare_loop(url, n, CONCURRENCY, body)))
            process_s.append(_bare_process(url, body_file))
            print(f"  nmb grade {grade_s[-1]:6.2f} s   bare loop {bare_s[-1]:6.2f} s   "
                  f"bare loop as a process {process_s[-1]:6.2f} s", flush=True)
        for _ in range(REPEAT):
            elapsed, summary = _nmb_grade(homes[-1], url)
            _check(summary, 0, 0)
            noop_s.append(elapsed)
            _forget_grades(homes[-1])
            elapsed, summary = _nmb_grade(homes[-1], url)
            _check(summary, n, n)
            cached_s.append(elapsed)

    grade_med, bare_med = statistics.median(grade_s), statistics.median(bare_s)
    process_med = statistics.median(process_s)
    cached_med, noop_med = statistics.median(cached_s), statistics.median(noop_s)
    ratio = bare_med / grade_med  # = throughput(nmb grade) / throughput(bare loop)
    print(f"nmb grade (whole process)   median {grade_med:6.2f} s  {n / grade_med:6.1f} req/s")
    print(f"bare AsyncOpenAI loop       median {bare_med:6.2f} s  {n / bare_med:6.1f} req/s")
    print(f"bare loop as a process      median {process_med:6.2f} s  {n / process_med:6.1f} req/s")
    print(f"throughput nmb grade / bare = {ratio:.3f}  "
          f"(target >= {RATIO_TARGET}: {'MET' if ratio >= RATIO_TARGET else 'NOT MET'})")
    print(f"throughput nmb grade / bare loop as a process = {process_med / grade_med:.3f}  "
          f"(what the tool adds beyond the interpreter and the openai import)")
    print(f"fully cached re-run ({n} items from cache)  median {cached_med:5.2f} s  "
          f"(target < {CACHED_TARGET_S:g} s: "
          f"{'MET' if cached_med < CACHED_TARGET_S else 'NOT MET'})")
    print(f"no-op run (nothing to grade; process start-up)  median {noop_med:5.2f} s")


if __name__ == "__main__":
    main()
