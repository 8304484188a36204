"""How cost grows with the study (issue 47): a synthetic study (`benchmarks.study`) at 0.25x,
1x and 4x a real Neural-MedBench study (1x = 120 cases, 200 tasks, 16,000 responses), and for
each operation its time against its floor, its peak memory and its growth exponent between
sizes (log(t2/t1) / log(n2/n1): 1 is linear, 0 is flat).

Operations, each a process of its own (peak resident memory of that process alone, through
`tests.peak_memory`), against a floor measured in the same run:
- import: `nmb import` of a bundle of the size (2 mm images, one series per case) vs reading
  it: sha256 and gunzip of every image and parsing of its JSON lines;
- results: `nmb results --format json` vs reading the rows it uses (responses joined to their
  grades) with sqlite3;
- exports: `nmb export responses` and `grader-scores` (CSV) vs a raw `sqlite3` dump of the
  whole database (`iterdump`);
- backup: `nmb backup` vs `tar` of NMB_HOME;
- pages: the server render of /results, /admin, /calibrate and /score (AppTest, median of 5
  reruns after a first) vs AppTest rendering one `st.title`;
- exam answers: the mean time of one `answer_stage` (a session per answer, as the page opens)
  for a taker answering every stage of an exam of 50 and of 200 tasks (goal: within 1.5x);
- grade: `nmb grade --concurrency 64` of 1,000 and 4,000 responses at 0 ms and 500 ms server
  latency vs the bare `AsyncOpenAI` loop on as many requests (goals: peak memory at 4,000 within
  1.25x of 1,000; throughput at 500 ms at least 0.9 of the bare loop's).

Sizes: NMB_BENCH_SIZES (default "0.25,1,4"; e.g. "0.25,1" on a slow machine); the grading
section: NMB_BENCH_GRADE (default "1000,4000"). Figures are printed, never asserted; the load
average is printed first and last (other processes share the cores).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.bench_grader import KEY, ROOT, server_process
from tests.peak_memory import run_measured

PY = sys.executable
PAGES = {"/results": ("pages/study_results.py", "admin"), "/admin": ("pages/admin.py", "admin"),
         "/calibrate": ("pages/calibrate.py", "admin"), "/score": ("pages/score.py", "expert0")}


def _cpu_children() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure(cmd: list[str], env: dict[str, str], report: Path) -> dict:
    """Wall and CPU seconds and peak resident MiB of one process; its stdout."""
    cpu, start = _cpu_children(), time.perf_counter()
    out, peak = run_measured(cmd, report, cwd=ROOT, env=env, capture_output=True, text=True,
                             timeout=3600)
    wall = time.perf_counter() - start
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:4])} exited {out.returncode}: "
                           f"{out.stderr.strip()[-800:]}")
    return {"wall": wall, "cpu": _cpu_children() - cpu, "mib": peak / 2**20, "out": out.stdout}


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {**os.environ, "NMB_HOME": str(home), "OPENAI_API_KEY": KEY, **extra}
    env.pop("NMB_DATABASE_URL", None)
    return env


def _load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def exponent(sizes: list[float], values: list[float]) -> str:
    """Growth exponents between consecutive sizes, e.g. "0.98, 1.02"."""
    pairs = list(zip(sizes, values, strict=True))
    return ", ".join(f"{math.log(b / a) / math.log(m / n):.2f}" if a > 0 and b > 0 else "-"
                     for (n, a), (m, b) in zip(pairs, pairs[1:], strict=False))


# ---------------------------------------------------------------- children (python -m ...)

def _child_results_floor(db: str) -> None:
    import sqlite3

    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT r.response_id, r.task_id, r.model, r.source, r.user_id, r.sample, t.family, "
            "t.level, t.case_id, g.correct_diagnosis, g.overall, g.error_tags, g.criteria, "
            "g.diagnosis_rank, g.stages FROM response r JOIN task t ON t.task_id = r.task_id "
            "JOIN graderscore g ON g.response_id = r.response_id").fetchall()
    print(len(rows))


def _child_dump(db: str, out: str) -> None:
    import sqlite3

    with sqlite3.connect(db) as conn, open(out, "w") as fh:
        for line in conn.iterdump():
            fh.write(line + "\n")


def _child_pages(home: str, repeat: int = 5) -> None:
    """Median server render of each page (AppTest reruns after a first), and the floor."""
    from sqlmodel import select
    from streamlit.testing.v1 import AppTest

    from db.engine import session
    from db.models import User
    from ui.auth import LoggedIn

    out = {}
    with session() as s:
        users = {u.name: LoggedIn.of(u) for u in s.exec(select(User))}
    for url, (path, who) in {**PAGES, "floor": (None, None)}.items():
        at = (AppTest.from_string("import streamlit as st\nst.title('x')") if path is None
              else AppTest.from_file(str(ROOT / path), default_timeout=120))
        if who:
            at.session_state["user"] = users[who]
        at.run()
        if at.exception:
            raise RuntimeError(f"{url}: {at.exception}")
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            at.run()
            times.append(time.perf_counter() - start)
        out[url] = statistics.median(times)
    print(json.dumps(out))


def _child_exam(n_tasks: int) -> None:
    """A taker answers every stage of an exam of `n_tasks`: the mean seconds per answer, a
    session per answer (as the page opens one per rerun), and the floor: one raw INSERT and
    commit of an answer row."""
    import sqlite3

    from sqlmodel import select

    from db.engine import database_url, session
    from db.models import ExamAttempt, Task
    from db.study.exams import answer_stage, attempt_for, ensure_exam
    from db.users import add_user

    with session() as s:
        tasks = list(s.exec(select(Task).order_by(Task.task_id).limit(n_tasks)))
        exam = ensure_exam(s, name=f"bench-{n_tasks}", task_ids=[t.task_id for t in tasks])
        taker = add_user(s, name=f"student-{n_tasks}", role="student", password="pw")
        s.commit()
        attempt_id = attempt_for(s, exam_id=exam.id, user_id=taker.id).id
    answers, start = 0, time.perf_counter()
    for stage in (0, 1):  # every first stage, then the second ones (no stage waits)
        for task in tasks:
            if stage <= len(task.stages or []):
                with session() as s:
                    answer_stage(s, attempt=s.get(ExamAttempt, attempt_id),
                                 task_id=task.task_id, text=f"Answer {answers}: glioblastoma.",
                                 stage=stage)
                answers += 1
    per_answer = (time.perf_counter() - start) / answers
    db = database_url().removeprefix("sqlite:///")
    with sqlite3.connect(db) as conn:
        start = time.perf_counter()
        for k in range(50):
            conn.execute("INSERT INTO auditlog (at, action, detail) VALUES "
                         "(CURRENT_TIMESTAMP, 'bench', ?)", (json.dumps({"k": k}),))
            conn.commit()
        floor = (time.perf_counter() - start) / 50
    print(json.dumps({"answers": answers, "per_answer": per_answer, "floor": floor}))


def _child_import_floor(bundle: str) -> None:
    import gzip
    import hashlib

    for f in sorted(Path(bundle).rglob("*")):
        if f.name.endswith(".nii.gz"):
            hashlib.sha256(f.read_bytes()).hexdigest()
            with gzip.open(f) as z:
                while z.read(1 << 24):
                    pass
        elif f.suffix in (".jsonl", ".json"):
            for line in f.read_text().splitlines():
                if line.strip():
                    json.loads(line)


# ---------------------------------------------------------------- sections

def _row(name: str, sizes: list[float], runs: list[dict], floors: list[float]) -> None:
    walls = [r["wall"] for r in runs]
    cells = "  ".join(f"{w:7.2f} s ({w / f:5.1f}x) {r['mib']:5.0f} MiB"
                      for w, f, r in zip(walls, floors, runs, strict=True))
    print(f"  {name:<22} {cells}   exponent {exponent(sizes, walls)}", flush=True)


def scale_section(sizes: list[float], tmp: Path) -> None:
    print(f"study sizes {sizes} (1x = 120 cases, 200 tasks, 16,000 responses); "
          "each cell: wall time (x its floor) peak memory", flush=True)
    homes = {}
    for size in sizes:
        home = tmp / f"home-{size:g}"
        home.mkdir()
        r = measure([PY, "-m", "benchmarks.study", f"sqlite:///{home / 'study.db'}", str(size)],
                    _env(home), tmp / "peak")
        homes[size] = home
        print(f"  generated {size:g}x in {r['wall']:.1f} s: {r['out'].strip()}", flush=True)
    env = {size: _env(home) for size, home in homes.items()}
    db = {size: str(home / "study.db") for size, home in homes.items()}
    peak = tmp / "peak"

    def child(fn: str, *args: str) -> list[str]:
        return [PY, "-c", f"import sys; from benchmarks.bench_scale import {fn}; "
                f"{fn}(*sys.argv[1:])", *args]

    floors = [measure(child("_child_results_floor", db[z]), env[z], peak)["wall"] for z in sizes]
    _row("results", sizes, [measure([PY, "-m", "cli", "results", "--format", "json"], env[z],
                                    peak) for z in sizes], floors)
    dumps = [measure(child("_child_dump", db[z], str(tmp / "dump.sql")), env[z], peak)["wall"]
             for z in sizes]
    for what in ("responses", "grader-scores"):
        _row(f"export {what}", sizes, [measure(
            [PY, "-m", "cli", "export", what, "--out", str(tmp / f"{what}-{z:g}.csv")], env[z],
            peak) for z in sizes], dumps)
    tars = []
    for z in sizes:
        tars.append(measure(["tar", "cf", str(tmp / "home.tar"), "-C", str(homes[z]), "."],
                            env[z], peak)["wall"])
        (tmp / "home.tar").unlink()
    backups = []
    for z in sizes:
        backups.append(measure([PY, "-m", "cli", "backup", "--out", str(tmp / "b.nmbbackup")],
                               env[z], peak))
        (tmp / "b.nmbbackup").unlink()
    _row("backup", sizes, backups, tars)
    pages = {z: measure(child("_child_pages", str(homes[z])), env[z], peak) for z in sizes}
    rendered = {z: json.loads(r["out"].strip().splitlines()[-1]) for z, r in pages.items()}
    for url in PAGES:
        times = [rendered[z][url] for z in sizes]
        cells = "  ".join(f"{t * 1000:7.0f} ms ({t / rendered[z]['floor']:5.1f}x)"
                          for z, t in zip(sizes, times, strict=True))
        slow = [f"{z:g}x" for z, t in zip(sizes, times, strict=True) if t > 2.0]
        print(f"  page {url:<17} {cells}   exponent {exponent(sizes, times)}"
              + (f"   ABOVE 2 s at {', '.join(slow)}" if slow else ""), flush=True)
    print("  (pages: peak memory of the AppTest process rendering all four: "
          + ", ".join(f"{z:g}x {pages[z]['mib']:.0f} MiB" for z in sizes) + ")", flush=True)
    import_section(sizes, tmp)


def import_section(sizes: list[float], tmp: Path) -> None:
    from demo.bundle import write_scale_bundle

    runs, floors = [], []
    for z in sizes:
        home, bundle = tmp / f"import-{z:g}", tmp / f"bundle-{z:g}"
        write_scale_bundle(bundle, n_cases=max(1, round(120 * z)), n_sequences=1,
                           n_responses=round(16000 * z), resolution_mm=2)
        floors.append(measure([PY, "-c", "import sys; from benchmarks.bench_scale import "
                               "_child_import_floor as f; f(sys.argv[1])", str(bundle)],
                              _env(home), tmp / "peak")["wall"])
        runs.append(measure([PY, "-m", "cli", "import", str(bundle)], _env(home), tmp / "peak"))
        shutil.rmtree(bundle)
        shutil.rmtree(home)
    _row("import (2 mm, 1 series)", sizes, runs, floors)


def exam_section(tmp: Path) -> None:
    home = tmp / "exam-home"
    home.mkdir()
    env = _env(home)
    measure([PY, "-m", "benchmarks.study", f"sqlite:///{home / 'study.db'}", "1"], env,
            tmp / "peak")
    got = {}
    for n in (50, 200):
        r = measure([PY, "-c", "import sys; from benchmarks.bench_scale import _child_exam; "
                     "_child_exam(int(sys.argv[1]))", str(n)], env, tmp / "peak")
        got[n] = json.loads(r["out"].strip().splitlines()[-1])
        each, floor = got[n]["per_answer"], got[n]["floor"]
        print(f"  exam of {n:3d} tasks: {got[n]['answers']} answers, {each * 1000:6.1f} ms per "
              f"answer ({each / floor:.1f}x a raw insert and commit, {floor * 1000:.1f} ms)",
              flush=True)
    ratio = got[200]["per_answer"] / got[50]["per_answer"]
    print(f"  per answer, 200 vs 50 tasks: {ratio:.2f}x (goal within 1.5x: "
          f"{'met' if ratio <= 1.5 else 'NOT met'})", flush=True)


def grade_section(counts: list[int], tmp: Path) -> None:
    from benchmarks.study import make_study
    from db.engine import engine_for, upgrade

    for latency in (0.0, 0.5):
        with server_process(latency) as url:
            rows = {}
            for n in counts:
                home = tmp / f"grade-{n}-{latency:g}"
                home.mkdir()
                db = f"sqlite:///{home / 'study.db'}"
                upgrade(db)
                from sqlmodel import Session

                with Session(engine_for(db), expire_on_commit=False) as s:
                    make_study(s, responses=n, base_url=url, graded=False)
                body = _first_body(db)
                (tmp / "body.json").write_text(json.dumps(body))
                env = _env(home)
                nmb = measure([PY, "-m", "cli", "grade", "--base-url", url, "--concurrency",
                               "64", "--json"], env, tmp / "peak")
                bare = measure([PY, str(ROOT / "benchmarks" / "openai_bare_loop.py"), url,
                                str(n), "64", str(tmp / "body.json")], env, tmp / "peak")
                summary = json.loads(nmb["out"].strip().splitlines()[-1])
                if (summary["graded"], summary["failed"]) != (n, 0):
                    raise RuntimeError(f"nmb grade: {summary}")
                rows[n] = (nmb, bare)
                print(f"  grade {n:5d} at {latency * 1000:3.0f} ms: nmb {nmb['wall']:6.2f} s "
                      f"(cpu {nmb['cpu']:5.2f} s, {nmb['mib']:4.0f} MiB)  bare {bare['wall']:6.2f} s "
                      f"(cpu {bare['cpu']:5.2f} s, {bare['mib']:4.0f} MiB)  throughput ratio "
                      f"{bare['wall'] / nmb['wall']:.3f}", flush=True)
            if len(counts) > 1:
                a, b = counts[0], counts[-1]
                print(f"  peak memory {b} vs {a} responses: "
                      f"{rows[b][0]['mib'] / rows[a][0]['mib']:.2f}x (goal within 1.25x); "
                      f"time exponent {exponent([a, b], [rows[a][0]['wall'], rows[b][0]['wall']])}",
                      flush=True)


def _first_body(db: str) -> dict:
    from sqlmodel import Session, select

    from db.engine import engine_for
    from db.models import GraderConfig, Response
    from db.rubrics import rubric_by_hash
    from grading.grader import prepare

    with Session(engine_for(db)) as s:
        config = s.exec(select(GraderConfig)).first()
        response = s.exec(select(Response).order_by(Response.response_id)).first()
        return prepare(s, config, rubric_by_hash(s, config.rubric_hash), response).request.body()


def main() -> None:
    sizes = [float(x) for x in os.environ.get("NMB_BENCH_SIZES", "0.25,1,4").split(",")]
    counts = [int(x) for x in os.environ.get("NMB_BENCH_GRADE", "1000,4000").split(",")]
    print(f"{_load()}; {os.cpu_count()} cores", flush=True)
    with tempfile.TemporaryDirectory(prefix="nmb-bench-scale-") as tmp:
        print("grading (concurrency 64):", flush=True)
        grade_section(counts, Path(tmp))
        print("exam answers (1x study):", flush=True)
        exam_section(Path(tmp))
        scale_section(sizes, Path(tmp))
    print(_load(), flush=True)


if __name__ == "__main__":
    main()
