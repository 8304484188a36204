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
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from typing import Any

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
from db.study.reference import Against, content_digest, judged_against, require_reference
from db.study.retire import taken_out
from db.study.revisions import stale, windows
from errors import UserError
from grading.config import get_config
from llm.batch import run_batch
from llm.call import CallResult, estimate_cost, load_prices
from llm.grader_request import GradeItem, SendJob, api_key_for, grade_request, grader_call, make_client
from llm.plan import Plan
from llm.run_writer import RunWriter, open_run
from rubric import Rubric

ITEMS = ("pending", "calibration", "all", "stale")
CHANGED = ("the response's text (on review), or its case or task (an import, a revision) changed "
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


PAGE = 500  # responses read per query while grading (their rows, not their requests)
CASE_IMAGES = 16  # cases whose key slices a vision grader keeps rendered (least recently used out)


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


def _check_selection(items: str, limit: int | None) -> None:
    if items not in ITEMS:
        raise UserError(f"--items {items!r} is not one of {', '.join(ITEMS)}")
    if limit is not None and limit < 1:
        raise UserError(f"--limit must be at least 1, got {limit}")


def _pages(s: Session, config: GraderConfig, items: str, limit: int | None, *columns: Any,
           upto: str | None = None) -> Iterator[list[Any]]:
    """The selected responses without a grade under the config (`columns` of them, two or
    more, the response id first: rows, not scalars), in response id order, a page of at most
    `PAGE` rows per query, retired ones left out (`db.study.retire`): at most `limit` in all,
    none after `upto`. Each page is read when the one before is used up, and no row past
    `limit` is read."""
    retired = taken_out(s).responses  # a retired response is not graded
    if items == "stale":  # graded before a revision of their case or task: graded again
        query = select(*columns).where(Response.response_id.in_(
            stale(s, windows(s), config_id=config.id).grades))
    else:
        graded = select(GraderScore.response_id).where(GraderScore.config_id == config.id)
        query = select(*columns).where(Response.response_id.not_in(graded))
    if items == "calibration":
        query = query.join(CalibrationItem, CalibrationItem.response_id == Response.response_id)
    if upto is not None:
        query = query.where(Response.response_id <= upto)
    after, left = None, limit
    while left is None or left > 0:
        size = PAGE if left is None else min(PAGE, left)
        page = query if after is None else query.where(Response.response_id > after)
        rows = s.exec(page.order_by(Response.response_id).limit(size)).all()
        if not rows:
            return
        after = rows[-1][0]
        kept = [r for r in rows if r[0] not in retired]
        if left is not None:
            left -= len(kept)
        if kept:
            yield kept
        if len(rows) < size:
            return


def _survey(s: Session, config: GraderConfig, items: str, limit: int | None
            ) -> tuple[int, set[str], str | None]:
    """(how many responses a run grades, their tasks, the last one's id), from their ids
    alone: what is checked and recorded before any request is built."""
    n, task_ids, last = 0, set(), None
    for page in _pages(s, config, items, limit, Response.response_id, Response.task_id):
        n += len(page)
        task_ids.update(task_id for _, task_id in page)
        last = page[-1][0]
    return n, task_ids, last


def select_items(s: Session, config: GraderConfig, items: str, limit: int | None) -> list[Response]:
    """The first `limit` (all without) responses a run would grade, as rows."""
    _check_selection(items, limit)
    ids = [r.response_id for page in _pages(s, config, items, limit, Response.response_id,
                                            Response.task_id) for r in page]
    rows = sorted(fetch_in(s, Response.response_id, ids), key=lambda r: r.response_id)
    require_reference(s, task_ids={r.task_id for r in rows})  # grading needs the answer
    return rows


class _Builder:
    """Builds the requests of one config, from responses' rows (response id, task id, text,
    turns): tasks and cases read once, a page at a time (`load`); the system message and
    schema of each task family built once (`llm.grader_request.grade_request`'s `parts`); a
    vision grader's key slices rendered once per case among the `CASE_IMAGES` last used."""

    COLUMNS = (Response.response_id, Response.task_id, Response.text, Response.turns)

    def __init__(self, s: Session, config: GraderConfig, rubric: Rubric) -> None:
        self.s, self.config, self.rubric = s, config, rubric
        self.tasks: dict[str, Task] = {}
        self.cases: dict[str, Case] = {}
        self.parts: dict = {}
        self.images: OrderedDict[str, list[dict]] = OrderedDict()

    def load(self, rows: list[Any]) -> None:
        """Read the tasks and cases of `rows` not read yet (a few queries per page)."""
        new = {r.task_id for r in rows} - self.tasks.keys()
        self.tasks.update((t.task_id, t) for t in fetch_in(self.s, Task.task_id, new))
        new_cases = {self.tasks[t].case_id for t in new} - self.cases.keys()
        self.cases.update((c.case_id, c) for c in fetch_in(self.s, Case.case_id, new_cases))

    def _images(self, case_id: str) -> list[dict] | None:
        if not self.config.vision:
            return None
        if case_id in self.images:
            self.images.move_to_end(case_id)
        else:
            self.images[case_id] = _key_slices(self.s, case_id)
            if len(self.images) > CASE_IMAGES:
                self.images.popitem(last=False)
        return self.images[case_id]

    def __call__(self, row: Any) -> tuple[GradeItem, Against]:
        """The request for one response, and what of it may change while it is graded."""
        task = self.tasks[row.task_id]
        case = self.cases[task.case_id]
        item = grade_request(self.config, self.rubric, task, case, row,
                             self._images(case.case_id), parts=self.parts)
        return item, (row.text, row.turns, case.ground_truth, content_digest(case, task))


Entry = tuple[GradeItem, CallResult, bool, bool, Against]  # (request, result, from the cache,
# new in the cache, what the request was built from): one item stored by `_Grades`


class _Grades:
    """What a grader run stores, through its `RunWriter`: grades, failures and new cache
    entries."""

    COUNTERS = ("graded", "failed", "from_cache", "prompt_tokens", "completion_tokens")

    def __init__(self, s: Session, run: GraderRun, config: GraderConfig, cached: set[str],
                 progress: Callable[[int, int], None] | None) -> None:
        self.s, self.run, self.config = s, run, config
        self.cached = cached  # request hashes in the cache or queued for it
        self.sent: dict[str, Against] = {}  # built, not stored: what its request was built from
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
        self.writer.add((item, result, from_cache, new, self.sent.pop(item.response_id)))

    def _changed(self, group: list[Entry]) -> set[str]:
        """The responses whose text (an admin's review) or case's reference answer (an
        import) changed since their request was built (`judged_against`: a review drops the
        grades of the words it replaces; an import changes no answer a grade used)."""
        built = {item.response_id: against for item, r, *_, against in group if r.ok}
        now = judged_against(self.s, list(built))
        return {rid for rid, against in now.items() if built[rid] != against}

    def _write(self, group: list[Entry]) -> dict[str, int]:
        """The group's grades, failures and new cache entries, as three multi-row inserts. A
        grade of a response whose text changed meanwhile is a failure (graded again next run)."""
        s, cid, run_id, now = self.s, self.config.id, self.run.id, utcnow()
        changed = self._changed(group)
        s.exec(delete(GraderFailure)
               .where(GraderFailure.config_id == cid,
                      GraderFailure.response_id.in_([item.response_id for item, *_ in group]))
               .execution_options(synchronize_session=False))
        scores, failures, cache = [], [], []
        for item, r, _, new, _ in group:
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
                                  for item, r, from_cache, *_ in group)}

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

    Direct calls stream: responses are read a page at a time and their requests built as
    requests go out, at most `concurrency` built at once (`_Stream`), so memory does not grow
    with the number of responses, and `limit` reads no more rows than it grades. A Batch API
    job holds every request in its file: `batch` builds them all.

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
    _check_selection(items, limit)
    n, task_ids, last = _survey(s, config, items, limit)
    require_reference(s, task_ids=task_ids)  # grading needs the answer
    key = (api_key_for(config.base_url, api_key, trusted=trust_base_url,
                       origin=f"grader config {config.id}")
           if n else None)  # a missing key or an unchosen address fails before any work
    run = GraderRun(config_id=config.id, items=items, n_items=n)
    open_run(s, run, actor=actor, config=config.id, items=items, n=n)
    store = _Grades(s, run, config, set(), progress)
    build = _Builder(s, config, rubric)
    pages = _pages(s, config, items, n, *_Builder.COLUMNS, upto=last) if n else iter(())
    job = SendJob([], rubric, config.base_url, key, concurrency=concurrency,
                  timeout=timeout, max_reasks=max_reasks, max_retries=max_retries,
                  prices=load_prices())
    with store.writer.ending():  # Ctrl-C, a page's rerun, an error: "interrupted"
        if batch:
            _batch_run(s, rubric, store, build, pages, job, poll_interval)
        else:
            asyncio.run(store.writer.flushing(_Stream(s, rubric, store, build, job).run(pages)))
    return RunSummary(run.id, run.n_items, run.graded, run.failed, run.from_cache,
                      run.prompt_tokens, run.completion_tokens,
                      None if run.cost_usd is None else round(run.cost_usd, 6))


class _Stream:
    """A run's direct calls: each response's request built when a slot among `concurrency`
    is free, looked up in the cache (with those built since the last look-up, in one query),
    then answered from the cache, joined to an identical request of this run (sent once, its
    tokens counted once), or sent; its slot is freed once its result is stored."""

    def __init__(self, s: Session, rubric: Rubric, store: _Grades, build: _Builder,
                 job: SendJob) -> None:
        self.s, self.rubric, self.store, self.build, self.job = s, rubric, store, build, job
        self.slots = asyncio.Semaphore(job.concurrency)
        self.out: dict[str, list[GradeItem]] = {}  # request hash sent -> its twins waiting
        self.failed: dict[str, CallResult] = {}  # request hash -> its failure in this run
        self.calls: set[asyncio.Task] = set()
        self.one: Callable[[GradeItem], Any] | None = None  # made when a request is sent
        self.error: BaseException | None = None

    async def run(self, pages: Iterator[list[Any]]) -> None:
        built: list[GradeItem] = []
        try:
            for page in pages:
                self.s.commit()  # ends the read: no lock is held while requests are out
                self.build.load(page)
                for row in page:
                    await self.slots.acquire()
                    self._raise_failed_call()
                    item, against = self.build(row)
                    self.store.sent[item.response_id] = against
                    built.append(item)
                    if self.slots.locked():  # every slot taken: look them up, send
                        self._dispatch(built)
                        built = []
            self._dispatch(built)
            while self.calls:
                await asyncio.wait(self.calls, return_when=asyncio.FIRST_EXCEPTION)
                self._raise_failed_call()
        finally:
            for call in self.calls:
                call.cancel()
            await asyncio.gather(*self.calls, return_exceptions=True)

    def _raise_failed_call(self) -> None:
        """What a call raised (a programming error: API trouble ends as a failed result)."""
        if self.error is not None:
            raise self.error

    def _stored(self, item: GradeItem, result: CallResult, from_cache: bool = False) -> None:
        self.store(item, result, from_cache=from_cache)
        self.slots.release()

    def _dispatch(self, built: list[GradeItem]) -> None:
        fresh = {w.request_hash for w in built} - self.out.keys() - self.failed.keys()
        if fresh & self.store.cached:  # answered in this run, maybe not committed yet
            self.store.writer.flush()
        hits = {h.request_hash: h for h in fetch_in(self.s, GraderCache.request_hash, fresh)}
        self.store.cached.update(hits)
        for w in built:
            h = w.request_hash
            cached = _from_cache(self.rubric, w, hits[h]) if h in hits else None
            if cached is not None:
                self._stored(w, cached, from_cache=True)
            elif h in self.out:
                self.out[h].append(w)
            elif h in self.failed:  # an identical request failed in this run: so does this
                self._stored(w, self.failed[h], from_cache=True)
            else:
                self.out[h] = []
                call = asyncio.get_running_loop().create_task(self._send(w))
                self.calls.add(call)
                call.add_done_callback(self._forget)

    def _forget(self, call: asyncio.Task) -> None:
        self.calls.discard(call)
        if not call.cancelled() and call.exception() is not None and self.error is None:
            self.error = call.exception()
            self.slots.release()  # the producer may wait for a slot: it wakes, and raises it

    async def _send(self, w: GradeItem) -> None:
        if self.one is None:  # a run answered from the cache needs no client (nor `openai`)
            job = self.job
            self.one = grader_call(make_client(job.base_url, job.api_key, job.timeout),
                                   self.rubric, timeout=job.timeout, prices=job.prices,
                                   max_reasks=job.max_reasks, max_retries=job.max_retries)
        result = await self.one(w)
        twins = self.out.pop(w.request_hash)
        if not result.ok:
            self.failed[w.request_hash] = result
        self._stored(w, result)
        for twin in twins:
            self._stored(twin, result, from_cache=True)  # its tokens were counted once


def _batch_run(s: Session, rubric: Rubric, store: _Grades, build: _Builder,
               pages: Iterator[list[Any]], job: SendJob, poll_interval: float) -> None:
    """Every request built (a Batch API job holds them all in its file), those answered by
    the cache stored, identical ones sent once, the rest sent as Batch API jobs."""
    work: list[GradeItem] = []
    for page in pages:
        build.load(page)
        for row in page:
            item, store.sent[row.response_id] = build(row)
            work.append(item)
    hits = {h.request_hash: h for h in
            fetch_in(s, GraderCache.request_hash, (w.request_hash for w in work))}
    store.cached.update(hits)
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

    if to_send:
        client = make_client(job.base_url, job.api_key, job.timeout)
        asyncio.run(store.writer.flushing(_batches(
            client, rubric, to_send, store_all, poll_interval=poll_interval,
            max_reasks=job.max_reasks, prices=job.prices)))


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
    _check_selection(items, None)
    n, task_ids, last = _survey(s, config, items, None)
    require_reference(s, task_ids=task_ids)
    build = _Builder(s, config, rubric)
    cached = chars = 0
    for page in _pages(s, config, items, n, *_Builder.COLUMNS, upto=last):  # a page at a time
        build.load(page)
        work = [build(row)[0] for row in page]
        cached += len(fetch_in(s, GraderCache.request_hash, (w.request_hash for w in work),
                               GraderCache.request_hash))
        chars += sum(len(json.dumps(w.request.body())) for w in work)
    prompt = chars // 4
    completion = (n - cached) * config.max_tokens // 3
    cost = estimate_cost(config.model, prompt * (n - cached) // max(n, 1), completion)
    return Plan("grade", items=n, cached=cached, prompt_tokens=prompt,
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
