"""Collect a model's answers to the benchmark: the exam the humans take, sent as chat.

For every selected task and sample without a response of the model, the task is sent (with its
case's key slices unless `images="none"`), a level-3 task as a conversation with one answer per
stage, and the answers are stored as a `Response` of the model, with a blind code like an
imported one, and its provenance (`CollectedResponse`: run, template version and hash, request
hashes, image hashes, tokens, cost). Runs work like grader runs (grading.grader): bounded
concurrency or the Batch API, retries, a cache keyed by the hash of each exact request
(`ModelCache`), finished items committed in groups every 0.25 s and on Ctrl-C, so a re-run after
an interruption or a kill collects only what is missing; failures are kept with their reason.
A run is written by llm.run_writer, as grader runs are: it records which process owns
it, and a run left "running" by a process that is gone is marked "interrupted" when the next
run starts.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from sqlalchemy import func, insert, tuple_
from sqlmodel import Session, delete, select

from db.bundle.importer import new_blind_codes
from db.models import (
    FAMILIES,
    LEVELS,
    Case,
    CollectedResponse,
    CollectionFailure,
    CollectionRun,
    ModelCache,
    Response,
    Series,
    Task,
    utcnow,
)
from db.queries import fetch_in
from db.raters.response_flags import flag_new
from db.study.retire import check_model, check_task_ids, taken_out
from errors import UserError
from llm.batch import batch_line, submit_batch
from llm.call import CallResult, estimate_cost, load_prices, run_bounded
from llm.conditions import majority
from llm.grader_request import api_key_for, make_client
from llm.key_images import key_images
from llm.model_call import batch_outcome, call_text, settle_batch
from llm.model_request import (
    TEMPLATE_VERSION,
    ChatRequest,
    CollectSettings,
    KeyImage,
    first_message,
    n_turns,
    request_key,
    template_hash,
    turn_request,
)
from llm.plan import Plan
from llm.run_writer import RunWriter, open_run
from rubric.schema import canonical_json

Progress = Callable[[int, int], None]
IMAGE_TOKENS = 255  # OpenAI vision, high detail, one 512 px tile: 85 + 170 tokens (estimates)


# ---------------------------------------------------------------- what to collect


@dataclass(frozen=True)
class Selection:
    """Which tasks: by id, or by family and/or level (none given: every task)."""

    tasks: tuple[str, ...] = ()
    families: tuple[str, ...] = ()
    levels: tuple[int, ...] = ()

    def as_dict(self) -> dict[str, list]:
        return {k: list(v) for k, v in asdict(self).items() if v}


def select_tasks(s: Session, selection: Selection) -> list[Task]:
    """The selected tasks in id order; a UserError for an unknown id, family or level."""
    if selection.tasks and (selection.families or selection.levels):
        raise UserError("--tasks cannot be combined with --families or --levels")
    for family in selection.families:
        if family not in FAMILIES:
            raise UserError(f"--families: {family!r} is not one of {', '.join(FAMILIES)}")
    for level in selection.levels:
        if level not in LEVELS:
            raise UserError(f"--levels: {level!r} is not one of 1, 2, 3")
    query = select(Task).order_by(Task.task_id)
    if selection.tasks:
        found = {t.task_id: t for t in fetch_in(s, Task.task_id, selection.tasks)}
        missing = [t for t in selection.tasks if t not in found]
        if missing:
            raise UserError(f"--tasks: no task {missing[0]!r}")
        check_task_ids(s, selection.tasks, "--tasks")
        return sorted(found.values(), key=lambda t: t.task_id)
    if selection.families:
        query = query.where(Task.family.in_(selection.families))
    if selection.levels:
        query = query.where(Task.level.in_(selection.levels))
    retired = taken_out(s).tasks  # a retired task (or case) is not collected, nor a practice
    # task unless named with --tasks (never counted: db.study.practice)
    tasks = [t for t in s.exec(query) if t.task_id not in retired and not t.practice]
    if not tasks:
        raise UserError("no task matches the selection" if selection.as_dict()
                        else "the study has no tasks (nmb import or nmb demo first)")
    return tasks


def response_id(model: str, task_id: str, sample: int) -> str:
    """The id of a collected response: the same for the same (model, task, sample)."""
    digest = hashlib.sha256(canonical_json([model, task_id, sample]).encode()).hexdigest()
    return f"collected-{digest[:24]}"


def _missing(s: Session, model: str, tasks: list[Task], samples: int) -> list[tuple[Task, int]]:
    """(task, sample) pairs without a response of `model` (collected or imported)."""
    have = set(s.exec(select(Response.task_id, Response.sample).where(Response.model == model)))
    return [(t, k) for t in tasks for k in range(samples) if (t.task_id, k) not in have]


@dataclass
class Item:
    """One (task, sample) to collect, with what its requests need."""

    task: Task
    case: Case
    sample: int
    images: list[KeyImage]
    blind_code: str = ""


@dataclass
class _Turn:
    keys: list[str]  # one request per vote (self-consistency: k; else one)
    result: CallResult  # the turn's answer: under self-consistency the majority's (votes summed)
    cached: bool
    finals: list[str] | None = None  # self-consistency: each vote's final answer


def _voted(keys: list[str], results: list[CallResult], cached: bool) -> _Turn:
    """One turn from its votes' results: a single answer as it is; k answers (self-consistency,
    llm.conditions) as the majority's text, tokens and cost summed; failed when one failed."""
    if len(results) == 1:
        return _Turn(keys, results[0], cached)
    failed = next((r for r in results if not r.ok), None)
    costs = [r.cost_usd for r in results]
    chosen, finals = (0, None) if failed else majority([r.data["text"] for r in results])
    pick = failed or results[chosen]
    combined = CallResult(
        ok=failed is None, data=None if failed else {"text": pick.data["text"]},
        reason=failed.reason if failed else None, raw=pick.raw,
        model_returned=pick.model_returned, system_fingerprint=pick.system_fingerprint,
        prompt_tokens=sum(r.prompt_tokens for r in results),
        completion_tokens=sum(r.completion_tokens for r in results),
        latency_s=sum(r.latency_s for r in results), attempts=sum(r.attempts for r in results),
        cost_usd=None if None in costs else sum(costs))
    return _Turn(keys, combined, cached, finals)


@dataclass
class _Conversation:
    """An item's turns so far; done when every turn is answered or one failed."""

    item: Item
    settings: CollectSettings
    turns: list[_Turn] = field(default_factory=list)

    @property
    def answers(self) -> list[str]:
        return [t.result.data["text"] for t in self.turns if t.result.ok]

    @property
    def failed(self) -> bool:
        return any(not t.result.ok for t in self.turns)

    @property
    def done(self) -> bool:
        return self.failed or len(self.turns) == n_turns(self.item.task)

    def next_request(self) -> tuple[ChatRequest, str]:
        """The next turn's request and key (one vote; `next_requests` for all)."""
        return self.next_requests()[0]

    def next_requests(self) -> list[tuple[ChatRequest, str]]:
        """The next turn's request with one key per vote (self-consistency: k keys, the same
        body; else one key, as before conditions)."""
        it = self.item
        req = turn_request(self.settings, it.task, it.case, it.images, self.answers)
        votes = self.settings.votes
        return [(req, request_key(req, base_url=self.settings.base_url,
                                  sample=it.sample if votes == 1 else [it.sample, v]))
                for v in range(votes)]


# ---------------------------------------------------------------- storing


class _Store:
    """What a collection run stores, through its `RunWriter`: finished items (responses with
    their provenance, or failures) and new cache entries; and the cached answers it reads."""

    COUNTERS = ("collected", "failed", "from_cache", "prompt_tokens", "completion_tokens",
                "image_count")

    def __init__(self, s: Session, run: CollectionRun, progress: Progress | None) -> None:
        self.s, self.run = s, run
        self.writer: RunWriter[_Conversation | dict] = RunWriter(
            s, run, self._write, {**dict.fromkeys(self.COUNTERS, 0), "cost_usd": None}, progress)
        self.answers: dict[str, CallResult] = {}  # answered in this run, by request key

    def preload(self, keys: list[str]) -> None:
        """Read the cached answers among `keys` in a few queries (then `cached` needs none)."""
        for hit in fetch_in(self.s, ModelCache.request_hash, keys):
            self.answers[hit.request_hash] = self._result(hit)
        self.s.commit()  # ends the read: no lock is held while requests are out

    def cached(self, key: str) -> CallResult | None:
        """The stored answer to the request with this key, if any (the read ends at once)."""
        if key in self.answers:
            return self.answers[key]
        hit = self.s.get(ModelCache, key)
        self.s.commit()  # nothing is pending between commits: this only ends the read
        return None if hit is None else self._result(hit)

    def replay(self, conv: _Conversation) -> bool:
        """Answer the conversation's next turns from the cache while it can; True when that
        finished it."""
        while not conv.done:
            keys = [key for _, key in conv.next_requests()]
            hits = [self.cached(key) for key in keys]
            if None in hits:
                return False
            conv.turns.append(_voted(keys, hits, True))
        self.finish(conv)
        return True

    def _result(self, hit: ModelCache) -> CallResult:
        return CallResult(ok=True, data={"text": hit.text}, raw=hit.text,
                          model_returned=hit.model_returned,
                          system_fingerprint=hit.system_fingerprint,
                          prompt_tokens=hit.prompt_tokens, completion_tokens=hit.completion_tokens,
                          cost_usd=estimate_cost(hit.model_returned
                                                 or self.run.settings.get("model", self.run.model),
                                                 hit.prompt_tokens, hit.completion_tokens))

    def sent(self, key: str, req: ChatRequest, result: CallResult) -> None:
        """A request was sent: count what it cost; keep its answer."""
        self.writer.count(prompt_tokens=result.prompt_tokens,
                          completion_tokens=result.completion_tokens,
                          image_count=req.image_count * result.attempts, cost_usd=result.cost_usd)
        if result.ok and key not in self.answers:
            self.answers[key] = result
            self.writer.add({
                "request_hash": key, "text": result.data["text"],
                "model_returned": result.model_returned,
                "system_fingerprint": result.system_fingerprint,
                "prompt_tokens": result.prompt_tokens,
                "completion_tokens": result.completion_tokens, "created_at": utcnow()},
                item=False)

    def finish(self, conv: _Conversation) -> None:
        self.writer.add(conv)

    def _rows(self, conv: _Conversation) -> tuple[str, dict, dict | None]:
        """("collected" | "failed", the response or failure row, the provenance row)."""
        it, model, now = conv.item, self.run.model, utcnow()  # the model's label (MODEL@CONDITION)
        if conv.failed:
            last = conv.turns[-1].result
            turn = f" (turn {len(conv.turns)})" if n_turns(it.task) > 1 else ""
            return "failed", {"run_id": self.run.id, "model": model, "task_id": it.task.task_id,
                              "sample": it.sample, "reason": (last.reason or "unknown") + turn,
                              "attempts": sum(t.result.attempts for t in conv.turns),
                              "created_at": now}, None
        rid = response_id(model, it.task.task_id, it.sample)
        answers = conv.answers
        results = [t.result for t in conv.turns]
        costs = [r.cost_usd for r in results]
        response = {"response_id": rid, "task_id": it.task.task_id, "source": "model",
                    "model": model, "user_id": None, "sample": it.sample, "text": answers[0],
                    "turns": answers[1:] or None, "blind_code": it.blind_code,
                    "condition": conv.settings.condition.name if conv.settings.condition
                    else None, "created_at": now}
        provenance = {
            "response_id": rid, "run_id": self.run.id, "template_version": TEMPLATE_VERSION,
            "template_hash": self.run.template_hash,
            "request_hashes": [key for t in conv.turns for key in t.keys],
            "votes": ([t.finals or [] for t in conv.turns] if conv.settings.votes > 1
                      else None),
            "image_sha256": [image.sha256 for image in it.images],
            "model_returned": results[-1].model_returned,
            "system_fingerprint": results[-1].system_fingerprint,
            "prompt_tokens": sum(r.prompt_tokens for r in results),
            "completion_tokens": sum(r.completion_tokens for r in results),
            "latency_s": sum(r.latency_s for r in results),
            "cost_usd": None if None in costs else sum(costs), "created_at": now}
        return "collected", response, provenance

    def _write(self, group: list[_Conversation | dict]) -> dict[str, int]:
        """The group's cache entries, responses, provenance and failures, as multi-row inserts."""
        convs = [e for e in group if isinstance(e, _Conversation)]
        cache = [e for e in group if isinstance(e, dict)]
        rows = [(conv, *self._rows(conv)) for conv in convs]
        if convs:  # an item's earlier failure goes, whatever became of it now
            done = [(c.item.task.task_id, c.item.sample) for c in convs]
            self.s.exec(delete(CollectionFailure)
                        .where(CollectionFailure.model == self.run.model,
                               tuple_(CollectionFailure.task_id, CollectionFailure.sample)
                               .in_(done))
                        .execution_options(synchronize_session=False))
        collected = [dict(r) for _, kind, r, _ in rows if kind == "collected"]  # a retry redoes it
        flags = flag_new(self.s, collected)  # names of models redacted, as at import
        conn = self.s.connection()
        for table, part in (
                (ModelCache, cache),
                (Response, collected),
                (CollectedResponse, [p for _, kind, _, p in rows if kind == "collected"]),
                (CollectionFailure, [r for _, kind, r, _ in rows if kind == "failed"])):
            if part:
                conn.execute(insert(table), part)
        self.s.add_all(flags)
        return {"collected": len(collected), "failed": len(rows) - len(collected),
                "from_cache": sum(kind == "collected" and all(t.cached for t in conv.turns)
                                  for conv, kind, _, _ in rows)}


# ---------------------------------------------------------------- sending


@dataclass
class _Sender:
    store: _Store
    client: Any
    timeout: float
    max_retries: int
    max_resends: int
    prices: dict

    async def converse(self, conv: _Conversation) -> _Conversation:
        """The remaining turns of one item, each from the cache or sent, in order."""
        while not conv.done:
            keys, results, cached = [], [], True
            for req, key in conv.next_requests():  # self-consistency: its k votes in turn
                result = self.store.cached(key)
                if result is None:
                    cached = False
                    result = await call_text(self.client, req, timeout=self.timeout,
                                             max_retries=self.max_retries,
                                             max_resends=self.max_resends, prices=self.prices)
                    self.store.sent(key, req, result)
                keys.append(key)
                results.append(result)
                if not result.ok:
                    break
            conv.turns.append(_voted(keys, results, cached))
        self.store.finish(conv)
        return conv

    async def direct(self, convs: list[_Conversation], concurrency: int) -> None:
        await run_bounded(convs, self.converse, concurrency)

    async def batches(self, convs: list[_Conversation], poll_interval: float) -> None:
        """Rounds of Batch API jobs: each round sends the next turn of every unfinished
        conversation (a level-3 task takes one round per turn); transient failures and bad
        answers go again in the next round, within the same limits as direct calls."""
        api = self.client.with_options(max_retries=5)
        pending, tries = list(convs), {}
        while pending:
            lines: dict[str, tuple[_Conversation, ChatRequest, str]] = {
                f"i{n}": (conv, *conv.next_request()) for n, conv in enumerate(pending)
                if not self.store.replay(conv)}
            if not lines:
                return
            body = "".join(batch_line(cid, req.body()) for cid, (_, req, _) in lines.items())
            batch, entries = await submit_batch(api, body, wanted=set(lines),
                                                 poll_interval=poll_interval, max_wait=None,
                                                 on_poll=None)
            whole_failed = batch.status != "completed"
            pending = []
            for cid, (conv, req, key) in lines.items():
                result, start = tries.setdefault(key, (CallResult(ok=False), time.perf_counter()))
                result.attempts += 1
                verdict, detail = batch_outcome(entries.get(cid), result)
                again = (verdict == "transient" and result.attempts <= self.max_retries) or (
                    verdict == "bad" and result.reasks < self.max_resends)
                if again and not whole_failed:
                    result.reasks += verdict == "bad"
                    pending.append(conv)
                    continue
                ok = verdict == "ok"
                if not ok:
                    gone = f"; batch {batch.id} {batch.status}" if whole_failed else ""
                    detail = f"{detail}{gone} (after {result.attempts} attempts)"
                settle_batch(result, req, ok, detail if ok else None, None if ok else detail,
                             start, self.prices, self.client)
                self.store.sent(key, req, result)
                conv.turns.append(_Turn([key], result, False))
                if conv.done:
                    self.store.finish(conv)
                else:
                    pending.append(conv)


# ---------------------------------------------------------------- runs


def check_condition(s: Session, settings: CollectSettings) -> None:
    """A condition's name means one condition: a UserError when an earlier run of this
    MODEL@CONDITION recorded other added text, strategy or votes (choose a new name)."""
    wanted = settings.condition.as_dict() if settings.condition else None
    for run in s.exec(select(CollectionRun).where(CollectionRun.model == settings.label)):
        before = (run.settings or {}).get("condition")
        if before is not None and before != wanted:
            raise UserError(f"condition {settings.condition.name!r} of {settings.model!r} was "
                            f"collected before (run {run.id}) with other text, strategy or "
                            "samples: give this one another name")


@dataclass
class CollectSummary:
    run_id: int
    model: str
    tasks: int
    samples: int
    items: int
    already_collected: int
    collected: int
    failed: int
    from_cache: int
    prompt_tokens: int
    completion_tokens: int
    image_count: int
    cost_usd: float | None
    failures: list[dict] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out.pop("failures")
        return out


def check_run_options(*, concurrency: int, timeout: float, poll_interval: float) -> None:
    """UserError naming the first bad option."""
    import math

    if not isinstance(concurrency, int) or isinstance(concurrency, bool) or not (
            1 <= concurrency <= 1000):
        raise UserError(f"--concurrency must be an integer from 1 to 1000, got {concurrency!r}")
    for name, value in (("timeout", timeout), ("poll-interval", poll_interval)):
        if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
            raise UserError(f"--{name} must be a positive number of seconds, got {value!r}")


def _items(s: Session, settings: CollectSettings, pairs: list[tuple[Task, int]]) -> list[Item]:
    """The items, each case's key slices rendered once."""
    cases = {c.case_id: c for c in fetch_in(s, Case.case_id, {t.case_id for t, _ in pairs})}
    images: dict[str, list[KeyImage]] = {}
    for case_id in sorted(cases) if settings.images == "key" else ():
        images[case_id] = key_images(s, cases[case_id])
    return [Item(t, cases[t.case_id], k, images.get(t.case_id, [])) for t, k in pairs]


def collect(
    s: Session, settings: CollectSettings, selection: Selection = Selection(), *,
    concurrency: int = 4, batch: bool = False, api_key: str | None = None,
    timeout: float = 120.0, poll_interval: float = 10.0, max_retries: int = 5,
    max_resends: int = 2, progress: Progress | None = None, actor: str | None = None,
) -> CollectSummary:
    """Collect every selected (task, sample) the model has no response for yet.

    `settings` are what the user gave for this run (`nmb collect` options, the /models form),
    never read back from a stored run, so its base URL is the user's choice."""
    settings.check()
    check_run_options(concurrency=concurrency, timeout=timeout, poll_interval=poll_interval)
    if batch and settings.votes > 1:
        raise UserError("--batch does not take --strategy self-consistency (each turn's votes "
                        "are counted before the next turn is asked): collect without --batch")
    check_model(s, settings.model)
    if settings.condition is not None:
        check_model(s, settings.label)
        check_condition(s, settings)
    tasks = select_tasks(s, selection)
    pairs = _missing(s, settings.label, tasks, settings.samples)
    key = (api_key_for(settings.base_url, api_key, trusted=settings.base_url)  # typed: see above
           if pairs else None)  # before any work
    items = _items(s, settings, pairs)
    for item, code in zip(items, new_blind_codes(s, len(items)), strict=True):
        item.blind_code = code
    run = CollectionRun(model=settings.label, base_url=settings.base_url,
                        settings={**settings.as_dict(), "selection": selection.as_dict()},
                        template_version=TEMPLATE_VERSION, template_hash=template_hash(),
                        batch=batch, n_items=len(items))
    open_run(s, run, actor=actor, model=settings.label, n=len(items), batch=batch)
    store = _Store(s, run, progress)
    convs = [_Conversation(item, settings) for item in items]
    with store.writer.ending():  # Ctrl-C, SIGTERM, a page's rerun, an error: "interrupted"
        store.preload([conv.next_request()[1] for conv in convs])
        convs = [conv for conv in convs if not store.replay(conv)]
        if convs:  # a run answered from the cache needs no client (nor the openai import)
            sender = _Sender(store, make_client(settings.base_url, key, timeout), timeout,
                             max_retries, max_resends, load_prices())
            work = (sender.batches(convs, poll_interval) if batch
                    else sender.direct(convs, concurrency))
            asyncio.run(store.writer.flushing(work))
    return CollectSummary(
        run.id, settings.label, len(tasks), settings.samples, len(items),
        len(tasks) * settings.samples - len(items), run.collected, run.failed, run.from_cache,
        run.prompt_tokens, run.completion_tokens, run.image_count,
        None if run.cost_usd is None else round(run.cost_usd, 6),
        [{"task_id": f.task_id, "sample": f.sample, "reason": f.reason}
         for f in failures(s, model=settings.label, run_id=run.id)])


# ---------------------------------------------------------------- before and after a run


def estimate(s: Session, settings: CollectSettings, selection: Selection = Selection()) -> Plan:
    """What a run would send, before running: items, requests, images and a rough cost.

    Text at 4 characters per token (OpenAI's rule of thumb), each image at `IMAGE_TOKENS`,
    every later turn repeating the conversation so far with answers of `max_tokens / 3`.
    """
    settings.check()
    tasks = select_tasks(s, selection)
    pairs = _missing(s, settings.label, tasks, settings.samples)
    cases = {c.case_id: c for c in fetch_in(s, Case.case_id, {t.case_id for t, _ in pairs})}
    n_series: dict[str, int] = {}  # images per case from its series: 3 per volume, 1 per picture
    n_pictures: dict[str, int] = {}
    for cid, picture, n in s.exec(select(Series.case_id, Series.picture, func.count())
                                  .where(Series.case_id.in_(list(cases)))
                                  .group_by(Series.case_id, Series.picture)).all():
        n_series[cid] = n_series.get(cid, 0) + (n if picture else 3 * n)
        n_pictures[cid] = n_pictures.get(cid, 0) + (n if picture else 0)
    answer = (settings.max_tokens or 1500) // 3
    requests = images = prompt = 0
    for task, _ in pairs:
        case = cases[task.case_id]
        shown = 0 if settings.images == "none" else (
            len(case.key_slices) + n_pictures.get(case.case_id, 0) if case.key_slices
            else n_series.get(case.case_id, 0))
        text = len(json.dumps(first_message(task, case, [])["content"])) // 4
        for turn in range(n_turns(task)):
            requests += settings.votes
            images += shown * settings.votes
            prompt += (text + shown * IMAGE_TOKENS + turn * (answer + 30)) * settings.votes
    completion = requests * answer
    return Plan("collect", tasks=len(tasks), items=len(pairs), requests=requests, images=images,
                prompt_tokens=prompt, completion_tokens=completion,
                cost_usd=estimate_cost(settings.model, prompt, completion))


def item_of(s: Session, settings: CollectSettings, task: Task, sample: int = 0) -> Item:
    """One (task, sample) to collect, with its case's key slices rendered (for a preflight)."""
    return _items(s, settings, [(task, sample)])[0]


def runs(s: Session, *, limit: int = 50) -> list[CollectionRun]:
    """The latest collection runs, newest first."""
    return list(s.exec(select(CollectionRun).order_by(CollectionRun.id.desc()).limit(limit)))


def failures(s: Session, *, model: str | None = None,
             run_id: int | None = None) -> list[CollectionFailure]:
    """Items whose latest attempt failed (of one model, or one run), with the reason."""
    query = select(CollectionFailure).order_by(CollectionFailure.model,
                                               CollectionFailure.task_id, CollectionFailure.sample)
    if model is not None:
        query = query.where(CollectionFailure.model == model)
    if run_id is not None:
        query = query.where(CollectionFailure.run_id == run_id)
    return list(s.exec(query))
