"""The grader end to end: real `openai` client, local OpenAI-compatible server, real database."""

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import func
from sqlmodel import Session, select

from cli import main as nmb
from db.engine import engine_for
from db.models import (
    GraderCache,
    GraderConfig,
    GraderFailure,
    GraderRun,
    GraderScore,
    Response,
    Task,
)
from errors import UserError
from grading.config import GraderSettings, load_settings, store_config
from grading.grader import estimate, grade, grades_key
from tests.factories import make_study
from tests.llm.run_ends import (
    check_only_abandoned_runs_are_marked,
    ctrl_c_reaches_children,
    signal_mid_run,
)
from tests.openai_server import OpenAIServer

SECRET = "sk-test-DO-NOT-LEAK-1234567890"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def server():
    with OpenAIServer(retry_after=0.1, slow_seconds=3.0) as srv:
        yield srv


def _config(s: Session, srv: OpenAIServer) -> int:
    row = store_config(s, GraderSettings(base_url=srv.base_url))
    s.commit()
    return row.id


def _count(s: Session, table) -> int:
    return s.exec(select(func.count()).select_from(table)).one()


@pytest.mark.slow
def test_faults_survived_and_rerun_finishes(database_url: str, server: OpenAIServer) -> None:
    """Each fault is tied to one task's prompt, once, so which request meets it does not depend
    on timing or load; the timeout is far above the local server's latency."""
    with Session(engine_for(database_url), expire_on_commit=False) as s:
        rids = make_study(s, n_tasks=6)
        cid = _config(s, server)
        for task, fault in enumerate(("429:0.2", "500", "truncated", "badschema")):
            server.inject_when(f"Prompt {task}", fault, times=1)  # survived: a retry or re-ask
        server.inject_when("Prompt 4", "500")  # task 4's two responses fail every time
        first = grade(s, config_id=cid, concurrency=4, api_key=SECRET, timeout=30.0,
                      trust_base_url=server.base_url,
                      max_reasks=1, max_retries=2)
        assert first.items == len(rids) == 12
        assert first.graded + first.failed == 12
        assert first.failed == 2
        failures = s.exec(select(GraderFailure)).all()
        assert {f.response_id for f in failures} == {r for r in rids if r.startswith("r4-")}
        assert all("500" in f.reason for f in failures)
        server.clear_faults()
        sent_before = len(server.chat_requests())
        second = grade(s, config_id=cid, trust_base_url=server.base_url, concurrency=4, api_key=SECRET)
        assert (second.items, second.graded, second.failed) == (2, 2, 0)
        assert len(server.chat_requests()) == sent_before + 2
        assert _count(s, GraderFailure) == 0
        assert _count(s, GraderScore) == 12
        third = grade(s, config_id=cid, trust_base_url=server.base_url, api_key=SECRET)
        assert third.items == 0 and len(server.chat_requests()) == sent_before + 2
        for g in s.exec(select(GraderScore)):
            assert g.system_fingerprint == "fp_test1" and g.prompt_tokens > 0


@pytest.mark.slow
def test_cache_answers_identical_requests(sqlite_url: str, server: OpenAIServer) -> None:
    with Session(engine_for(sqlite_url), expire_on_commit=False) as s:
        make_study(s, n_tasks=3)
        cid = _config(s, server)
        grade(s, config_id=cid, trust_base_url=server.base_url, api_key=SECRET)
        sent = len(server.chat_requests())
        s.exec(GraderScore.__table__.delete())  # forget the grades, keep the cache
        s.commit()
        again = grade(s, config_id=cid, trust_base_url=server.base_url, api_key=SECRET)
        assert again.graded == again.from_cache == 6
        assert len(server.chat_requests()) == sent
        assert _count(s, GraderCache) == 6


@pytest.mark.slow
def test_an_unpriced_models_run_costs_unknown_never_zero(database_url: str,
                                                         server: OpenAIServer) -> None:
    """Before: a grader run of a model missing from the price table recorded $0.0000, as a
    collection run does not (docs/results.md: unknown, never 0)."""
    from grading.runs import history

    with Session(engine_for(database_url), expire_on_commit=False) as s:
        make_study(s, n_tasks=2)
        cid = store_config(s, GraderSettings(model="test-grader-2026-01-01",
                                             base_url=server.base_url)).id
        s.commit()
        first = grade(s, config_id=cid, trust_base_url=server.base_url, api_key=SECRET)
        assert first.graded == 4 and first.prompt_tokens > 0 and first.cost_usd is None
        assert s.get(GraderRun, first.run_id).cost_usd is None
        assert history(s)[0].row()["cost (USD)"] == "unknown"
        s.exec(GraderScore.__table__.delete())  # forget the grades, keep the cache
        s.commit()
        cached = grade(s, config_id=cid, trust_base_url=server.base_url, api_key=SECRET)
        assert cached.from_cache == 4 and cached.cost_usd == 0.0  # nothing was sent
        priced = store_config(s, GraderSettings(base_url=server.base_url)).id  # gpt-4o's price
        s.commit()
        assert grade(s, config_id=priced, trust_base_url=server.base_url,
                     api_key=SECRET).cost_usd > 0


@pytest.mark.slow
def test_estimate_and_the_grades_key_follow_the_study(sqlite_url: str, server: OpenAIServer) -> None:
    with Session(engine_for(sqlite_url), expire_on_commit=False) as s:
        make_study(s, n_tasks=3)
        cid = _config(s, server)
        before, key = estimate(s, config_id=cid), grades_key(s, config_id=cid)
        assert (before.items, before.cached) == (6, 0) and before.prompt_tokens > 0
        assert grades_key(s, config_id=cid) == key  # nothing changed
        grade(s, config_id=cid, trust_base_url=server.base_url, api_key=SECRET, limit=2)
        assert estimate(s, config_id=cid).items == 4
        assert grades_key(s, config_id=cid) != key
        key = grades_key(s, config_id=cid)
        s.exec(GraderScore.__table__.delete())  # forget the grades, keep the cache
        s.commit()
        assert grades_key(s, config_id=cid) != key
        assert (estimate(s, config_id=cid).items, estimate(s, config_id=cid).cached) == (6, 2)


@pytest.mark.slow
def test_identical_requests_in_one_run_are_sent_once(sqlite_url: str, server: OpenAIServer) -> None:
    with Session(engine_for(sqlite_url), expire_on_commit=False) as s:
        make_study(s, n_tasks=3)
        s.exec(Response.__table__.update().values(text="The same answer."))
        s.commit()
        out = grade(s, config_id=_config(s, server), trust_base_url=server.base_url, api_key=SECRET)
        assert (out.graded, out.from_cache) == (6, 3)
        assert len(server.chat_requests()) == 3


def test_grading_streams_in_bounded_batches_with_the_same_grades(
        sqlite_url: str, server: OpenAIServer, monkeypatch) -> None:
    """Pages of 4 rows and 3 slots grade as one page with 64 slots (the whole study built at
    once, as before issue 47) does: the same requests (`prepare`'s hashes), grades, counts and
    requests sent, identical requests sent once across pages. Never more than 3 requests are
    built and not yet stored, and `limit` reads the texts of no more responses than it grades
    (before: every pending row)."""
    from db.models import AuditLog
    from grading import grader
    from grading.grader import prepare

    def graded(s: Session) -> dict:
        return {g.response_id: (g.request_hash, g.correct_diagnosis, g.overall, g.criteria,
                                g.error_tags) for g in s.exec(select(GraderScore))}

    texts_read, built, stored, most = [], [0], [0], [0]
    real_build = grader._Builder.__call__

    def build(self, row):  # counts requests built and not yet stored
        built[0] += 1
        most[0] = max(most[0], built[0] - stored[0])
        return real_build(self, row)

    monkeypatch.setattr(grader._Builder, "__call__", build)
    with Session(engine_for(sqlite_url), expire_on_commit=False) as s:
        make_study(s, n_tasks=12, samples=2)  # 48 responses
        s.exec(Response.__table__.update().where(Response.task_id.in_(["task1", "task5"]))
               .values(text="The same answer."))  # 4 identical requests per task
        s.commit()
        cid = _config(s, server)
        real_exec = s.exec

        def exec_(statement, *args, **kwargs):  # the response texts each page query reads
            result = real_exec(statement, *args, **kwargs)
            sql = str(statement)
            if "response.text" in sql and "JOIN" not in sql:
                rows = result.all()
                texts_read.append(len(rows))
                return _Rows(rows)
            return result

        monkeypatch.setattr(s, "exec", exec_)
        monkeypatch.setattr(grader, "PAGE", 4)
        first = grade(s, config_id=cid, trust_base_url=server.base_url, api_key=SECRET,
                      concurrency=3, limit=5, progress=lambda done, n: stored.__setitem__(0, done))
        assert (first.items, first.graded) == (5, 5) and sum(texts_read) == 5
        rest = grade(s, config_id=cid, trust_base_url=server.base_url, api_key=SECRET,
                     concurrency=3, progress=lambda done, n: stored.__setitem__(0, 5 + done))
        assert most[0] <= 3 and built[0] == 48
        streamed, sent = graded(s), len(server.chat_requests())
        config = s.get(GraderConfig, cid)
        rubric = grader.rubric_by_hash(s, config.rubric_hash)
        assert {rid: g[0] for rid, g in streamed.items()} == {
            r.response_id: prepare(s, config, rubric, r).request_hash
            for r in s.exec(select(Response))}
        audit = [a.detail["n"] for a in s.exec(select(AuditLog)
                                               .where(AuditLog.action == "grader.run"))]
        s.exec(GraderScore.__table__.delete())
        s.exec(GraderCache.__table__.delete())
        s.commit()
        monkeypatch.setattr(grader, "PAGE", 500)
        whole = grade(s, config_id=cid, trust_base_url=server.base_url, api_key=SECRET,
                      concurrency=64)
        assert graded(s) == streamed
        assert (whole.graded, whole.from_cache, whole.failed) == (
            first.graded + rest.graded, first.from_cache + rest.from_cache, 0) == (48, 6, 0)
        assert len(server.chat_requests()) - sent == sent == 42
        assert audit == [5, 43]


class _Rows(list):
    """Rows already read, as `Session.exec` returns them."""

    def all(self) -> list:
        return list(self)


@pytest.mark.slow
@pytest.mark.parametrize("fault", ["slow:1", "trickle:60"])
def test_timeouts_end_as_failures(sqlite_url: str, server: OpenAIServer, fault: str) -> None:
    """`timeout` bounds each request as a whole, also when the server trickles its answer."""
    with Session(engine_for(sqlite_url), expire_on_commit=False) as s:
        make_study(s, n_tasks=1)
        cid = _config(s, server)
        server.inject_when("Prompt 0", fault)
        out = grade(s, config_id=cid, trust_base_url=server.base_url, api_key=SECRET, timeout=0.3,
                    max_retries=1)
        assert out.failed == 2 and out.graded == 0
        reason = s.exec(select(GraderFailure.reason)).first()
        assert "time" in reason.lower()


@pytest.mark.slow
def test_batch_api(sqlite_url: str) -> None:
    with OpenAIServer(batch_polls=1) as srv, Session(engine_for(sqlite_url),
                                                     expire_on_commit=False) as s:
        make_study(s, n_tasks=3)
        cid = _config(s, srv)
        out = grade(s, config_id=cid, trust_base_url=srv.base_url, api_key=SECRET, batch=True,
                    poll_interval=0.05)
        assert (out.graded, out.failed) == (6, 0)
        assert not srv.chat_requests() and len(srv.batch_lines) == 6


@pytest.mark.slow
def test_a_batch_result_file_refused_stores_nothing(sqlite_url: str) -> None:
    """A result file whose second line is over the line cap: one line naming the file and the
    line, no grade nor failure stored, the run ends interrupted; the next run grades all."""
    from llm.batch_file import MAX_LINE_BYTES

    big = b'{"custom_id": "x", "pad": "' + b"a" * MAX_LINE_BYTES + b'"}\n'
    with OpenAIServer() as srv, Session(engine_for(sqlite_url), expire_on_commit=False) as s:
        make_study(s, n_tasks=2)
        cid = _config(s, srv)
        srv.edit_batch_file = lambda data: data.replace(b"\n", b"\n" + big, 1)
        with pytest.raises(UserError, match=r"^Batch API result file file-test2 refused: line 2 "
                           r"is longer than 9 MiB \(the cap on one line\)"):
            grade(s, config_id=cid, trust_base_url=srv.base_url, api_key=SECRET, batch=True,
                  poll_interval=0.01)
        assert _count(s, GraderScore) == _count(s, GraderFailure) == 0
        assert s.exec(select(GraderRun.status)).all() == ["interrupted"]
        srv.edit_batch_file = None
        out = grade(s, config_id=cid, trust_base_url=srv.base_url, api_key=SECRET, batch=True,
                    poll_interval=0.01)
        assert (out.graded, out.failed) == (4, 0)


@pytest.mark.slow
def test_cli_grade_json_summary_and_no_key_leak(nmb_home: Path, server: OpenAIServer) -> None:
    """A partial run exits 0, as before, and says on stderr why its items failed, grouped with
    how many each reason failed (it printed no reason)."""
    from db.engine import session, upgrade

    upgrade()
    with session() as s:
        make_study(s, n_tasks=4)
    server.inject_when("Prompt 2", "400")  # each of the task's 2 responses, every time
    server.inject_when("Prompt 3", "badschema")  # every answer, re-asks included
    env = {**os.environ, "OPENAI_API_KEY": SECRET}
    out = subprocess.run([sys.executable, "-m", "cli", "grade", "--base-url", server.base_url,
                          "--concurrency", "2", "--json"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout.strip().splitlines()[-1])
    assert set(summary) == {"run_id", "items", "graded", "failed", "from_cache", "prompt_tokens",
                            "completion_tokens", "cost_usd"}
    assert (summary["graded"], summary["failed"]) == (4, 4)
    [why] = out.stderr.strip().splitlines()
    assert why.startswith("nmb: run 1 partial: 4 of 8 failed: "), why
    assert "HTTP 400: Error code: 400 - Invalid request (test server). (2 items)" in why, why
    assert "(after 3 answer(s))" not in why and why.endswith(" (2 items)"), why
    status = json.loads(subprocess.run([sys.executable, "-m", "cli", "status", "--json"], cwd=ROOT,
                                       env=env, capture_output=True, text=True).stdout)
    assert status["grader_scores"] == 4 and status["grader_failures"] == 4
    assert SECRET not in out.stdout + out.stderr
    for path in nmb_home.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path
    assert all(r.headers.get("authorization") == f"Bearer {SECRET}" for r in server.chat_requests())


@pytest.mark.parametrize("argv", [
    ["--timeout", "nan"], ["--timeout", "-5"], ["--timeout", "inf"], ["--timeout", "0"],
    ["--concurrency", "0"], ["--concurrency", "1.5"], ["--limit", "-1"], ["--limit", "0"],
    ["--base-url", "http://[::1"], ["--base-url", "ftp://127.0.0.1/v1"],
    ["--base-url", "127.0.0.1:8000"], ["--base-url", "http:///v1"],
    ["--base-url", "http://127.0.0.1:99999/v1"], ["--base-url", "http://user:pw@host/v1"],
    ["--base-url", "http://" + "a" * 64 + ".example/v1"], ["--base-url", "http://a..b/v1"],
    ["--base-url", "http://" + "a." * 127 + "a/v1"],
    ["--config", "bad-url.toml"]])
def test_bad_grade_options_are_one_line_and_change_nothing(
        sqlite_url: str, server: OpenAIServer, tmp_path: Path, capsys, monkeypatch,
        argv: list[str]) -> None:
    (tmp_path / "bad-url.toml").write_text('base_url = "http://[::1"\n')
    monkeypatch.chdir(tmp_path)
    with Session(engine_for(sqlite_url)) as s:
        make_study(s, n_tasks=1)
    assert nmb(["grade", *argv]) == 2
    err = capsys.readouterr().err
    named = "http://[::1" if argv[0] == "--config" else argv[-1]  # the value, wherever from
    assert err.count("\n") == 1 and "Traceback" not in err and named in err
    with Session(engine_for(sqlite_url)) as s:
        assert _count(s, GraderConfig) == _count(s, GraderRun) == 0
    assert not server.requests


@pytest.mark.slow
def test_a_run_whose_process_is_gone_is_marked_interrupted(database_url: str) -> None:
    """Only runs of this host whose process has ended are marked: not a live process's (nor a
    live process that reuses a dead run's pid), nor another host's, nor one with no owner."""
    check_only_abandoned_runs_are_marked(database_url, lambda s: GraderRun(
        config_id=store_config(s, GraderSettings()).id, items="all"))


def test_config_is_content_addressed(sqlite_url: str, tmp_path: Path) -> None:
    """(and a config that names no rubric grades with the one the study's experts score with:
    the default's for a new study, neurology-v1 for a study assigned with it)"""
    from db.raters.assignments import assign
    from db.rubrics import ensure_rubric
    from rubric import DEFAULT_RUBRIC, load_rubric

    with Session(engine_for(sqlite_url)) as s:
        a = store_config(s, GraderSettings())
        b = store_config(s, GraderSettings(name="same settings, another name"))
        c = store_config(s, GraderSettings(temperature=0.5))
        assert a.id == b.id != c.id
        assert a.rubric_hash == load_rubric(DEFAULT_RUBRIC).content_hash
        make_study(s, n_tasks=1)
        v1 = ensure_rubric(s, "neurology-v1").content_hash
        assign(s, rubric_hash=v1, raters=["expert1"], overlap=1, selection="all", seed=0)
        assert v1 != a.rubric_hash and store_config(s, GraderSettings()).rubric_hash == v1
    bad = tmp_path / "g.toml"
    bad.write_text('model = "gpt-4o-2024-08-06"\ntemprature = 0\n')
    with pytest.raises(UserError, match="unknown field 'temprature'"):
        load_settings(bad)


@pytest.mark.parametrize("content, refusal", [
    (b"\xf6\x00binary", "is not UTF-8 text"),
    (b"a = " + b"[" * 20000 + b"]" * 20000, "not valid TOML: nested too deeply"),
    (b"x" * (64 * 2**10 + 1), "is larger than 65,536 bytes"),
    (b'"' + b"k" * 5000 + b'" = 1', "unknown field 'kkkk"),
    (b'temperature = "' + b"t" * 5000 + b'"', "temperature must be a number, got 'tttt"),
    (b"max_tokens = true", "max_tokens must be an integer, got True"),
    (b'vision = "yes"', "vision must be true or false, got 'yes'"),
    (b"rubric = 5", "rubric must be text, got 5"),
    (b'name = "my\\ngrader"', "grader config name 'my\\ngrader' contains U+000A"),
])
def test_a_config_file_that_is_not_a_config_is_one_short_line(tmp_path: Path, content: bytes,
                                                              refusal: str) -> None:
    """`nmb grade --config FILE` (untrusted like any file): a binary, deeply nested, endless or
    huge file, a long key or value, or a value of the wrong type, is one line of at most a few
    hundred characters."""
    bad = tmp_path / "g.toml"
    bad.write_bytes(content)
    with pytest.raises(UserError) as refused:
        load_settings(bad)
    assert refusal in str(refused.value) and len(str(refused.value)) < 400, str(refused.value)[:500]
    with pytest.raises(UserError, match="larger than 65,536 bytes"):
        load_settings(Path("/dev/zero"))


def _alive_in_group(pgid: int) -> list[int]:
    """Pids of the processes of group `pgid` that still run (zombies not counted)."""
    alive = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # ended meanwhile
        if int(fields[2]) == pgid and fields[0] != "Z":
            alive.append(int(stat.parent.name))
    return alive


@pytest.mark.slow
def test_interrupted_run_resumes_without_duplicates(nmb_home: Path) -> None:
    """Ctrl-C in the middle of `nmb grade`, sent as a terminal does (to the whole process group):
    finished items are kept, nothing is left running, a re-run does the rest."""
    import signal
    import time

    from db.engine import session, upgrade

    upgrade()
    with session() as s:
        make_study(s, n_tasks=10)  # 20 responses
    with OpenAIServer(latency=0.5) as srv:
        env = {**os.environ, "OPENAI_API_KEY": SECRET}
        cmd = [sys.executable, "-m", "cli", "grade", "--base-url", srv.base_url,
               "--concurrency", "2", "--json"]
        with ctrl_c_reaches_children():
            proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True, start_new_session=True)
        deadline = time.monotonic() + 60
        while len(srv.chat_requests()) < 6 and time.monotonic() < deadline:
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, err
        assert "Traceback" not in err
        assert _alive_in_group(proc.pid) == []
        with session() as s:
            kept = s.exec(select(func.count()).select_from(GraderScore)).one()
        assert 0 < kept < 20
        out = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        summary = json.loads(out.stdout.strip().splitlines()[-1])
        assert summary["items"] == 20 - kept and summary["failed"] == 0
    with session() as s:
        rows = s.exec(select(GraderScore.response_id)).all()
    assert len(rows) == len(set(rows)) == 20


@pytest.mark.slow
def test_finished_items_are_committed_while_a_slow_request_is_out(database_url: str) -> None:
    """A hard kill (SIGKILL) loses at most `COMMIT_EVERY` of work, even when nothing else
    finishes, and leaves no process behind; the next `nmb grade` marks the killed run
    "interrupted" and grades the rest (SQLite and PostgreSQL)."""
    import time

    from db.engine import session

    with session() as s:
        make_study(s, n_tasks=3)  # 6 responses, 2 of them for "Prompt 1"
    with OpenAIServer(latency=0.0) as srv:
        srv.inject_when("Prompt 1", "slow:30")
        cmd = [sys.executable, "-m", "cli", "grade", "--base-url", srv.base_url,
               "--concurrency", "6", "--json"]
        proc = subprocess.Popen(cmd, cwd=ROOT, env={**os.environ, "OPENAI_API_KEY": SECRET},
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        try:
            deadline, kept = time.monotonic() + 20, 0
            while kept < 4 and time.monotonic() < deadline:
                time.sleep(0.1)
                with session() as s:
                    kept = s.exec(select(func.count()).select_from(GraderScore)).one()
            assert proc.poll() is None  # the two slow requests are still out
            assert _alive_in_group(proc.pid) == [proc.pid]
        finally:
            proc.kill()
            proc.wait()
        deadline = time.monotonic() + 20  # well before the slow answers (30 s) come
        while _alive_in_group(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _alive_in_group(proc.pid) == []
        assert kept == 4
        with session() as s:
            assert s.exec(select(GraderRun.status)).all() == ["running"]
        srv.clear_faults()
        out = subprocess.run(cmd, cwd=ROOT, env={**os.environ, "OPENAI_API_KEY": SECRET},
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
    with session() as s:
        runs = s.exec(select(GraderRun.status, GraderRun.graded).order_by(GraderRun.id)).all()
    assert runs == [("interrupted", 4), ("finished", 2)]


@pytest.mark.slow
def test_a_terminated_grade_ends_its_run_as_interrupted(nmb_home: Path) -> None:
    """SIGTERM (as `kill` or a service manager sends it) to a real `nmb grade` while two
    requests hang: the run ends itself as interrupted, keeping what it finished; one line,
    exit 143."""
    import signal

    from db.engine import session, upgrade

    upgrade()
    with session() as s:
        make_study(s, n_tasks=3)  # 6 responses, 2 of them for "Prompt 1"

    def graded() -> int:
        with session() as s:
            return _count(s, GraderScore)

    with OpenAIServer(latency=0.0) as srv:
        srv.inject_when("Prompt 1", "slow:60")
        code, err = signal_mid_run(["grade", "--base-url", srv.base_url, "--concurrency", "6",
                                    "--json"], graded, 4, signal.SIGTERM,
                                   env={"OPENAI_API_KEY": SECRET})
    assert (code, err) == (143, "nmb: terminated\n")
    with session() as s:
        run = s.exec(select(GraderRun)).one()
    assert (run.status, run.graded, run.failed) == ("interrupted", 4, 0)
    assert run.finished_at is not None


@pytest.mark.slow
def test_two_concurrent_runs_store_each_item_once(database_url: str) -> None:
    import threading

    eng = engine_for(database_url)
    with OpenAIServer(latency=0.2) as srv, Session(eng, expire_on_commit=False) as s:
        make_study(s, n_tasks=6)
        cid = _config(s, srv)
        results, errors = [], []

        def run() -> None:
            try:
                with Session(eng, expire_on_commit=False) as own:
                    results.append(grade(own, config_id=cid, trust_base_url=srv.base_url,
                                         concurrency=4, api_key=SECRET))
            except BaseException as e:  # noqa: BLE001 - reported below
                errors.append(e)

        threads = [threading.Thread(target=run) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        rows = s.exec(select(GraderScore.response_id)).all()
        assert len(rows) == len(set(rows)) == 12
        assert sum(r.graded for r in results) == 12  # each item counted by the run that kept it


def test_vision_grader_sends_key_slices(demo_study: Path, server: OpenAIServer) -> None:
    from db.engine import session

    with session() as s:
        row = store_config(s, GraderSettings(base_url=server.base_url, vision=True))
        s.commit()
        out = grade(s, config_id=row.id, trust_base_url=server.base_url, api_key=SECRET, limit=1)
    assert out.graded == 1
    content = server.chat_requests()[0].body["messages"][1]["content"]
    images = [p for p in content if p["type"] == "image_url"]
    assert images and all(p["image_url"]["url"].startswith("data:image/png;base64,")
                          for p in images)


# ---------------------------------------------------------------- whom the key goes to


@pytest.mark.slow
def test_a_config_files_base_url_gets_nothing_until_named(
        sqlite_url: str, tmp_path: Path, capsys, monkeypatch) -> None:
    """A config file naming server B, OPENAI_API_KEY set, no --base-url: B receives no request
    at all (so no Authorization header), nothing is stored, one line names B and the flag; the
    user's own OPENAI_BASE_URL (A) is no licence for B; `--trust-base-url` must name B exactly;
    `--base-url A` overrides the file; with the naming flag B is graded."""
    with OpenAIServer() as a, OpenAIServer() as b:
        cfg = tmp_path / "shared_config.toml"
        cfg.write_text(f'base_url = "{b.base_url}"\n')
        with Session(engine_for(sqlite_url)) as s:
            make_study(s, n_tasks=1)
        monkeypatch.setenv("OPENAI_API_KEY", SECRET)
        monkeypatch.setenv("OPENAI_BASE_URL", a.base_url)
        capsys.readouterr()
        for extra in ([], ["--trust-base-url", a.base_url],
                      ["--trust-base-url", b.base_url + "/"]):
            assert nmb(["grade", "--config", str(cfg), *extra]) == 2
            err = capsys.readouterr().err
            assert err.count("\n") == 1 and "Traceback" not in err and b.base_url in err, err
        assert "--trust-base-url" in err
        with Session(engine_for(sqlite_url)) as s:
            assert _count(s, GraderConfig) == _count(s, GraderRun) == 0
        assert b.requests == [] and a.requests == []
        assert nmb(["grade", "--config", str(cfg), "--base-url", a.base_url]) == 0
        assert len(a.chat_requests()) == 2 and b.requests == []
        assert nmb(["grade", "--config", str(cfg), "--trust-base-url", b.base_url]) == 0
        assert len(b.chat_requests()) == 2
        assert all(r.headers.get("authorization") == f"Bearer {SECRET}" for r in b.requests)


def test_a_key_sent_over_plain_http_to_another_machine_is_warned_of(
        sqlite_url: str, monkeypatch, capsys) -> None:
    """Before: `--base-url http://10.0.0.5:8000/v1` sent OPENAI_API_KEY across the network
    unencrypted without a word. A loopback server, https, or no key set: nothing to say."""
    from llm.grader_request import plain_http_warning

    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    for url in (None, "https://llm.example.org/v1", "http://127.0.0.1:8000/v1",
                "http://[::1]:8000/v1", "http://localhost:8000/v1",
                "http://[::1", "http://10.0.0.5/v1\x1b[2J"):  # refused elsewhere, in one line
        assert plain_http_warning(url, SECRET) is None, url
    assert plain_http_warning("http://10.0.0.5:8000/v1", SECRET).startswith(
        "http://10.0.0.5:8000/v1 is plain http to another machine: OPENAI_API_KEY")
    capsys.readouterr()
    assert nmb(["grade", "--base-url", "http://10.0.0.5:8000/v1"]) == 0  # nothing to grade
    err = capsys.readouterr().err
    assert "nmb: warning: http://10.0.0.5:8000/v1 is plain http to another machine" in err, err
    assert plain_http_warning("http://10.0.0.5:8000/v1", None) is None  # no key to expose


@pytest.mark.slow
def test_a_stored_configs_base_url_needs_the_users_word(sqlite_url: str, monkeypatch) -> None:
    """`grade` (the page's and the CLI's path) refuses a stored config's address before any run
    row or request, unless it is trusted by name or is the user's OPENAI_BASE_URL."""
    with OpenAIServer() as srv, Session(engine_for(sqlite_url), expire_on_commit=False) as s:
        make_study(s, n_tasks=1)
        cid = _config(s, srv)
        with pytest.raises(UserError, match=r"grader config 1 sends to http://127\.0\.0\.1:\d+/v1"):
            grade(s, config_id=cid, api_key=SECRET)
        with pytest.raises(UserError, match="--trust-base-url"):
            grade(s, config_id=cid, api_key=SECRET, trust_base_url="http://127.0.0.1:1/v1")
        assert srv.requests == [] and _count(s, GraderRun) == 0
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        assert grade(s, config_id=cid, api_key=SECRET).graded == 2


@pytest.mark.slow
def test_an_empty_model_or_base_url_is_refused(sqlite_url: str, capsys) -> None:
    with Session(engine_for(sqlite_url)) as s:
        make_study(s, n_tasks=1)
    for argv in (["--model", ""], ["--model", "  "], ["--base-url", ""]):
        assert nmb(["grade", *argv]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and argv[0] in err and "Traceback" not in err
    with Session(engine_for(sqlite_url)) as s:
        assert _count(s, GraderConfig) == _count(s, GraderRun) == 0


@pytest.mark.slow
def test_a_justification_longer_than_an_answer_is_not_stored(sqlite_url: str,
                                                             server: OpenAIServer) -> None:
    """A grader whose justification runs to 300,000 characters (7 MiB fits the body cap):
    stored whole with each grade before. Held to what the study stores of a model's answer
    (200,000 characters): invalid, asked again, then the item's failure."""
    from tests.openai_server import _canonical, _schema_of, sample_document

    def long_winded(body: dict) -> str:
        seed = int(hashlib.sha256(_canonical(body).encode()).hexdigest()[:8], 16)
        return json.dumps(sample_document(_schema_of(body), seed) | {"justification": "a" * 300_000})

    server.answer = long_winded
    with Session(engine_for(sqlite_url), expire_on_commit=False) as s:
        make_study(s, n_tasks=1)
        cid = _config(s, server)
        summary = grade(s, config_id=cid, trust_base_url=server.base_url, api_key=SECRET)
        assert (summary.graded, summary.failed) == (0, 2)
        reasons = [f.reason for f in s.exec(select(GraderFailure))]
    assert all("justification is 300,000 characters, more than the limit of 200,000" in r
               for r in reasons), reasons


# ---------------------------------------------------------------- hostile servers

HOSTILE = {  # fault of task i's two responses -> what their recorded failure says
    "endless": "larger than 8 MiB",
    "huge_json": "larger than 8 MiB",
    "html": "text/html body, not JSON",
    "notjson": "body is not JSON",
    "wrongtype": "malformed response",
    "deep": "body of more than 10,000 JSON values",
    "dense": "body of more than 10,000 JSON values",
    "gzip:16": "compressed response body",
    "redirect": "redirect to 'http://127.0.0.1:",
    "trickle:600": "timeout",
}


def hostile_study(s: Session) -> None:
    """One task per hostile fault and one more, each prompt ending in a full stop ("Prompt 1."
    is not a part of "Prompt 10.")."""
    make_study(s, n_tasks=len(HOSTILE) + 1)
    for task in s.exec(select(Task)):
        task.prompt += "."
    s.commit()


def inject_hostile(srv: OpenAIServer, elsewhere: OpenAIServer) -> dict[str, str]:
    """Tie each hostile fault to one task of `hostile_study` ("Prompt 0."..."Prompt 9."); the
    last task is answered normally. Returns {"Prompt i": expected reason}."""
    expected = {}
    for i, (fault, reason) in enumerate(HOSTILE.items()):
        spec = f"redirect:{elsewhere.port}" if fault == "redirect" else fault
        srv.inject_when(f"Prompt {i}.", spec)
        expected[f"Prompt {i}"] = reason
    return expected


@pytest.mark.slow
def test_a_hostile_grader_server_fails_items_not_the_run(nmb_home: Path) -> None:
    """Endless, huge, HTML, non-JSON, wrongly typed, deeply nested, dense (millions of values
    within the byte cap), compressed, redirected and trickling answers: a real `nmb grade`
    stays under 500 MB, exits 0 with each item recorded as failed with its reason, prints no
    traceback, and the redirect target hears nothing."""
    from db.engine import session, upgrade
    from tests.peak_memory import run_measured

    upgrade()
    with session() as s:
        hostile_study(s)
    with OpenAIServer() as srv, OpenAIServer() as elsewhere:
        expected = inject_hostile(srv, elsewhere)
        out, peak = run_measured(
            [sys.executable, "-m", "cli", "grade", "--base-url", srv.base_url, "--timeout", "2",
             "--concurrency", "20", "--json"], nmb_home / "peak", cwd=ROOT,
            env={**os.environ, "OPENAI_API_KEY": SECRET}, capture_output=True, text=True,
            timeout=300)
        assert elsewhere.requests == []
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr
    assert peak < 500 * 2**20, f"peak {peak / 2**20:.0f} MiB"
    summary = json.loads(out.stdout.strip().splitlines()[-1])
    assert (summary["graded"], summary["failed"]) == (2, 2 * len(HOSTILE))
    with session() as s:
        reasons = {f.response_id: f.reason for f in s.exec(select(GraderFailure))}
    for i, reason in enumerate(expected.values()):
        for rid in (r for r in reasons if r.startswith(f"r{i}-")):
            assert reason in reasons[rid], (i, reasons[rid])
    assert len(reasons) == 2 * len(HOSTILE) and SECRET not in "".join(reasons.values())


@pytest.mark.slow
def test_many_endless_answers_at_once_stay_within_the_memory_bound(nmb_home: Path) -> None:
    """120 endless answers with 200 requests allowed out at once: each body alone may hold
    8 MiB (about 1 GB in all, 805 MB measured before the shared cap); the bodies being read
    share 128 MiB, so a real `nmb grade` stays under 500 MB and records each failure."""
    from db.engine import session, upgrade
    from tests.peak_memory import run_measured

    upgrade()
    with session() as s:
        make_study(s, n_tasks=60)
    with OpenAIServer() as srv:
        srv.inject_when("Prompt", "endless")
        out, peak = run_measured(
            [sys.executable, "-m", "cli", "grade", "--base-url", srv.base_url, "--timeout", "60",
             "--concurrency", "200", "--json"], nmb_home / "peak", cwd=ROOT,
            env={**os.environ, "OPENAI_API_KEY": SECRET}, capture_output=True, text=True,
            timeout=600)
    # nothing completed: exit 1 with the reasons (a run that completes nothing is a failure)
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    assert peak < 500 * 2**20, f"peak {peak / 2**20:.0f} MiB"
    summary = json.loads(out.stdout.strip().splitlines()[-1])
    assert (summary["graded"], summary["failed"]) == (0, 120)
    with session() as s:
        reasons = {f.reason for f in s.exec(select(GraderFailure))}
    assert any("being read at once hold more than 128 MiB" in r for r in reasons), reasons


@pytest.mark.slow
def test_cli_grade_against_a_closed_port_exits_1_with_the_reason(nmb_home: Path) -> None:
    """A run that grades nothing is not a success: exit 1 and, on stderr, why its items failed
    (here: nothing listens at the base URL)."""
    from db.engine import session, upgrade
    from tests.services import free_port

    upgrade()
    with session() as s:
        make_study(s, n_tasks=1)
    base_url = f"http://127.0.0.1:{free_port()}/v1"  # a port nobody listens on
    out = subprocess.run([sys.executable, "-m", "cli", "grade", "--base-url", base_url,
                          "--timeout", "5"], cwd=ROOT,
                         env={**os.environ, "OPENAI_API_KEY": SECRET},
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 1, out.stderr
    assert "0 graded (0 from cache), 2 failed of 2" in out.stdout
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith("nmb: run 1 graded nothing: 2 failed: connection error"), last
    assert "(2 items)" in last and "Traceback" not in out.stderr
