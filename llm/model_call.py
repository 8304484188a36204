"""Calls to a model under test: free-text chat completions, retried like the grader's.

The grader's policy (llm.call), for answers that are text rather than JSON: transient
failures (429, 408, 409, 5xx, timeouts, connection errors) are retried at most `max_retries`
times, waiting the server's `Retry-After` when given, else exponential backoff with jitter; each
attempt has a total deadline (`timeout`: connect, send, wait and read together). A bad answer
(empty, cut at the token limit, longer than `MAX_ANSWER_CHARS`) is asked again, the same request,
at most `max_resends` times: sampling may give a good one. A refusal is an answer, stored as
given. Every call ends as a `CallResult` with `data={"text": ...}` or a `reason`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

from db.text_limits import ANSWER
from llm.batch import batch_body_problem, batch_choice, batch_failure
from llm.call import CallResult, complete, estimate_cost, redactor
from llm.model_request import ChatRequest

log = logging.getLogger(__name__)

MAX_ANSWER_CHARS = ANSWER  # a response's text: the limit a bundle's responses have too


def answer_text(content: str | None, finish_reason: str | None,
                refusal: str | None) -> tuple[str | None, str | None]:
    """(answer, problem): the answer's text, or why it cannot be stored."""
    if finish_reason == "length":
        return None, "answer cut at the token limit (finish_reason=length; raise --max-tokens)"
    text = (content if content and content.strip() else refusal) or ""
    if not text.strip():
        return None, "empty answer"
    if len(text) > MAX_ANSWER_CHARS:
        return None, f"answer longer than {MAX_ANSWER_CHARS:,} characters"
    return text.strip(), None


def _settle(result: CallResult, req: ChatRequest, ok: bool, text: str | None, reason: str | None,
            start: float, prices: Mapping | None, batch: bool, redact: Any) -> CallResult:
    result.ok, result.reason = ok, redact(reason)
    result.data = {"text": text} if ok else None
    result.raw = redact(text if ok else result.raw)
    result.latency_s = time.perf_counter() - start
    result.cost_usd = estimate_cost(result.model_returned or req.model, result.prompt_tokens,
                                    result.completion_tokens, prices, batch=batch)
    return result


async def call_text(client: Any, req: ChatRequest, *, timeout: float, max_retries: int = 5,
                    max_resends: int = 2, prices: Mapping | None = None, backoff: float = 0.5,
                    backoff_cap: float = 30.0, max_retry_after: float = 120.0) -> CallResult:
    """Send `req` (its body, unchanged) until it gives an answer or the limits are reached;
    never raises for API trouble. `client` is an `AsyncOpenAI` with `max_retries=0`."""
    redact, result, start = redactor(client), CallResult(ok=False), time.perf_counter()
    while True:
        completion, failure = await complete(
            client, req.body(), result, timeout=timeout, max_retries=max_retries,
            backoff=backoff, backoff_cap=backoff_cap, max_retry_after=max_retry_after,
            redact=redact)
        if completion is None:
            return _settle(result, req, False, None, failure, start, prices, False, redact)
        if not completion.choices:
            text, problem = None, "response without choices"
        else:
            choice = completion.choices[0]
            result.raw = choice.message.content
            text, problem = answer_text(choice.message.content, choice.finish_reason,
                                        getattr(choice.message, "refusal", None))
        if problem is None:
            return _settle(result, req, True, text, None, start, prices, False, redact)
        if result.reasks >= max_resends:
            return _settle(result, req, False, None, f"{problem} (after {result.attempts} "
                           "attempts)", start, prices, False, redact)
        result.reasks += 1
        log.info("asked again %d/%d: %s", result.reasks, max_resends, problem)


def batch_outcome(entry: dict | None, result: CallResult) -> tuple[str, str | None]:
    """Read one Batch API result line into `result` (tokens, model); returns (verdict, detail):
    ("ok", text), ("transient", why), ("bad", why: ask again) or ("failed", why)."""
    failure = batch_failure(entry)
    if failure is not None:
        problem, transient = failure
        return ("transient" if transient else "failed"), problem
    if (shape := batch_body_problem(entry)) is not None:
        return "failed", f"malformed response: {shape}"
    choice = batch_choice(entry, result)
    if choice is None:
        return "bad", "response without choices"
    message = choice.get("message") or {}
    result.raw = message.get("content")
    text, problem = answer_text(message.get("content"), choice.get("finish_reason"),
                                message.get("refusal"))
    return ("ok", text) if problem is None else ("bad", problem)


def settle_batch(result: CallResult, req: ChatRequest, ok: bool, text: str | None,
                 reason: str | None, start: float, prices: Mapping | None, client: Any) -> None:
    """End a batch item's result (costs at the batch discount)."""
    _settle(result, req, ok, text, reason, start, prices, True, redactor(client))
