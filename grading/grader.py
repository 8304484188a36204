"""The LLM grader: template, call, parse, validate, store.

One rubric object gives the system prompt and the strict JSON schema (rubric.render); the
user message carries the task, the case record, the reference answer and the response.
Runs are resumable: finished items are committed in groups at least every 0.25 s and on
Ctrl-C, a re-run grades only what has no valid grade under the config, and answers are
cached by the hash of (config, exact request), so an identical request is never sent twice.
A run is written by llm.run_writer, as collection runs are: it records which process
owns it, and a run left "running" by a process that is gone is marked "interrupted" when the
next run starts.
"""

import asyncio
import json
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass

from sqlalchemy import func, insert
from sqlmodel import Session, delete, select

from db.audit import record
from db.models import (
    CalibrationItem,
    Case,
    GraderCache,
    GraderConfig,
    GraderFailure,
    GraderRun,
    GraderScore,
    HeldoutLook,
    Response,
    Task,
    utcnow,
)
from db.queries import fetch_in
from db.rubrics import rubric_by_hash
from db.status import count_query
from db.study.reference import Against, judged_against, require_reference
from db.study.retire import taken_out
from db.study.revisions import stale, windows
from errors import UserError
from grading.config import get_config
from llm.batch import run_batch
from llm.call import CallResult, estimate_cost, load_prices
from llm.grader_request import GradeItem, SendJob, api_key_for, grade_request, make_client, send
from llm.plan import Plan
from llm.run_writer import RunWriter, open_run
from rubric import Rubric

ITEMS = ("pending", "calibration", "all", "stale")
CHANGED = ("the response's text (on review) or its case's reference answer (an import) changed "
           "while it was graded: graded again next run")


@dataclass
class RunSummary:
    run_id: int
    items: int
    graded: int
    failed: int
    from_cache: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None  # None: a request of an unpriced model was sent


def _key_slices(s: Session, case_id: str) -> list[dict]:
    """For vision-capable graders: the case's key slices, as the models under test see them."""
    from llm.key_images import key_images  # lazy: imaging is not needed otherwise
    from llm.model_request import image_parts

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
    if items == "stale":  # graded before a revision of their case or task: graded again
        query = query.where(Response.response_id.in_(
            stale(s, windows(s), config_id=config.id).grades))
    else:
        graded = select(GraderScore.response_id).where(GraderScore.config_id == config.id)
        query = query.where(Response.response_id.not_in(graded))
    retired = taken_out(s).responses  # a retired response is not graded (db.study.retire)
    rows = [r for r in s.exec(query) if r.response_id not in retired]
    rows = rows[:limit] if limit is not None else rows
    require_reference(s, task_ids={r.task_id for r in rows})  # grading needs the answer
    return rows


def _prepare_all(s: Session, config: GraderConfig, rubric: Rubric, responses: list[Response]
                 ) -> tuple[list[GradeItem], dict[str, Against]]:
    """`prepare` for many responses, their tasks and cases read in a few queries (not two
    per response); and, per response, what of it may change while it is graded (`Against`)."""
    tasks = {t.task_id: t for t in fetch_in(s, Task.task_id, (r.task_id for r in responses))}
    cases = {c.case_id: c for c in fetch_in(s, Case.case_id, (t.case_id for t in tasks.values()))}
    case_of = {r.response_id: cases[tasks[r.task_id].case_id] for r in responses}
    return ([prepare(s, config, rubric, r, task=tasks[r.task_id], case=case_of[r.response_id])
             for r in responses],
            {r.response_id: (r.text, r.turns, case_of[r.response_id].ground_truth)
             for r in responses})


class _Grades:
    """What a grader run stores, through its `RunWriter`: grades, failures and new cache
    entries."""

    COUNTERS = ("graded", "failed", "from_cache", "prompt_tokens", "completion_tokens")

    def __init__(self, s: Session, run: GraderRun, config: GraderConfig, cached: set[str],
                 progress: Callable[[int, int], None] | None,
                 sent: dict[str, Against]) -> None:
        self.s, self.run, self.config = s, run, config
        self.cached = cached  # request hashes in the cache or queued for it
        self.sent = sent  # response id -> what its request was built from
        self.writer = RunWriter(s, run, self._write,
                                {**dict.fromkeys(self.COUNTERS, 0), "cost_usd": 0.0}, progress)

    def __call__(self, item: GradeItem, result: CallResult, from_cache: bool = False) -> None:
        if not from_cache:  # tokens are spent once per request sent
            if result.cost_usd is None and (result.prompt_tokens or result.completion_tokens):
                self.writer.make_unknown("cost_usd")  # an unpriced model: never a cost of 0
            self.writer.count(prompt_tokens=result.prompt_tokens,
                              completion_tokens=result.completion_tokens,
                              cost_usd=result.cost_usd)
        new = result.ok and not from_cache and item.request_hash not in self.cached
        if new:
            self.cached.add(item.request_hash)
        self.writer.add((item, result, from_cache, new))

    def _changed(self, response_ids: list[str]) -> set[str]:
        """The responses whose text (an admin's review) or case's reference answer (an
        import) changed since their request was built (`judged_against`: a review drops the
        grades of the words it replaces; an import changes no answer a grade used)."""
        now = judged_against(self.s, response_ids)
        return {rid for rid, against in now.items() if self.sent.get(rid) != against}

    def _write(self, group: list[tuple[GradeItem, CallResult, bool, bool]]) -> dict[str, int]:
        """The group's grades, failures and new cache entries, as three multi-row inserts. A
        grade of a response whose text changed meanwhile is a failure (graded again next run)."""
        s, cid, run_id, now = self.s, self.config.id, self.run.id, utcnow()
        changed = self._changed([item.response_id for item, r, *_ in group if r.ok])
        s.exec(delete(GraderFailure)
               .where(GraderFailure.config_id == cid,
                      GraderFailure.response_id.in_([item.response_id for item, *_ in group]))
               .execution_options(synchronize_session=False))
        scores, failures, cache = [], [], []
        for item, r, _, new in group:
            if not r.ok or item.response_id in changed:
                reason = (r.reason or "unknown") if not r.ok else CHANGED
                failures.append({"config_id": cid, "response_id": item.response_id,
                                 "run_id": run_id, "reason": reason,
                                 "attempts": r.attempts, "created_at": now})
                continue
            scores.append({
                "config_id": cid, "response_id": item.response_id, "run_id": run_id,
                "request_hash": item.request_hash, "criteria": r.data.criteria,
                "correct_diagnosis": r.data.correct_diagnosis,
                "error_tags": r.data.error_tags, "justification": r.data.justification,
                "diagnosis_rank": r.data.diagnosis_rank, "stages": r.data.stages,
                "overall": r.data.overall, "model_returned": r.model_returned,
                "system_fingerprint": r.system_fingerprint, "prompt_tokens": r.prompt_tokens,
                "completion_tokens": r.completion_tokens, "latency_s": r.latency_s,
                "cost_usd": r.cost_usd, "created_at": now})
            if new:
                cache.append({"request_hash": item.request_hash, "raw": r.raw or "",
                              "model_returned": r.model_returned,
                              "system_fingerprint": r.system_fingerprint,
                              "prompt_tokens": r.prompt_tokens,
                              "completion_tokens": r.completion_tokens, "created_at": now})
        conn = s.connection()
        if scores and self.run.items == "stale":
            self._replace([row["response_id"] for row in scores])
        for table, rows in ((GraderScore, scores), (GraderFailure, failures), (GraderCache, cache)):
            if rows:
                conn.execute(insert(table), rows)
        return {"graded": len(scores), "failed": len(failures),
                "from_cache": sum(r.ok and from_cache and item.response_id not in changed
                                  for item, r, from_cache, _ in group)}


    def _replace(self, response_ids: list[str]) -> None:
        """Stale grades give way to the new ones in the same transaction; each old grade's
        values stay in the audit log ('grade.replace')."""
        old = self.s.exec(select(GraderScore).where(GraderScore.config_id == self.config.id,
                                                    GraderScore.response_id.in_(response_ids)))
        for g in old:
            record(self.s, "grade.replace", actor=None, config=g.config_id, run=self.run.id,
                   response=g.response_id, old_run=g.run_id, correct=g.correct_diagnosis,
                   overall=g.overall, criteria=g.criteria, at=g.created_at.isoformat())
            self.s.delete(g)
        self.s.flush()


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
    trust_base_url: str | None = None,
) -> RunSummary:
    """Grade every selected response without a valid grade under the config, through the
    Batch API with `batch`, else with bounded concurrency from this process.

    A stored config's base URL is not the user's choice of today: it is sent to only when
    `trust_base_url` names it (the user typed it in this command or confirmed it on the page),
    or it is OPENAI_BASE_URL (`llm.grader_request.check_destination`); else UserError before
    anything is stored or sent."""
    if concurrency < 1:
        raise UserError(f"--concurrency must be at least 1, got {concurrency}")
    if not (math.isfinite(timeout) and timeout > 0):
        raise UserError(f"--timeout must be a positive number of seconds, got {timeout}")
    config = get_config(s, config_id)
    rubric = rubric_by_hash(s, config.rubric_hash)
    responses = select_items(s, config, items, limit)
    key = (api_key_for(config.base_url, api_key, trusted=trust_base_url,
                       origin=f"grader config {config.id}")
           if responses else None)  # a missing key or an unchosen address fails before any work
    work, sent = _prepare_all(s, config, rubric, responses)
    run = GraderRun(config_id=config.id, items=items, n_items=len(work))
    open_run(s, run, actor=actor, config=config.id, items=items, n=len(work))
    hits = {h.request_hash: h for h in
            fetch_in(s, GraderCache.request_hash, (w.request_hash for w in work))}
    store = _Grades(s, run, config, set(hits), progress, sent)
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
    with store.writer.ending():  # Ctrl-C, a page's rerun, an error: "interrupted"
        if to_send and batch:
            client = make_client(config.base_url, key, timeout)
            asyncio.run(store.writer.flushing(_batches(
                client, rubric, to_send, store_all, poll_interval=poll_interval,
                max_reasks=max_reasks, prices=job.prices)))
        elif to_send:
            asyncio.run(store.writer.flushing(send(job, on_done=store_all)))
    return RunSummary(run.id, run.n_items, run.graded, run.failed, run.from_cache,
                      run.prompt_tokens, run.completion_tokens,
                      None if run.cost_usd is None else round(run.cost_usd, 6))


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


def estimate(s: Session, *, config_id: int, items: str = "pending") -> Plan:
    """Items a run would send and its approximate cost, before running.

    Prompt tokens are estimated at 4 characters per token (OpenAI's rule of thumb for
    English); completion tokens at the config's `max_tokens` / 3. An estimate, shown as such.
    """
    config = get_config(s, config_id)
    rubric = rubric_by_hash(s, config.rubric_hash)
    work, _ = _prepare_all(s, config, rubric, select_items(s, config, items, None))
    cached = len(fetch_in(s, GraderCache.request_hash, (w.request_hash for w in work),
                          GraderCache.request_hash))
    prompt = sum(len(json.dumps(w.request.body())) for w in work) // 4
    completion = (len(work) - cached) * config.max_tokens // 3
    cost = estimate_cost(config.model, prompt * (len(work) - cached) // max(len(work), 1),
                         completion)
    return Plan("grade", items=len(work), cached=cached, prompt_tokens=prompt,
                completion_tokens=completion, cost_usd=cost)


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


def config_label(c: GraderConfig, *, suspended: bool = False) -> str:
    """"#id name", marked validated, suspended (data changed after its look) or not validated:
    how pickers name a config."""
    mark = ("validated" if c.validated_report_id else
            "suspended: data changed after the look" if suspended else "not validated")
    return f"#{c.id} {c.name} · {mark}"


def config_labels(s: Session, *, validated_only: bool = False) -> dict[int, str]:
    """{config id: `config_label`}, newest first."""
    latest = dict(s.exec(select(HeldoutLook.config_id, HeldoutLook.suspended_at)
                         .order_by(HeldoutLook.id)).all())  # each config's newest look
    suspended = {cid for cid, at in latest.items() if at is not None}
    return {c.id: config_label(c, suspended=c.id in suspended) for c in configs(s)
            if c.validated_report_id or not validated_only}
