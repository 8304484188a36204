"""The grader's LLM call layer: one structured-output chat completion, validated, retried, re-asked.

Shape after HealthBench's grader in `openai/simple-evals` (template, call, parse, validate) with
the cache key on (model, request, parameters) as `inspect_ai` does. No database here: the caller
passes the JSON schema and a `validate(data) -> data` callback that raises `ValueError` (pydantic's
`ValidationError` is one) with the reason when an answer is invalid.

Policy, in one place:
- Structured Outputs: `response_format={"type": "json_schema", "json_schema": {..., "strict": true}}`
  on the Chat Completions API (supported by OpenAI and by local servers such as vLLM, llama.cpp).
- Each HTTP request has a total deadline (`timeout`: connect, send, wait and read together,
  enforced with `asyncio.timeout`; httpx's own timeouts are per read, so a server trickling one
  byte at a time would hold them forever).
- Transient failures (429, 408, 409, 5xx, timeouts, connection errors) are retried by this module,
  not by the SDK (the client is used with `max_retries=0`), so every retry is counted in
  `attempts`. The wait is the server's `retry-after-ms` / `Retry-After` (seconds, fractional
  allowed, or an HTTP date) when given, else exponential backoff with jitter ("equal jitter":
  half fixed, half random; Brooker, "Exponential Backoff And Jitter", AWS Architecture Blog 2015).
  A `Retry-After` above `max_retry_after` ends the call as a failure rather than sleeping for it.
- Re-ask: a malformed (not JSON, cut) or invalid (fails `validate`) answer is asked again, at most
  `max_reasks` times, with the rejected answer and the reason appended to the conversation
  (repeating an identical request at temperature 0 tends to repeat the same answer). The cache key
  stays `request_hash` of the ORIGINAL request: the follow-up turns are part of how that request
  was answered, not a different request.
- What a server sends back is bounded before it is read (`llm.http_client`: a byte cap on
  every body, no compressed bodies, no redirects, JSON endpoints answer JSON), and an answer is
  checked for the shape this module reads (`completion_problem`: a chat completion whose model,
  fingerprint, token counts and first choice have the right types) before anything is taken from
  it. Either failing ends the call with its reason ("response refused: ..." or "malformed
  response: ..."), not retried: a hostile or misconfigured server would send the same again.
- Every call ends as `CallResult(ok=True, data=...)` or `CallResult(ok=False, reason=...)`. Other
  exceptions (programming errors, cancellation) propagate.
- The API key is never logged nor stored: it is read by `AsyncOpenAI` from OPENAI_API_KEY, and any
  text kept from an error (`reason`, `raw`) has the key replaced by "***" in case a server echoes it.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import hashlib
import inspect
import json
import logging
import math
import random
import time
import tomllib
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from errors import escape_unprintable, one_line
from rubric.schema import canonical_json

if TYPE_CHECKING:  # `openai` is imported where a request is sent: a cached run never needs it
    from openai import AsyncOpenAI

log = logging.getLogger(__name__)

PRICES_PATH = Path(__file__).with_name("prices.toml")
CHAT_ENDPOINT = "/v1/chat/completions"
TRANSIENT_STATUS = frozenset({408, 409, 429})  # and every 5xx
MAX_ANSWER_TOKENS = 1_000_000  # per answer: more is a server's invention (and overflows the sums)
MAX_NAME_CHARS = 128  # model and system_fingerprint, as stored

Validate = Callable[[dict], dict]
T = TypeVar("T")
R = TypeVar("R")


# ---------------------------------------------------------------- request and result


@dataclass(frozen=True)
class LLMRequest:
    """Everything sent for one grading call. `messages` are chat messages (dicts)."""

    model: str
    messages: list[dict]
    json_schema: dict
    schema_name: str = "grade"
    temperature: float | None = 0.0
    seed: int | None = None
    max_tokens: int | None = None

    def body(self, messages: list[dict] | None = None) -> dict:
        """The exact JSON body of POST /v1/chat/completions (optionally with other messages)."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": list(self.messages if messages is None else messages),
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": self.schema_name, "schema": self.json_schema, "strict": True},
            },
        }
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.seed is not None:
            body["seed"] = self.seed
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        return body


def request_hash(req: LLMRequest, config: Mapping[str, Any] | None = None) -> str:
    """The cache key: sha256 of the canonical JSON of `{"config": config, "request": req.body()}`.

    The request part is everything sent (model, messages, schema, temperature, seed, max_tokens);
    the endpoint (base_url) is not sent in the body, so it is NOT in the hash unless the caller puts
    it in `config` (the grader config; put base_url there when one model name may be served by
    different endpoints, e.g. two local servers). The API key is never part of it.
    """
    payload = {"config": dict(config) if config is not None else None, "request": req.body()}
    return hashlib.sha256(canonical_json(payload).encode()).hexdigest()


@dataclass
class CallResult:
    """How one request ended. Token counts and cost cover every answer received (re-asks are
    billed too); `latency_s` is the wall time of the whole call (retries and re-asks included;
    for a batch, from batch creation to the round that settled the item); `attempts` counts
    requests sent (HTTP requests, or batch lines)."""

    ok: bool
    data: Any = None  # what `validate` returned: a `rubric.grade.Grade`, a model's {"text": ...}
    reason: str | None = None
    raw: str | None = None
    model_returned: str | None = None
    system_fingerprint: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    attempts: int = 0
    reasks: int = 0
    cost_usd: float | None = None


# ---------------------------------------------------------------- prices


@lru_cache(maxsize=8)
def _load_prices_cached(path: str) -> dict:
    with open(path, "rb") as fh:
        return tomllib.load(fh)


def load_prices(path: str | Path | None = None) -> dict:
    """The price table (`llm/prices.toml` by default): {"models": {name: {input, output}},
    "batch_discount", "taken", "source", "unit"}."""
    return _load_prices_cached(str(path or PRICES_PATH))


def estimate_cost(
    model: str | None,
    prompt_tokens: int,
    completion_tokens: int,
    prices: Mapping | None = None,
    *,
    batch: bool = False,
) -> float | None:
    """USD for the tokens at the table's per-1M prices; None when the model is not in the table."""
    table = load_prices() if prices is None else prices
    entry = table.get("models", {}).get(model) if model else None
    if entry is None:
        return None
    cost = (prompt_tokens * entry["input"] + completion_tokens * entry["output"]) / 1_000_000
    return cost * float(table.get("batch_discount", 0.5)) if batch else cost


# ---------------------------------------------------------------- answer checking


def check_answer(
    content: str | None, finish_reason: str | None, refusal: str | None, validate: Validate
) -> tuple[dict | None, str | None, bool]:
    """(data, problem, may_reask). `problem` is None when the answer is valid."""
    if refusal:
        return None, f"refused: {server_text(refusal, 300)}", False
    if finish_reason == "length":
        return None, "malformed: answer cut at the token limit (finish_reason=length)", True
    if not content:
        return None, "malformed: empty answer", True
    from llm.http_client import too_many_json_values

    if why := too_many_json_values(content.encode()):
        return None, f"malformed JSON: {why}", True
    try:
        data = json.loads(content)
    except ValueError as exc:
        return None, f"malformed JSON: {exc}", True
    except RecursionError:
        return None, "malformed JSON: nested too deeply", True
    if not isinstance(data, dict):
        return None, f"malformed: expected a JSON object, got {type(data).__name__}", True
    try:
        return validate(data), None, True
    except ValueError as exc:
        return None, f"invalid: {server_text(str(exc), 500)}", True


def server_text(text: str, limit: int) -> str:
    """Text a server sent (an error message, a refusal) as a failure's reason quotes it: one
    line, cut at `limit`, every character that is not printable escaped: reasons are printed on
    terminals, where escape codes would retitle the window or clear the screen."""
    return escape_unprintable(one_line(text, limit))


def reask_messages(messages: list[dict], answer: str | None, problem: str) -> list[dict]:
    """The conversation for a re-ask: the rejected answer and why, then a request to answer again."""
    return [
        *messages,
        {"role": "assistant", "content": answer or ""},
        {
            "role": "user",
            "content": f"Your answer was rejected ({problem}). Answer again with one JSON object "
            "that follows the schema exactly.",
        },
    ]


def redactor(client: Any) -> Callable[[str | None], str | None]:
    key = getattr(client, "api_key", None)

    def redact(text: str | None) -> str | None:
        if text and isinstance(key, str) and len(key) >= 4 and key in text:
            return text.replace(key, "***")
        return text

    return redact


# ---------------------------------------------------------------- retries


def retry_after_seconds(headers: Mapping[str, str] | None) -> float | None:
    """Seconds from `retry-after-ms`, else `Retry-After` (seconds, fractions allowed, or an
    HTTP date, RFC 9110 section 10.2.3); None when absent or unreadable."""
    if not headers:
        return None
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) / scale
        except ValueError:
            if name != "retry-after":
                continue
            try:
                seconds = email.utils.parsedate_to_datetime(value).timestamp() - time.time()
            except (TypeError, ValueError):
                continue
        if math.isfinite(seconds):
            return max(0.0, seconds)
    return None


def backoff_seconds(retry: int, base: float, cap: float) -> float:
    """Exponential backoff with equal jitter: uniform in [d/2, d], d = min(cap, base * 2**retry)."""
    delay = min(cap, base * 2.0**retry)
    return delay / 2 + random.uniform(0, delay / 2)


def _transient(exc: Exception) -> tuple[bool, str, float | None]:
    """(is transient, short description, server-requested wait)."""
    import openai

    from llm.http_client import ResponseRefused

    if isinstance(exc, ResponseRefused):
        return False, f"response refused: {server_text(exc.message, 300)}", None
    if isinstance(exc, openai.APITimeoutError | TimeoutError):
        return True, "timeout", None
    if isinstance(exc, openai.APIConnectionError):
        return True, f"connection error: {server_text(str(exc), 300)}", None
    if isinstance(exc, openai.APIStatusError):
        code = exc.status_code
        text = f"HTTP {code}: {server_text(exc.message, 200)}"
        if code in TRANSIENT_STATUS or code >= 500:
            return True, text, retry_after_seconds(exc.response.headers)
        return False, text, None
    return False, f"{type(exc).__name__}: {server_text(str(exc), 200)}", None


# ---------------------------------------------------------------- one call


def _name_problem(what: str, value: Any) -> str | None:
    if value is None or (isinstance(value, str) and len(value) <= MAX_NAME_CHARS):
        return None
    return f"{what} is not a string of at most {MAX_NAME_CHARS} characters"


def completion_problem(completion: Any) -> str | None:
    """What makes a parsed answer unusable as a chat completion, or None.

    The SDK builds its objects without validating them (and returns the text of a body it could
    not parse as JSON), so every field this package reads is checked here: `model` and
    `system_fingerprint` strings of at most 128 characters (their columns), token counts
    integers from 0 to `MAX_ANSWER_TOKENS`, `choices` a list whose first choice has a message
    with string (or null) `content` and `refusal`, and a string (or null) `finish_reason`."""
    from openai.types.chat import ChatCompletion, ChatCompletionMessage
    from openai.types.chat.chat_completion import Choice
    from openai.types.completion_usage import CompletionUsage

    if not isinstance(completion, ChatCompletion):
        return f"expected a chat completion object, got a JSON {type(completion).__name__}"
    for what in ("model", "system_fingerprint"):
        if problem := _name_problem(what, getattr(completion, what, None)):
            return problem
    usage = getattr(completion, "usage", None)
    if usage is not None:
        if not isinstance(usage, CompletionUsage):
            return "usage is not an object"
        for what in ("prompt_tokens", "completion_tokens"):
            n = getattr(usage, what, None)
            if n is not None and (not isinstance(n, int) or isinstance(n, bool)
                                  or not 0 <= n <= MAX_ANSWER_TOKENS):
                return f"usage.{what} is not an integer from 0 to {MAX_ANSWER_TOKENS:,}"
    choices = getattr(completion, "choices", None)
    if not isinstance(choices, list):
        return "choices is not a list"
    if not choices:
        return None  # callers say "without choices"
    choice = choices[0]
    message = getattr(choice, "message", None)
    if not isinstance(choice, Choice) or not isinstance(message, ChatCompletionMessage):
        return "choices[0] has no message object"
    for what, value in (("message.content", getattr(message, "content", None)),
                        ("message.refusal", getattr(message, "refusal", None)),
                        ("finish_reason", getattr(choice, "finish_reason", None))):
        if value is not None and not isinstance(value, str):
            return f"choices[0].{what} is not a string"
    return None


async def _post_chat(api: Any, body: dict[str, Any]) -> Any:
    """POST `body` to the chat completions endpoint, parsed as the SDK's `ChatCompletion`: what
    `api.chat.completions.create(**body)` does (same auth, headers, timeout, errors, parsing)
    without its walk of the body against the parameters' types, which re-copies every
    message and the whole JSON schema on every request (about a third of the client's CPU
    per grading request, docs/benchmarks.md): `body` is already the JSON to send."""
    from openai._base_client import make_request_options
    from openai.types.chat import ChatCompletion

    return await api.post("/chat/completions", body=body, cast_to=ChatCompletion,
                          options=make_request_options(security={"bearer_auth": True}))


async def complete(api: Any, body: dict[str, Any], result: CallResult, *, timeout: float,
                   max_retries: int, backoff: float, backoff_cap: float,
                   max_retry_after: float, redact: Callable[[str | None], str | None]
                   ) -> tuple[Any | None, str | None]:
    """One chat completion of `body`: (completion, None), or (None, why it failed).

    Transient failures are retried, waiting the server's Retry-After when given, else
    exponential backoff with jitter; `max_retries` counts over the whole call, re-asks
    included (the retries so far are the attempts that were neither the first nor a re-ask).
    `timeout` bounds each attempt as a whole. A body that is not JSON, or not a chat completion
    (`completion_problem`), ends the call. Attempts, model and tokens go into `result`."""
    import openai

    while True:
        result.attempts += 1
        retries = result.attempts - 1 - result.reasks  # done before this attempt
        try:
            async with asyncio.timeout(timeout):  # the whole attempt: the SDK's timeout is per read
                completion = await _post_chat(api, body)
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
            return None, f"malformed response: the body is not JSON ({type(exc).__name__})"
        except (openai.APIError, TimeoutError) as exc:
            transient, what, wait = _transient(exc)
            if not transient:
                return None, what
            if retries >= max_retries:
                return None, f"{what} (gave up after {result.attempts} attempts)"
            if wait is not None and wait > max_retry_after:
                return None, f"{what}; Retry-After {wait:g} s exceeds {max_retry_after:g} s"
            delay = wait if wait is not None else backoff_seconds(retries, backoff, backoff_cap)
            log.info("%s; retry %d/%d in %.2f s", redact(what), retries + 1, max_retries, delay)
            await asyncio.sleep(delay)
            continue
        problem = completion_problem(completion)
        if problem is not None:
            return None, f"malformed response: {problem}"
        result.model_returned = completion.model
        result.system_fingerprint = completion.system_fingerprint
        if completion.usage is not None:
            result.prompt_tokens += completion.usage.prompt_tokens or 0
            result.completion_tokens += completion.usage.completion_tokens or 0
        return completion, None


async def call_structured(
    client: AsyncOpenAI,
    req: LLMRequest,
    *,
    validate: Validate,
    max_reasks: int = 2,
    max_retries: int = 5,
    timeout: float = 60.0,
    prices: Mapping | None = None,
    backoff: float = 0.5,
    backoff_cap: float = 30.0,
    max_retry_after: float = 120.0,
) -> CallResult:
    """Send `req` with strict Structured Outputs; retry transient errors (at most `max_retries`
    in all), re-ask malformed/invalid answers (at most `max_reasks`); never raise for API trouble.
    `timeout` bounds each HTTP request as a whole (connect, send, wait, read), however slowly the
    server sends its bytes."""
    api = client if (client.max_retries, client.timeout) == (0, timeout) else (
        client.with_options(max_retries=0, timeout=timeout))  # a copy per call: avoid when we can
    redact = redactor(client)
    result = CallResult(ok=False)
    messages = list(req.messages)
    start = time.perf_counter()

    def finish(ok: bool, data: dict | None = None, reason: str | None = None) -> CallResult:
        result.ok, result.data, result.reason = ok, data, redact(reason)
        result.raw = redact(result.raw)
        result.latency_s = time.perf_counter() - start
        model = result.model_returned or req.model
        result.cost_usd = estimate_cost(
            model, result.prompt_tokens, result.completion_tokens, prices
        )
        return result

    while True:
        completion, failure = await complete(
            api, req.body(messages), result, timeout=timeout, max_retries=max_retries,
            backoff=backoff, backoff_cap=backoff_cap, max_retry_after=max_retry_after,
            redact=redact)
        if completion is None:
            return finish(False, reason=failure)
        if not completion.choices:
            return finish(False, reason="malformed: response without choices")
        choice = completion.choices[0]
        result.raw = choice.message.content
        refusal = getattr(choice.message, "refusal", None)
        data, problem, may_reask = check_answer(
            choice.message.content, choice.finish_reason, refusal, validate
        )
        if problem is None:
            return finish(True, data=data)
        if not may_reask or result.reasks >= max_reasks:
            answers = result.reasks + 1
            return finish(False, reason=f"{problem} (after {answers} answer(s))")
        result.reasks += 1
        log.info("re-ask %d/%d: %s", result.reasks, max_reasks, problem)
        messages = reask_messages(messages, choice.message.content, problem)


# ---------------------------------------------------------------- many calls


async def periodically(tick: Callable[[], Any], every: float, work: Awaitable) -> None:
    """Await `work` while `tick()` runs every `every` seconds (a run's commits of what has
    finished); re-raises what stopped `work`, if anything did."""
    async def ticker() -> None:
        while True:
            await asyncio.sleep(every)
            tick()

    task = asyncio.create_task(ticker())
    try:
        await work
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def run_bounded(
    items: Iterable[T],
    worker: Callable[[T], Awaitable[R]],
    concurrency: int,
    on_done: Callable[[T, R], Any] | None = None,
) -> list[R]:
    """Run `worker` over `items` with at most `concurrency` at once (a pool of workers), calling
    `on_done(item, result)` (may be async) as each finishes; results in item order.

    Cancellation-safe: on cancel (Ctrl-C under `asyncio.run`) or the first exception raised by a
    worker or `on_done`, the unfinished workers are cancelled and awaited, then the cancel or
    exception propagates; items already passed to `on_done` stay reported (store them there).
    """
    if concurrency < 1:
        raise ValueError(f"concurrency must be >= 1, got {concurrency}")
    todo = list(items)
    results: list[Any] = [None] * len(todo)
    queue = iter(enumerate(todo))

    async def pump() -> None:
        for index, item in queue:
            value = await worker(item)
            results[index] = value
            if on_done is not None:
                reported = on_done(item, value)
                if inspect.isawaitable(reported):
                    await reported

    tasks = [asyncio.create_task(pump()) for _ in range(min(concurrency, len(todo)))]
    try:
        if tasks:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
            for task in done:
                if not task.cancelled() and task.exception() is not None:
                    raise task.exception()  # type: ignore[misc]
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return results
