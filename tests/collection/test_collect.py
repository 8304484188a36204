"""Collecting a model's answers end to end: real `openai` client, the local OpenAI-compatible
server (real sockets), real database, real NIfTI images rendered by `imaging`."""

import hashlib
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from PIL import Image
from sqlalchemy import func
from sqlmodel import Session, select

from cli import main
from collection.collect import Selection, collect, estimate, failures, runs
from db.engine import engine_for, session
from db.models import (
    Case,
    CollectedResponse,
    CollectionFailure,
    CollectionRun,
    ModelCache,
    Response,
    Task,
)
from db.study.cases import case_series
from imaging import PLANES
from imaging.key_slices import render_key_slice
from imaging.picture import downscaled_png, sniff_file
from llm.model_request import TEMPLATE, TEMPLATE_VERSION, CollectSettings, template_hash
from tests.factories import make_study
from tests.llm.run_ends import (
    check_only_abandoned_runs_are_marked,
    ctrl_c_reaches_children,
    signal_mid_run,
)
from tests.openai_server import OpenAIServer, _text_answer

ROOT = Path(__file__).resolve().parents[2]
MODEL = "local-vlm-2026-01-01"


@pytest.fixture
def server():
    with OpenAIServer(retry_after=0.1) as srv:
        yield srv


def _expected_pngs(s: Session, case: Case) -> list[bytes]:
    """The case's key images made here, straight from `imaging`: the bundle's key slices, else
    three orthogonal middle slices of each volume; each picture (a stored PNG) downscaled."""
    series = case_series(s, case.case_id)
    paths = dict(series)
    pictures = [seq for seq, path in series if sniff_file(path)]
    wanted = ([(k["series"], k["plane"], k.get("index")) for k in case.key_slices]
              + [(seq, None, None) for seq in pictures] if case.key_slices else
              [(seq, plane, None) for seq in paths
               for plane in ([None] if seq in pictures else PLANES)])
    return [downscaled_png(paths[seq]) if plane is None else
            render_key_slice(paths[seq], plane, index).png for seq, plane, index in wanted]


def _first_user(body: dict) -> dict:
    return body["messages"][1]


def _case_of(body: dict, cases: list[Case]) -> Case:
    content = _first_user(body)["content"]
    first = content if isinstance(content, str) else content[0]["text"]
    return next(c for c in cases if first.startswith(f"# Case: {c.title}\n"))


def test_every_demo_task_collected_twice_as_the_exam_shows_it(demo_study: Path,
                                                              server: OpenAIServer) -> None:
    settings = CollectSettings(model=MODEL, base_url=server.base_url, samples=2)
    with session() as s:
        tasks = {t.task_id: t for t in s.exec(select(Task))}
        cases = list(s.exec(select(Case)))
        expected = {c.case_id: _expected_pngs(s, c) for c in cases}
        plan = estimate(s, settings)
        out = collect(s, settings, concurrency=4)
    assert any(c.key_slices for c in cases) and not all(c.key_slices for c in cases)
    assert (out.tasks, out.samples, out.items, out.collected, out.failed) == (12, 2, 24, 24, 0)
    sent = server.chat_requests()
    assert plan.requests == len(sent) and plan.images == out.image_count
    assert out.image_count == sum(len(r.images) for r in sent) > 0

    # image parts: PNGs of the key slices (the picture case's pictures), each after its caption
    pictured = [rec for rec in sent if _case_of(rec.body, cases).case_id == "syn-10"]
    assert pictured and all(
        [p["text"] for p in _first_user(rec.body)["content"] if p["type"] == "text"][1:4]
        == ["image 1 of 3: T1; T1: A axial, B coronal, C sagittal; arrow added by the curator:",
            "image 2 of 3: FLAIR, axial:", "image 3 of 3: T2, coronal:"] for rec in pictured)
    for rec in sent:
        case = _case_of(rec.body, cases)
        assert rec.images == expected[case.case_id]
        for png in rec.images:
            assert Image.open(io.BytesIO(png)).format == "PNG"
        parts = _first_user(rec.body)["content"]
        captions = [p["text"] for p, q in zip(parts, parts[1:], strict=False)
                    if q["type"] == "image_url"]
        assert len(captions) == len(rec.images)
        assert all(c.endswith(":") and (" slice " in c or c.startswith("image "))
                   for c in captions)
        task = parts[-1]["text"]
        assert task.startswith("# Task: ") and any(t.prompt in task for t in tasks.values())

    with session() as s:
        rows = s.exec(select(Response).where(Response.model == MODEL)).all()
        provenance = {p.response_id: p for p in s.exec(select(CollectedResponse))}
    assert sorted((r.task_id, r.sample) for r in rows) == sorted(
        (t, k) for t in tasks for k in (0, 1))
    for r in rows:
        task = tasks[r.task_id]
        assert r.source == "model" and r.user_id is None and r.blind_code.startswith("R-")
        p = provenance[r.response_id]
        assert (p.template_version, p.template_hash) == (TEMPLATE_VERSION, template_hash())
        assert len(p.request_hashes) == 1 + len(task.stages)
        assert p.image_sha256 == [hashlib.sha256(png).hexdigest()
                                  for png in expected[task.case_id]]
        if task.level != 3:
            assert r.turns is None
            continue
        # a real conversation: one answer per stage, the stages revealed in order
        assert len(r.turns) == len(task.stages) > 0
        last = next(rec.body for rec in sent if len(rec.body["messages"]) == 2 + 2 * len(
            task.stages) and _first_user(rec.body)["content"][-1]["text"].endswith(task.prompt +
            "\n\n" + TEMPLATE["multi_turn"]))
        said = [m["content"] for m in last["messages"][2:]]
        assert said[1::2] == [f"Stage {i + 2} revealed.\n\n{stage}"
                              for i, stage in enumerate(task.stages)]
        assert said[0::2] == [r.text, *r.turns[:-1]]
        assert r.turns[-1] == _text_answer(last)
        assert r.turns[-1].endswith(f"turn {1 + len(task.stages)}, "
                                    f"{len(expected[task.case_id])} images seen.")

    with session() as s:  # a re-run sends nothing
        again = collect(s, settings, concurrency=4)
    assert (again.items, again.already_collected, again.collected) == (0, 24, 0)
    assert len(server.chat_requests()) == len(sent)


def test_text_only_baseline_sends_no_image(sqlite_url: str, server: OpenAIServer) -> None:
    with Session(engine_for(sqlite_url), expire_on_commit=False) as s:
        make_study(s, n_tasks=3)
        out = collect(s, CollectSettings(model=MODEL, base_url=server.base_url, images="none"))
    assert (out.collected, out.image_count) == (3, 0)
    assert all(isinstance(r.body["messages"][1]["content"], str) for r in server.chat_requests())


def test_faults_end_collected_or_listed_as_failed(database_url: str,
                                                  server: OpenAIServer) -> None:
    """Each fault is tied to one task's prompt (or to the stage turns), so which request meets
    it does not depend on timing."""
    settings = CollectSettings(model=MODEL, base_url=server.base_url, samples=2)
    with Session(engine_for(database_url), expire_on_commit=False) as s:
        make_study(s, n_tasks=6)  # levels 1, 2, 3, 1, 2, 3
        server.inject_when("Prompt 0", "429:0.1", times=1)
        server.inject_when("Prompt 1", "500", times=1)
        server.inject_when("Prompt 2", "empty", times=1)
        server.inject_when("Stage 2 revealed", "429:0.1", times=2)
        server.inject_when("Prompt 3", "length")  # every time: cut answers are never stored
        server.inject_when("Prompt 4", "500")  # every time
        first = collect(s, settings, concurrency=3, max_retries=2, max_resends=1, timeout=30)
        assert (first.items, first.collected, first.failed) == (12, 8, 4)
        listed = failures(s, model=MODEL)
        assert {(f.task_id, f.sample) for f in listed} == {
            (t, k) for t in ("task3", "task4") for k in (0, 1)}
        reasons = {f.task_id: f.reason for f in listed}
        assert reasons["task3"].startswith("answer cut at the token limit")
        assert reasons["task4"].startswith("HTTP 500") and "gave up after 3 attempts" in (
            reasons["task4"])
        assert [f["task_id"] for f in first.failures] == ["task3", "task3", "task4", "task4"]
        server.clear_faults()
        second = collect(s, settings, concurrency=3)
        assert (second.items, second.collected, second.failed) == (4, 4, 0)
        assert failures(s, model=MODEL) == []
        n = s.exec(select(func.count()).select_from(Response).where(Response.model == MODEL))
        assert n.one() == 12
        assert [r.status for r in runs(s)] == ["finished", "finished"]


def test_cache_answers_a_request_sent_before(sqlite_url: str, server: OpenAIServer) -> None:
    settings = CollectSettings(model=MODEL, base_url=server.base_url, images="none")
    with Session(engine_for(sqlite_url), expire_on_commit=False) as s:
        make_study(s, n_tasks=3)
        collect(s, settings)
        sent = len(server.chat_requests())
        s.exec(CollectedResponse.__table__.delete())  # forget the answers, keep the cache
        s.exec(Response.__table__.delete().where(Response.model == MODEL))
        s.commit()
        again = collect(s, settings)
        assert (again.collected, again.from_cache, again.prompt_tokens) == (3, 3, 0)
        assert len(server.chat_requests()) == sent
        assert s.exec(select(func.count()).select_from(ModelCache)).one() == sent == 4


@pytest.mark.slow
def test_batch_api_in_rounds(sqlite_url: str) -> None:
    """Single-turn tasks in one batch; a level-3 task's stage turn in the next round, with the
    line that failed transiently."""
    with OpenAIServer(batch_polls=1) as srv, Session(engine_for(sqlite_url),
                                                     expire_on_commit=False) as s:
        make_study(s, n_tasks=3)
        srv.inject_when("Prompt 0", "500", times=1)
        out = collect(s, CollectSettings(model=MODEL, base_url=srv.base_url), batch=True,
                      poll_interval=0.05)
        assert (out.collected, out.failed) == (3, 0)
        assert not srv.chat_requests()
        assert len(srv.batches) == 2 and len(srv.batch_lines) == 3 + 2
        multi = s.exec(select(Response).where(Response.task_id == "task2")).all()
        assert [len(r.turns or []) for r in multi if r.model == MODEL] == [1]


@pytest.mark.slow
def test_two_concurrent_runs_store_each_item_once(database_url: str) -> None:
    import threading

    eng = engine_for(database_url)
    with OpenAIServer(latency=0.2) as srv, Session(eng, expire_on_commit=False) as s:
        make_study(s, n_tasks=6)
        settings = CollectSettings(model=MODEL, base_url=srv.base_url, samples=2,
                                   images="none")
        results, errors = [], []

        def run() -> None:
            try:
                with Session(eng, expire_on_commit=False) as own:
                    results.append(collect(own, settings, concurrency=4))
            except BaseException as e:  # noqa: BLE001 - reported below
                errors.append(e)

        threads = [threading.Thread(target=run) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not errors, errors
        rows = s.exec(select(Response.task_id, Response.sample)
                      .where(Response.model == MODEL)).all()
        assert len(rows) == len(set(rows)) == 12
        assert sum(r.collected for r in results) == 12  # each counted by the run that kept it
        assert s.exec(select(func.count()).select_from(CollectedResponse)).one() == 12


def _count(model: str = MODEL) -> int:
    with session() as s:
        return s.exec(select(func.count()).select_from(Response)
                      .where(Response.model == model)).one()


def _stop_when_collected(cmd: list[str], n: int, sig: int) -> tuple[int, str]:
    """Start `nmb collect`, send `sig` once `n` answers are stored; (return code, stderr)."""
    with ctrl_c_reaches_children():
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while _count() < n and time.monotonic() < deadline:
            time.sleep(0.05)
        os.killpg(proc.pid, sig)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
        proc.wait()
    return proc.returncode, err


@pytest.mark.slow
def test_interrupted_and_killed_runs_resume_without_duplicates(database_url: str) -> None:
    """Ctrl-C (SIGINT to the process group, as a terminal sends it), then SIGKILL, of a real
    `nmb collect` in the middle: what each committed stays, a re-run collects the rest and
    nothing twice (SQLite and PostgreSQL, the commands reaching it through NMB_DATABASE_URL)."""
    with session() as s:
        make_study(s, n_tasks=8)  # 8 tasks x 3 samples = 24 items, two tasks of two turns
    with OpenAIServer(latency=0.3) as srv:
        cmd = [sys.executable, "-m", "cli", "collect", "--model", MODEL, "--base-url",
               srv.base_url, "--samples", "3", "--concurrency", "2", "--images", "none", "--json"]
        code, err = _stop_when_collected(cmd, 3, signal.SIGINT)
        assert code == 130 and "Traceback" not in err, err
        after_ctrl_c = _count()
        code, _ = _stop_when_collected(cmd, after_ctrl_c + 3, signal.SIGKILL)
        assert code == -signal.SIGKILL
        kept = _count()
        assert 3 <= after_ctrl_c < kept < 24
        before = len(srv.chat_requests())
        out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        summary = json.loads(out.stdout.strip().splitlines()[-1])
        assert (summary["already_collected"], summary["items"]) == (kept, 24 - kept)
        assert (summary["collected"], summary["failed"]) == (24 - kept, 0)
        with session() as s:
            missing_turns = 2 * (24 - kept)  # at most: every missing item of two turns
            assert len(srv.chat_requests()) - before <= missing_turns
            rows = s.exec(select(Response.task_id, Response.sample)
                          .where(Response.model == MODEL)).all()
            assert len(rows) == len(set(rows)) == 24
            assert s.exec(select(func.count()).select_from(CollectedResponse)).one() == 24
            # the killed run was marked when the last one started (it stayed "running" before)
            assert [r.status for r in runs(s)] == ["finished", "interrupted", "interrupted"]


@pytest.mark.slow
def test_a_run_whose_process_is_gone_is_marked_interrupted(database_url: str) -> None:
    """As grader runs are: only collection runs of this host whose process has ended are
    marked, not a live process's (nor one reusing a dead run's pid), nor another host's, nor
    one with no owner."""
    check_only_abandoned_runs_are_marked(database_url, lambda s: CollectionRun(
        model=MODEL, template_version="t", template_hash="h"))


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_a_killed_collect_is_shown_interrupted_after_the_next_start(nmb_home: Path,
                                                                    sig: int) -> None:
    """A real `nmb collect` stopped while two requests hang: SIGTERM ends its own run as
    interrupted, keeping what it finished (one line, exit 143); SIGKILL leaves it "running"
    until the next run starts, which marks it "interrupted". The next run collects the rest."""
    from db.engine import upgrade

    upgrade()
    with session() as s:
        make_study(s, n_tasks=3)  # 3 tasks x 2 samples; the 2 of "Prompt 1" answered slowly
    with OpenAIServer() as srv:
        srv.inject_when("Prompt 1", "slow:60")
        args = ["collect", "--model", MODEL, "--base-url", srv.base_url, "--samples", "2",
                "--concurrency", "6", "--images", "none", "--json"]
        code, err = signal_mid_run(args, _count, 4, sig)
        with session() as s:
            stopped = s.exec(select(CollectionRun)).one()
        if sig == signal.SIGTERM:
            assert (code, err) == (143, "nmb: terminated\n")
            assert (stopped.status, stopped.collected) == ("interrupted", 4)
            assert stopped.finished_at is not None
        else:
            assert code == -signal.SIGKILL
            assert (stopped.status, stopped.collected) == ("running", 4)
        srv.clear_faults()
        out = subprocess.run([sys.executable, "-m", "cli", *args], cwd=ROOT, capture_output=True,
                             text=True, timeout=120)
        assert out.returncode == 0, out.stderr
    with session() as s:
        assert [(r.status, r.collected) for r in runs(s)] == [("finished", 2), ("interrupted", 4)]
    assert _count() == 6


BAD_OPTIONS = [
    (["--samples", "0"], "--samples must be an integer from 1"),
    (["--samples", "two"], "invalid int value"),
    (["--temperature", "nan"], "--temperature must be a number from 0 to 2"),
    (["--temperature", "2.5"], "--temperature must be a number from 0 to 2"),
    (["--max-tokens", "-5"], "--max-tokens must be an integer from 1"),
    (["--concurrency", "0"], "--concurrency must be an integer from 1 to 1000"),
    (["--timeout", "inf"], "--timeout must be a positive number"),
    (["--poll-interval", "-1"], "--poll-interval must be a positive number"),
    (["--base-url", "ftp://127.0.0.1/v1"], "expected http:// or https://"),
    (["--base-url", "http://user:secret@127.0.0.1/v1"], "no credentials"),
    (["--base-url", "http://127.0.0.1:99999/v1"], "is not a URL"),
    (["--images", "all"], "invalid choice"),
    (["--levels", "4"], "--levels: 4 is not one of 1, 2, 3"),
    (["--tasks", "task0", "nope"], "--tasks: no task 'nope'"),
    (["--tasks", "task0", "--levels", "1"], "--tasks cannot be combined"),
    (["--model", " padded "], "--model ' padded '"),
    (["--model", "  =1+1"], "--model '  =1+1' has blanks around it"),
    (["--model", "gpt-4o\n| x |"], "--model 'gpt-4o\\n| x |' contains U+000A"),
    (["--model", "gpt-\u202eo4"], "--model 'gpt-\\u202eo4' contains U+202E RIGHT-TO-LEFT OVERRIDE"),
    (["--model", "gpt-4o\u2029"], "--model 'gpt-4o\\u2029' contains U+2029 PARAGRAPH SEPARATOR"),
]


@pytest.mark.slow
def test_bad_options_are_one_line_and_change_nothing(sqlite_url: str, capsys) -> None:
    with session() as s:
        make_study(s, n_tasks=2)
    for args, says in BAD_OPTIONS:
        argv = ["collect", "--model", MODEL, "--base-url", "http://127.0.0.1:9/v1", *args]
        assert main(argv) == 2, args
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and says in err, (args, err)
    with session() as s:
        assert s.exec(select(CollectionRun)).first() is None
        assert s.exec(select(CollectionFailure)).first() is None
    assert _count() == 0


def test_the_official_endpoint_needs_a_key(sqlite_url: str, capsys) -> None:
    with session() as s:
        make_study(s, n_tasks=1)
    assert main(["collect", "--model", "gpt-4o-2024-08-06"]) == 2
    assert "OPENAI_API_KEY is not set" in capsys.readouterr().err


@pytest.mark.slow
def test_a_run_that_collects_nothing_exits_1_with_the_reason(sqlite_url: str, capsys) -> None:
    """Nothing listens at the base URL: every item fails, the run is not a success (exit 1)
    and its last line on stderr says why."""
    from tests.services import free_port

    with session() as s:
        make_study(s, n_tasks=1)
    argv = ["collect", "--model", MODEL, "--base-url", f"http://127.0.0.1:{free_port()}/v1",
            "--images", "none", "--timeout", "5"]
    with pytest.raises(SystemExit) as end:
        main(argv)
    assert end.value.code == 1
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("nmb: run 1 collected nothing: 1 failed: connection error"), last


def test_a_collected_response_walks_through_the_study(demo_study: Path,
                                                      server: OpenAIServer) -> None:
    """Assignment, blinded scoring, grading and the leaderboard take it like any response."""
    from db.models import Assignment, User
    from db.raters.assignments import assign
    from db.raters.scoring import load_item, submit
    from db.rubrics import ensure_rubric
    from grading.config import GraderSettings, store_config
    from grading.grader import grade
    from results.leaderboard import leaderboard
    from tests.apptest import page, page_payload
    from ui.auth import LoggedIn

    with session() as s:
        task = s.exec(select(Task).where(Task.level == 3).order_by(Task.task_id)).first()
        out = collect(s, CollectSettings(model=MODEL, base_url=server.base_url),
                      Selection(tasks=(task.task_id,)))
        assert out.collected == 1
        response = s.exec(select(Response).where(Response.model == MODEL)).one()
        rubric = ensure_rubric(s, "neurology-v1")
        assign(s, rubric_hash=rubric.content_hash, raters=["demo-expert2"], overlap=1,
               selection="all", seed=0)
        s.commit()
        rater = s.exec(select(User).where(User.name == "demo-expert2")).one()
        aid = s.exec(select(Assignment.id).where(
            Assignment.response_id == response.response_id)).one()
        item = load_item(s, rater_id=rater.id, assignment_id=aid)
        assert (item.blind_code, item.text, item.turns) == (
            response.blind_code, response.text, response.turns)
        assert not hasattr(item, "model") and not hasattr(item, "source")

    user = LoggedIn(id=rater.id, name=rater.name, role=rater.role, demo=rater.demo)
    at = page("pages/score.py", user)
    at.session_state["score_current"] = aid
    at.run()
    assert not at.exception, at.exception
    payload = page_payload(at)
    assert response.blind_code in payload and response.turns[-1] in payload
    for secret in (MODEL, response.response_id, "local-vlm"):
        assert secret not in payload

    with session() as s:
        submit(s, rater_id=rater.id, assignment_id=aid, values={
            "criteria": {c.key: rubric.scale.max for c in rubric.applicable_criteria(task.family)},
            "correct_diagnosis": True, "error_tags": [], "comment": "Sound.", "confidence": 4})
        config = store_config(s, GraderSettings(base_url=server.base_url))
        s.commit()
        graded = grade(s, config_id=config.id, api_key="sk-test", concurrency=8,
                       trust_base_url=server.base_url)
        assert graded.failed == 0
        rows = leaderboard(s, config_id=config.id)
    mine = [r for r in rows if r["who"] == MODEL]  # its one answer, and every task it did
    assert len(mine) == 1 and mine[0]["group"] == "model"  # not answer counted wrong
    assert (mine[0]["tasks"], mine[0]["missing"]) == (12, 11)


def test_grader_vision_sees_the_same_key_slices(demo_study: Path, server: OpenAIServer) -> None:
    from grading.config import GraderSettings, store_config
    from grading.grader import grade

    with session() as s:
        config = store_config(s, GraderSettings(base_url=server.base_url, vision=True))
        s.commit()
        assert grade(s, config_id=config.id, api_key="sk-test", limit=1,
                     trust_base_url=server.base_url).graded == 1
        response = s.exec(select(Response).order_by(Response.response_id)).first()
        case = s.get(Case, s.get(Task, response.task_id).case_id)
        assert server.chat_requests()[0].images == _expected_pngs(s, case)


@pytest.mark.slow
def test_cli_summary_is_the_last_stdout_line_and_the_key_is_kept_out(
        nmb_home: Path, server: OpenAIServer) -> None:
    from db.engine import upgrade

    upgrade()
    with session() as s:
        make_study(s, n_tasks=3)
    server.inject_when("Prompt 2", "400")  # both samples of task 2: a partial run, exit 0
    secret = "sk-test-DO-NOT-LEAK-1234567890"
    out = subprocess.run([sys.executable, "-m", "cli", "collect", "--model", MODEL,
                          "--base-url", server.base_url, "--samples", "2"], cwd=ROOT,
                         env={**os.environ, "OPENAI_API_KEY": secret},
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    # why, grouped with how many items each reason failed, after the failed items
    assert out.stderr.strip().splitlines()[-1] == (
        "nmb: run 1 partial: 2 of 6 failed: HTTP 400: Error code: 400 - Invalid request (test "
        "server). (2 items)")
    assert secret not in out.stdout + out.stderr
    assert all(r.headers.get("authorization") == f"Bearer {secret}"
               for r in server.chat_requests())
    for path in nmb_home.rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path
    lines = out.stdout.strip().splitlines()
    assert lines[0].startswith("run 1 (") and len(lines) == 2
    summary = json.loads(lines[-1])
    assert summary == {"run_id": 1, "model": MODEL, "tasks": 3, "samples": 2, "items": 6,
                       "already_collected": 0, "collected": 4, "failed": 2, "from_cache": 0,
                       "prompt_tokens": summary["prompt_tokens"],
                       "completion_tokens": summary["completion_tokens"], "image_count": 0,
                       "cost_usd": None}
    assert summary["prompt_tokens"] > 0 and summary["completion_tokens"] > 0


def test_a_collected_answer_naming_its_model_is_flagged_and_redacted(sqlite_url: str,
                                                                     server: OpenAIServer) -> None:
    """As at import: raters and the grader read `[name removed]`; the original is kept, and the
    response is not assigned until an admin has reviewed it."""
    from db.models import ResponseFlag

    server.answer = lambda body: "As GPT-4o, a model developed by OpenAI, I favour MS."
    with Session(engine_for(sqlite_url), expire_on_commit=False) as s:
        make_study(s, n_tasks=1, experts=0)
        out = collect(s, CollectSettings(model=MODEL, base_url=server.base_url, images="none"))
        assert out.collected == 1
        response = s.exec(select(Response).where(Response.model == MODEL)).one()
        flag = s.get(ResponseFlag, response.response_id)
    assert "GPT" not in response.text and "OpenAI" not in response.text
    assert "[name removed]" in response.text
    assert flag is not None and "GPT-4o" in flag.original_text


@pytest.mark.slow
def test_a_hostile_model_server_fails_items_not_the_run(nmb_home: Path) -> None:
    """The grader test's hostile answers (endless, huge, HTML, not JSON, wrongly typed, deeply
    nested, dense, compressed, redirected, trickling), one per task, against a real `nmb collect`:
    under 500 MB, exit 0, every item listed as failed with its reason, no traceback."""
    from db.engine import upgrade
    from tests.grading.test_grader import HOSTILE, hostile_study, inject_hostile
    from tests.peak_memory import run_measured

    upgrade()
    with session() as s:
        hostile_study(s)
    secret = "sk-test-DO-NOT-LEAK-1234567890"
    with OpenAIServer() as srv, OpenAIServer() as elsewhere:
        expected = inject_hostile(srv, elsewhere)
        out, peak = run_measured(
            [sys.executable, "-m", "cli", "collect", "--model", MODEL, "--base-url",
             srv.base_url, "--images", "none", "--timeout", "2", "--concurrency", "10"],
            nmb_home / "peak", cwd=ROOT, env={**os.environ, "OPENAI_API_KEY": secret},
            capture_output=True, text=True, timeout=300)
        assert elsewhere.requests == []
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr
    assert peak < 500 * 2**20, f"peak {peak / 2**20:.0f} MiB"
    summary = json.loads(out.stdout.strip().splitlines()[-1])
    assert (summary["collected"], summary["failed"]) == (1, len(HOSTILE))
    with session() as s:
        reasons = {f.task_id: f.reason for f in failures(s, model=MODEL)}
    assert {f"task{i}" for i in range(len(HOSTILE))} == set(reasons)
    for i, reason in enumerate(expected.values()):
        assert reason in reasons[f"task{i}"], (i, reasons[f"task{i}"])
        assert f"task task{i} sample 0: " in out.stderr  # listed by the command too
    assert secret not in out.stdout + out.stderr + "".join(reasons.values())


@pytest.mark.slow
def test_many_endless_answers_at_once_stay_within_the_memory_bound(nmb_home: Path) -> None:
    """120 conversations opened at once against a server whose every answer is endless (about
    1 GB if each body held its own 8 MiB cap): the bodies being read share 128 MiB, so a real
    `nmb collect` stays under 500 MB and lists every item as failed."""
    from db.engine import upgrade
    from tests.peak_memory import run_measured

    upgrade()
    with session() as s:
        make_study(s, n_tasks=60)
    with OpenAIServer() as srv:
        srv.inject_when("Prompt", "endless")
        out, peak = run_measured(
            [sys.executable, "-m", "cli", "collect", "--model", MODEL, "--base-url",
             srv.base_url, "--images", "none", "--samples", "2", "--timeout", "60",
             "--concurrency", "200"], nmb_home / "peak", cwd=ROOT,
            env={**os.environ, "OPENAI_API_KEY": "sk-test"}, capture_output=True, text=True,
            timeout=600)
    # nothing completed: exit 1 with the reasons (a run that completes nothing is a failure)
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    assert peak < 500 * 2**20, f"peak {peak / 2**20:.0f} MiB"
    summary = json.loads(out.stdout.strip().splitlines()[-1])
    assert (summary["collected"], summary["failed"]) == (0, 120)
    with session() as s:
        reasons = {f.reason for f in failures(s, model=MODEL)}
    assert any("being read at once hold more than 128 MiB" in r for r in reasons), reasons


def test_an_empty_model_is_refused(nmb_home: Path, capsys) -> None:
    for model in ("", " "):
        assert main(["collect", "--model", model]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "--model" in err and "Traceback" not in err


@pytest.mark.slow
def test_an_answer_holding_a_nul_is_collected_on_either_database(database_url: str) -> None:
    """A model's answer with NUL (PostgreSQL text cannot hold it) is stored with U+FFFD in its
    place, on SQLite as on PostgreSQL, and the run finishes."""
    with OpenAIServer(answer=lambda body: "Dx: stroke\x00 (left MCA)") as srv, \
            Session(engine_for(database_url), expire_on_commit=False) as s:
        make_study(s, n_tasks=2)
        out = collect(s, CollectSettings(model=MODEL, base_url=srv.base_url, images="none"))
        assert (out.collected, out.failed) == (2, 0)
        texts = s.exec(select(Response.text).where(Response.model == MODEL)).all()
        assert texts == ["Dx: stroke\ufffd (left MCA)"] * 2
        assert [r.status for r in runs(s)] == ["finished"]
