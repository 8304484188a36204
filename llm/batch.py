"""The OpenAI Batch API: one input line per request, upload, create, poll, read the result
files as they stream, and the grader's rounds of batches (`run_batch`) with the same checks,
re-asks and retries as `llm.call.call_structured`. Free-text answers of models under test read
their lines with `batch_failure`, `batch_body_problem` and `batch_choice` (`llm.model_call`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from llm.call import (
    CHAT_ENDPOINT,
    TRANSIENT_STATUS,
    CallResult,
    LLMRequest,
    Validate,
    check_answer,
    completion_problem,
    estimate_cost,
    reask_messages,
    redactor,
    server_text,
)
from rubric.schema import canonical_json

if TYPE_CHECKING:
    from openai import AsyncOpenAI

log = logging.getLogger(__name__)
BATCH_DONE = frozenset({"completed", "failed", "expired", "cancelled"})



@dataclass
class _BatchItem:
    req: LLMRequest
    messages: list[dict]
    result: CallResult = field(default_factory=lambda: CallResult(ok=False))
    retries: int = 0


def batch_failure(entry: dict | None) -> tuple[str, bool] | None:
    """Why a Batch API result line holds no answer, and whether sending it again may help
    (no line, 429, 408, 409, 5xx); None for a line with an HTTP 200 response."""
    response = (entry or {}).get("response") or {}
    status = response.get("status_code")
    if entry is not None and status == 200:
        return None
    if entry is None:
        problem = "no result line"
    elif entry.get("error"):
        err = entry["error"]
        problem = (f"batch line error {server_text(str(err.get('code')), 60)}: "
                   f"{server_text(str(err.get('message')), 200)}")
    else:
        error = (response.get("body") or {}).get("error") or {}
        message = error.get("message", "") if isinstance(error, dict) else error
        problem = f"HTTP {server_text(str(status), 20)}: {server_text(str(message), 200)}"
    return problem, status is None or status in TRANSIENT_STATUS or status >= 500


def batch_body_problem(entry: dict) -> str | None:
    """What makes an HTTP 200 result line's body unusable as a chat completion, or None."""
    from openai._models import construct_type
    from openai.types.chat import ChatCompletion

    body = entry["response"].get("body") or {}
    return completion_problem(construct_type(type_=ChatCompletion, value=body))


def batch_choice(entry: dict, result: CallResult) -> dict | None:
    """The first choice of an HTTP 200 Batch API result line (None if it has none); the model,
    fingerprint and tokens go into `result`."""
    body = entry["response"].get("body") or {}
    result.model_returned = body.get("model")
    result.system_fingerprint = body.get("system_fingerprint")
    usage = body.get("usage") or {}
    result.prompt_tokens += usage.get("prompt_tokens") or 0
    result.completion_tokens += usage.get("completion_tokens") or 0
    choices = body.get("choices") or []
    return choices[0] if choices else None


def batch_line(custom_id: str, body: dict) -> str:
    """One line of a Batch API input file for the Chat Completions endpoint."""
    line = {"custom_id": custom_id, "method": "POST", "url": CHAT_ENDPOINT, "body": body}
    return canonical_json(line) + "\n"


async def submit_batch(
    api: AsyncOpenAI, lines: str, *, wanted: Collection[str], poll_interval: float,
    max_wait: float | None, on_poll: Callable[[Any], Any] | None,
) -> tuple[Any, Mapping[str, dict]]:
    """Upload, create, poll until done (or `max_wait`, then cancel); {custom_id: result line}
    of the `wanted` custom_ids, read from the output and error files as they stream
    (`llm.batch_file`: UserError when a file or a line is over its cap)."""
    from llm.batch_file import ResultLines, read_result_file

    uploaded = await api.files.create(
        file=("grader_batch.jsonl", lines.encode(), "application/jsonl"), purpose="batch"
    )
    batch = await api.batches.create(
        input_file_id=uploaded.id, endpoint=CHAT_ENDPOINT, completion_window="24h"
    )
    log.info("batch %s created (%d requests)", batch.id, lines.count("\n"))
    started = time.monotonic()
    while batch.status not in BATCH_DONE:
        if max_wait is not None and time.monotonic() - started > max_wait:
            batch = await api.batches.cancel(batch.id)
            if batch.status not in BATCH_DONE:  # cancelling: poll once more for partial output
                await asyncio.sleep(poll_interval)
                batch = await api.batches.retrieve(batch.id)
            break
        await asyncio.sleep(poll_interval)
        batch = await api.batches.retrieve(batch.id)
        if on_poll is not None:
            on_poll(batch)
    entries = ResultLines()
    for file_id in (batch.output_file_id, batch.error_file_id):
        if file_id:
            await read_result_file(api, file_id, wanted, entries)
    return batch, entries


def _batch_problem(batch: Any) -> str:
    errors = getattr(getattr(batch, "errors", None), "data", None) or []
    detail = "; ".join(f"{e.code}: {e.message}" for e in errors)
    return (f"batch {server_text(str(batch.id), 80)} {server_text(str(batch.status), 40)}"
            + (f" ({server_text(detail, 200)})" if detail else ""))


async def run_batch(
    client: AsyncOpenAI,
    requests: Mapping[str, LLMRequest],
    *,
    poll_interval: float,
    validate: Validate,
    max_reasks: int = 2,
    max_retries: int = 2,
    prices: Mapping | None = None,
    max_wait: float | None = None,
    on_poll: Callable[[Any], Any] | None = None,
    api_retries: int = 5,
) -> dict[str, CallResult]:
    """Grade `requests` ({custom_id: request}) through the Batch API, with the same checks as
    `call_structured`.

    Each round writes a JSONL file, uploads it (purpose "batch"), creates a batch on
    /v1/chat/completions with completion_window "24h", polls every `poll_interval` seconds,
    downloads the output and error files and checks every answer. Items whose answer is malformed
    or invalid are re-asked in a further round (at most `max_reasks`, with the same appended
    turns as `call_structured`); items that failed transiently (429/5xx line, expired, missing)
    are sent again (at most `max_retries` rounds). A batch that fails as a whole, or does not end
    within `max_wait` seconds (then it is cancelled), ends its pending items as failures.
    The file/batch endpoints use the SDK's own retries (`api_retries`; the SDK honours
    `retry-after-ms` / `Retry-After` up to 120 s, openai `_base_client._calculate_retry_timeout`).
    Costs use the batch discount of the price table.
    """
    api = client.with_options(max_retries=api_retries)
    redact = redactor(client)
    items = {cid: _BatchItem(req, list(req.messages)) for cid, req in requests.items()}
    pending = list(items)
    start = time.perf_counter()

    def settle(cid: str, ok: bool, data: dict | None = None, reason: str | None = None) -> None:
        item = items[cid]
        res = item.result
        res.ok, res.data, res.reason, res.raw = ok, data, redact(reason), redact(res.raw)
        res.latency_s = time.perf_counter() - start
        model = res.model_returned or item.req.model
        res.cost_usd = estimate_cost(
            model, res.prompt_tokens, res.completion_tokens, prices, batch=True
        )

    while pending:
        lines = "".join(batch_line(cid, items[cid].req.body(items[cid].messages)) for cid in pending)
        for cid in pending:
            items[cid].result.attempts += 1
        batch, entries = await submit_batch(
            api, lines, wanted=set(pending), poll_interval=poll_interval, max_wait=max_wait,
            on_poll=on_poll)
        whole_batch_failed = batch.status in ("failed", "cancelled") or (
            max_wait is not None and batch.status != "completed"
        )
        again: list[str] = []
        for cid in pending:
            item, res = items[cid], items[cid].result
            entry = entries.get(cid)
            failure = batch_failure(entry)
            if failure is not None:
                problem, retryable = failure
                if entry is None:
                    problem = f"no result in {_batch_problem(batch)}"
                if retryable and not whole_batch_failed and item.retries < max_retries:
                    item.retries += 1
                    again.append(cid)
                else:
                    settle(cid, False, reason=f"{problem} (gave up after {res.attempts} attempts)")
                continue
            if (shape := batch_body_problem(entry)) is not None:
                settle(cid, False, reason=f"malformed response: {shape}")
                continue
            choice = batch_choice(entry, res)
            if choice is None:
                settle(cid, False, reason="malformed: response without choices")
                continue
            message = choice.get("message") or {}
            res.raw = message.get("content")
            data, problem, may_reask = check_answer(
                res.raw, choice.get("finish_reason"), message.get("refusal"), validate
            )
            if problem is None:
                settle(cid, True, data=data)
            elif may_reask and res.reasks < max_reasks and not whole_batch_failed:
                res.reasks += 1
                item.messages = reask_messages(item.messages, res.raw, problem)
                again.append(cid)
            else:
                settle(cid, False, reason=f"{problem} (after {res.reasks + 1} answer(s))")
        pending = again
    return {cid: items[cid].result for cid in requests}
