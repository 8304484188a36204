"""The LLM grader: template, call, parse, validate, store.

One rubric object gives the system prompt and the strict JSON schema (rubric.render); the
user message carries the task, the case record, the reference answer and the response.
Runs are resumable: finished items are committed in groups at least every 0.25 s and on
Ctrl-C, a re-run grades only what has no valid grade under the config, and answers are
cached by the hash of (config, exact request), so an identical request is never sent twice.
A run records which process owns it (host, pid, the pid's start); a run left "running" by a
process that is gone is marked "interrupted" when the next run starts.
"""

import asyncio
import json
import math
import os
import socket
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from sqlalchemy import func, insert
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, delete, select, update

from calibration.grader_config import get_config
from calibration.llm import CallResult, estimate_cost, load_prices, periodically, run_batch
from calibration.request import GradeItem, SendJob, api_key_for, grade_request, make_client, send
from db.audit import record
from db.models import (
    AuditLog,
    CalibrationItem,
    Case,
    GraderCache,
    GraderConfig,
    GraderFailure,
    GraderRun,
    GraderScore,
    Response,
    Task,
    utcnow,
)
from db.queries import fetch_in
from db.reference import require_reference
from db.rubrics import rubric_by_hash
from db.status import count_query
from errors import UserError
from rubric import Rubric

ITEMS = ("pending", "calibration", "all")


@dataclass
class RunSummary:
    run_id: int
    items: int
    graded: int
    failed: int
    from_cache: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float


def _key_slices(s: Session, case_id: str) -> list[dict]:
    """For vision-capable graders: the case's key slices, as the models under test see them."""
    from calibration.key_images import key_images  # lazy: imaging is not needed otherwise
    from calibration.model_request import image_parts

    return image_parts(key_images(s, s.get(Case, case_id)))


def prepare(s: Session, config: GraderConfig, rubric: Rubric, response: Response, *,
            task: Task | None = None, case: Case | None = None) -> GradeItem:
    """The exact request for one response and its cache key (`task`, `case`: the response's
    rows if already loaded, else read here)."""
    task = task or s.get(Task, response.task_id)
    case = case or s.get(Case, task.case_id)
    images = _key_slices(s, case.case_id) if config.vision else None
    return grade_request(config, rubric, task, case, response, images)


def select_items(s: Session, config: GraderConfig, items: str, limit: int | None) -> list[Response]:
    if items not in ITEMS:
        raise UserError(f"--items {items!r} is not one of {', '.join(ITEMS)}")
    if limit is not None and limit < 1:
        raise UserError(f"--limit must be at least 1, got {limit}")
    query = select(Response).order_by(Response.response_id)
    if items == "calibration":
        query = query.join(CalibrationItem, CalibrationItem.response_id == Response.response_id)
    graded = select(GraderScore.response_id).where(GraderScore.config_id == config.id)
    query = query.where(Response.response_id.not_in(graded))
    rows = list(s.exec(query))
    rows = rows[:limit] if limit is not None else rows
    require_reference(s, task_ids={r.task_id for r in rows})  # grading needs the answer
    return rows


def _prepare_all(s: Session, config: GraderConfig, rubric: Rubric,
                 responses: list[Response]) -> list[GradeItem]:
    """`prepare` for many responses, their tasks and cases read in a few queries (not two
    per response)."""
    tasks = {t.task_id: t for t in fetch_in(s, Task.task_id, (r.task_id for r in responses))}
    cases = {c.case_id: c for c in fetch_in(s, Case.case_id, (t.case_id for t in tasks.values()))}
    return [prepare(s, config, rubric, r, task=tasks[r.task_id],
                    case=cases[tasks[r.task_id].case_id]) for r in responses]


class _Recorder:
    """Stores finished items in groups, committed every `COMMIT_EVERY` seconds (by `flush`
    while requests are out, and at the end, or on Ctrl-C): an interrupted run keeps what it
    finished, and a hard kill loses at most that much work, which a re-run grades again (from
    the cache where it was saved)."""

    COMMIT_EVERY = 0.25
    COUNTERS = ("graded", "failed", "from_cache", "prompt_tokens", "completion_tokens", "cost_usd")

    def __init__(self, s: Session, run: GraderRun, config: GraderConfig, cached: set[str],
                 progress: Callable[[int, int], None] | None) -> None:
        self.s, self.run, self.config, self.progress = s, run, config, progress
        self.cached = cached  # request hashes already in the cache
        self.totals = dict.fromkeys(self.COUNTERS, 0)
        self.pending: list[tuple[GradeItem, CallResult, bool]] = []
        self.done = 0
        self.last_commit = time.monotonic()

    def __call__(self, item: GradeItem, result: CallResult, from_cache: bool = False) -> None:
        self.pending.append((item, result, from_cache))
        if not from_cache:  # tokens are spent once per request sent
            self.totals["prompt_tokens"] += result.prompt_tokens
            self.totals["completion_tokens"] += result.completion_tokens
            self.totals["cost_usd"] += result.cost_usd or 0.0
        self.done += 1
        if time.monotonic() - self.last_commit >= self.COMMIT_EVERY:
            self.commit()
        if self.progress:
            self.progress(self.done, self.run.n_items)

    def flush(self) -> None:
        """Commit what finished, if anything did (also while nothing else finishes: a slow
        last request must not hold earlier results uncommitted)."""
        if self.pending:
            self.commit()
        else:  # nothing unsaved as of now: no commit is due for another COMMIT_EVERY
            self.last_commit = time.monotonic()

    async def flushing(self, work: Awaitable) -> None:
        """Await `work` while `flush` runs every `COMMIT_EVERY` seconds."""
        await periodically(self.flush, self.COMMIT_EVERY, work)

    def _write(self, group: list[tuple[GradeItem, CallResult, bool]]) -> None:
        """The group's grades, failures and new cache entries, as three multi-row inserts."""
        s, cid, run_id, now = self.s, self.config.id, self.run.id, utcnow()
        s.exec(delete(GraderFailure)
               .where(GraderFailure.config_id == cid,
                      GraderFailure.response_id.in_([item.response_id for item, _, _ in group]))
               .execution_options(synchronize_session=False))
        scores, failures, cache = [], [], []
        for item, r, from_cache in group:
            if not r.ok:
                failures.append({"config_id": cid, "response_id": item.response_id,
                                 "run_id": run_id, "reason": r.reason or "unknown",
                                 "attempts": r.attempts, "created_at": now})
                continue
            scores.append({
                "config_id": cid, "response_id": item.response_id, "run_id": run_id,
                "request_hash": item.request_hash, "criteria": r.data["criteria"],
                "correct_diagnosis": r.data["correct_diagnosis"],
                "error_tags": r.data["error_tags"], "justification": r.data["comment"],
                "diagnosis_rank": r.data.get("diagnosis_rank"), "stages": r.data.get("stages"),
                "overall": r.data["overall"], "model_returned": r.model_returned,
                "system_fingerprint": r.system_fingerprint, "prompt_tokens": r.prompt_tokens,
                "completion_tokens": r.completion_tokens, "latency_s": r.latency_s,
                "cost_usd": r.cost_usd, "created_at": now})
            if not from_cache and item.request_hash not in self.cached:
                self.cached.add(item.request_hash)
                cache.append({"request_hash": item.request_hash, "raw": r.raw or "",
                              "model_returned": r.model_returned,
                              "system_fingerprint": r.system_fingerprint,
                              "prompt_tokens": r.prompt_tokens,
                              "completion_tokens": r.completion_tokens, "created_at": now})
        conn = s.connection()
        for table, rows in ((GraderScore, scores), (GraderFailure, failures), (GraderCache, cache)):
            if rows:
                conn.execute(insert(table), rows)
        for _, result, from_cache in group:
            self.totals["graded" if result.ok else "failed"] += 1
            self.totals["from_cache"] += result.ok and from_cache

    def _commit_run(self) -> None:
        for name, value in self.totals.items():
            setattr(self.run, name, value)
        self.s.add(self.run)
        self.s.commit()

    def commit(self) -> None:
        group, self.pending = self.pending, []
        if not self._try(group):
            for one in group:  # another run stored some of these meanwhile: keep its rows
                self._try([one])
            self._commit_run()
        self.last_commit = time.monotonic()

    def _try(self, group: list[tuple[GradeItem, CallResult, bool]]) -> bool:
        """Write and commit `group`; on a unique-key clash, roll back and report False."""
        totals, cached = dict(self.totals), set(self.cached)
        try:
            self._write(group)
            self._commit_run()
            return True
        except IntegrityError:
            self.s.rollback()
            self.totals, self.cached = totals, cached
            return False


def _process_start(pid: int) -> str | None:
    """The boot and the start time of process `pid` (Linux /proc), so that a pid reused by a
    later process is not mistaken for it; None when it is gone (or a zombie) or /proc is absent."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        state, *rest = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return None if state in ("Z", "X") else f"{boot}:{rest[18]}"  # field 22: starttime


def _owner() -> dict:
    """This process, as a run records it (in its "grader.run" audit entry)."""
    return {"host": socket.gethostname(), "pid": os.getpid(),
            "pid_start": _process_start(os.getpid())}


def _gone(owner: dict) -> bool:
    """True when the process `owner` names has ended. Only a process of this host can be
    seen: a run owned elsewhere is never judged gone from here."""
    pid = owner.get("pid")
    if owner.get("host") != socket.gethostname() or not isinstance(pid, int) or pid < 1:
        return False
    if owner.get("pid_start") is not None:
        return _process_start(pid) != owner["pid_start"]
    try:  # no /proc where the run started: the pid alone
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, another user's
        return False
    return False


def mark_abandoned(s: Session, *, actor: str | None = None) -> list[int]:
    """Mark "interrupted" the runs still "running" whose process is gone (killed, or its machine
    rebooted), in the session's transaction; runs of live processes, of other hosts and without
    a recorded owner are left alone. Returns the ids marked."""
    running = s.exec(select(GraderRun.id).where(GraderRun.status == "running")).all()
    if not running:
        return []
    starts = s.exec(select(AuditLog.detail).where(
        AuditLog.action == "grader.run", AuditLog.detail["run"].as_integer().in_(running))).all()
    marked = []
    for owner in starts:
        if _gone(owner):
            done = s.exec(update(GraderRun)
                          .where(GraderRun.id == owner["run"], GraderRun.status == "running")
                          .values(status="interrupted", finished_at=utcnow()))
            if done.rowcount:  # not already marked by a run starting at the same time
                record(s, "grader.run.interrupted", actor=actor, run=owner["run"],
                       reason="its process is gone", **{k: owner[k] for k in ("host", "pid")})
                marked.append(owner["run"])
    return marked


def _from_cache(rubric: Rubric, item: GradeItem, hit: GraderCache) -> CallResult | None:
    try:
        data = item.parse(rubric, json.loads(hit.raw))
    except ValueError:
        return None
    return CallResult(ok=True, data=data, raw=hit.raw, model_returned=hit.model_returned,
                      system_fingerprint=hit.system_fingerprint, prompt_tokens=hit.prompt_tokens,
                      completion_tokens=hit.completion_tokens)


def grade(
    s: Session, *, config_id: int, items: str = "pending", concurrency: int = 8,
    limit: int | None = None, batch: bool = False, api_key: str | None = None,
    timeout: float = 60.0, poll_interval: float = 10.0, max_reasks: int = 2, max_retries: int = 5,
    progress: Callable[[int, int], None] | None = None, actor: str | None = None,
) -> RunSummary:
    """Grade every selected response without a valid grade under the config, through the
    Batch API with `batch`, else with bounded concurrency from this process."""
    if concurrency < 1:
        raise UserError(f"--concurrency must be at least 1, got {concurrency}")
    if not (math.isfinite(timeout) and timeout > 0):
        raise UserError(f"--timeout must be a positive number of seconds, got {timeout}")
    config = get_config(s, config_id)
    rubric = rubric_by_hash(s, config.rubric_hash)
    responses = select_items(s, config, items, limit)
    key = api_key_for(config.base_url, api_key) if responses else None  # a missing key fails before any work
    work = _prepare_all(s, config, rubric, responses)
    mark_abandoned(s, actor=actor)
    run = GraderRun(config_id=config.id, items=items, n_items=len(work))
    s.add(run)
    s.flush()
    record(s, "grader.run", actor=actor, run=run.id, config=config.id, items=items, n=len(work),
           **_owner())
    s.commit()
    hits = {h.request_hash: h for h in
            fetch_in(s, GraderCache.request_hash, (w.request_hash for w in work))}
    store = _Recorder(s, run, config, set(hits), progress)
    to_send: list[GradeItem] = []
    twins: dict[str, list[GradeItem]] = {}  # identical requests in this run: sent once
    for w in work:
        cached = _from_cache(rubric, w, hits[w.request_hash]) if w.request_hash in hits else None
        if cached is not None:
            store(w, cached, from_cache=True)
        elif w.request_hash in twins:
            twins[w.request_hash].append(w)
        else:
            twins[w.request_hash] = []
            to_send.append(w)

    def store_all(w: GradeItem, result: CallResult) -> None:
        store(w, result)
        for twin in twins[w.request_hash]:
            store(twin, result, from_cache=True)  # its tokens were counted once

    job = SendJob(to_send, rubric, config.base_url, key, concurrency=concurrency,
                  timeout=timeout, max_reasks=max_reasks, max_retries=max_retries,
                  prices=load_prices())
    try:
        if to_send and batch:
            client = make_client(config.base_url, key, timeout)
            asyncio.run(store.flushing(_batches(
                client, rubric, to_send, store_all, poll_interval=poll_interval,
                max_reasks=max_reasks, prices=job.prices)))
        elif to_send:
            asyncio.run(store.flushing(send(job, on_done=store_all)))
        run.status = "finished"
    except BaseException:  # Ctrl-C, a page's rerun, an error: this process leaves the run
        run.status = "interrupted"
        raise
    finally:
        run.finished_at = utcnow()
        store.commit()
    return RunSummary(run.id, run.n_items, run.graded, run.failed, run.from_cache,
                      run.prompt_tokens, run.completion_tokens, round(run.cost_usd, 6))


async def _batches(client, rubric: Rubric, work: list[GradeItem], store, **options) -> None:
    """One Batch API job per output schema (task family, and what the request asks for)."""
    for family, asked in sorted({(w.family, w.asked) for w in work}):
        group = [w for w in work if (w.family, w.asked) == (family, asked)]
        results = await run_batch(
            client, {w.response_id: w.request for w in group},
            validate=lambda d, g=group[0]: g.parse(rubric, d), **options)
        for w in group:
            store(w, results[w.response_id])


def summary_dict(summary: RunSummary) -> dict:
    return asdict(summary)


def estimate(s: Session, *, config_id: int, items: str = "pending") -> dict:
    """Items a run would send and its approximate cost, before running.

    Prompt tokens are estimated at 4 characters per token (OpenAI's rule of thumb for
    English); completion tokens at the config's `max_tokens` / 3. An estimate, shown as such.
    """
    config = get_config(s, config_id)
    rubric = rubric_by_hash(s, config.rubric_hash)
    work = _prepare_all(s, config, rubric, select_items(s, config, items, None))
    cached = len(fetch_in(s, GraderCache.request_hash, (w.request_hash for w in work),
                          GraderCache.request_hash))
    prompt = sum(len(json.dumps(w.request.body())) for w in work) // 4
    completion = (len(work) - cached) * config.max_tokens // 3
    cost = estimate_cost(config.model, prompt * (len(work) - cached) // max(len(work), 1),
                         completion)
    return {"items": len(work), "cached": cached, "prompt_tokens": prompt,
            "completion_tokens": completion, "cost_usd": cost}


def grades_key(s: Session, *, config_id: int) -> tuple[int | None, ...]:
    """Changes whenever the responses, the calibration subset, the cache or the config's grades
    do (row counts, and the newest grade id): what `estimate` and the leaderboard depend on,
    read with a few COUNT queries so pages can cache them."""
    counts = [s.exec(count_query(table)).one() for table in (Response, CalibrationItem, GraderCache)]
    grades = s.exec(select(func.count(), func.max(GraderScore.id))
                    .where(GraderScore.config_id == config_id)).one()
    return (*counts, *grades)


def failures(s: Session, *, config_id: int) -> list[GraderFailure]:
    return list(s.exec(select(GraderFailure).where(GraderFailure.config_id == config_id)
                       .order_by(GraderFailure.response_id)))


def configs(s: Session) -> list[GraderConfig]:
    return list(s.exec(select(GraderConfig).order_by(GraderConfig.id.desc())))


def config_label(c: GraderConfig) -> str:
    """"#id name", marked when validated: how pickers name a config."""
    return f"#{c.id} {c.name}" + (" · validated" if c.validated_report_id else "")


def config_labels(s: Session, *, validated_only: bool = False) -> dict[int, str]:
    """{config id: `config_label`}, newest first."""
    return {c.id: config_label(c) for c in configs(s)
            if c.validated_report_id or not validated_only}
