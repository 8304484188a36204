"""One real request before a run: does the endpoint take the key, know the model and answer as
asked? Nothing is stored (no grade, no response, no cache entry).

`collect_preflight` sends the first turn of the first selected task to a model under test, as
`nmb collect` would; `grader_preflight` sends a grader config's request for the first response
a run would grade (any response when none is left), as `nmb grade` would: the same request
builders and calls as the runs, one retry, no re-ask. The key goes where the runs send it
(`llm.grader_request.api_key_for`: the user's key, to the base URL the admin typed on /models,
or to a stored grader config's base URL once the admin has confirmed it on /calibrate).
`plain_reason` says in a sentence what a failure means (bad key, unreachable host, unknown
model, an answer that is not the JSON asked for); the technical reason is kept beside it.
"""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass

from sqlmodel import Session, select

from collection.collect import Selection, check_run_options, item_of, select_tasks
from db.models import Response
from db.rubrics import rubric_by_hash
from errors import UserError, counted
from grading.config import get_config
from grading.grader import prepare, select_items
from llm.call import CallResult, load_prices
from llm.grader_request import api_key_for, grader_call, make_client
from llm.model_call import call_text
from llm.model_request import CollectSettings, turn_request

TIMEOUT = 60.0  # seconds: one answer of a slow model; a dead host fails sooner


@dataclass(frozen=True)
class Preflight:
    """How the one request went. `sent` names what was sent (a task, a response); `answer` is
    the model's text, to be shown as plain text."""

    ok: bool
    model: str
    base_url: str | None
    sent: str
    images: int = 0
    answer: str | None = None
    reason: str | None = None  # technical, as the call layer gives it (key redacted)
    model_returned: str | None = None
    latency_s: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None

    @property
    def endpoint(self) -> str:
        return self.base_url or "the OpenAI API"

    @property
    def problem(self) -> str | None:
        """What went wrong, in a sentence (None when it went well)."""
        return None if self.ok else plain_reason(self.reason, model=self.model,
                                                 endpoint=self.endpoint)

    def summary(self) -> str:
        """One line: who answered what, how fast and at what cost in tokens."""
        images = f" with {counted(self.images, 'image')}" if self.images else ""
        return (f"{self.model_returned or self.model} at {self.endpoint} answered "
                f"{self.sent}{images} in {self.latency_s:.2f} s "
                f"({self.prompt_tokens}+{self.completion_tokens} tokens).")

    @classmethod
    def of(cls, result: CallResult, *, model: str, base_url: str | None, sent: str,
           images: int, answer: str | None) -> Preflight:
        return cls(ok=result.ok, model=model, base_url=base_url, sent=sent, images=images,
                   answer=answer if result.ok else None, reason=result.reason,
                   model_returned=result.model_returned, latency_s=round(result.latency_s, 3),
                   prompt_tokens=result.prompt_tokens,
                   completion_tokens=result.completion_tokens, cost_usd=result.cost_usd)


_HTTP = re.compile(r"HTTP (\d{3})\b")


def plain_reason(reason: str | None, *, model: str, endpoint: str) -> str:
    """A failed call's reason (llm.call, llm.model_call) as a sentence."""
    reason = reason or ""
    status = _HTTP.match(reason)
    code = int(status.group(1)) if status else None
    if code == 401:
        return (f"{endpoint} refused the API key (HTTP 401): check OPENAI_API_KEY (or the "
                "app's secrets).")
    if code == 403:
        return f"{endpoint} refused access (HTTP 403): the key may not use model {model!r}."
    if code == 404:
        return (f"{endpoint} does not know model {model!r}, or the base URL is wrong (HTTP 404): "
                "check the model name and that the base URL ends where the API does (often /v1).")
    if code == 429:
        return f"{endpoint} is rate-limiting this key or its quota is used up (HTTP 429)."
    if code in (400, 422):
        return (f"{endpoint} rejected the request (HTTP {code}): the model may not support "
                "Structured Outputs, images or one of the parameters.")
    if code is not None and code >= 500:
        return f"{endpoint} had a server error (HTTP {code}): try again later."
    if reason.startswith("connection error"):
        return f"Could not reach {endpoint}: check the base URL and that the server is running."
    if reason.startswith("timeout"):
        return f"{endpoint} did not answer in time (a slow model, or a host that drops requests)."
    if reason.startswith(("response refused", "malformed response")):
        return (f"{endpoint} answered with something that is not a chat completion (too large, "
                "not JSON, redirected or of the wrong shape): is the base URL an "
                "OpenAI-compatible API, often ending in /v1?")
    if reason.startswith(("malformed", "invalid")):
        return (f"{model} answered, but not with the JSON the grader's schema asks for: does "
                "the server support Structured Outputs (response_format json_schema)?")
    if reason.startswith("refused"):
        return f"{model} refused to answer."
    if reason.startswith(("answer cut", "empty answer", "answer longer")):
        return f"{model} answered, but the answer cannot be stored."
    return "The request failed."


def collect_preflight(s: Session, settings: CollectSettings, selection: Selection, *,
                      api_key: str | None = None, timeout: float = TIMEOUT) -> Preflight:
    """The first turn of the first selected task, with its images, as `collect` sends it."""
    settings.check()
    check_run_options(concurrency=1, timeout=timeout, poll_interval=1.0)
    task = select_tasks(s, selection)[0]
    key = api_key_for(settings.base_url, api_key, trusted=settings.base_url)  # typed on /models
    item = item_of(s, settings, task)
    req = turn_request(settings, task, item.case, item.images, [])
    result = asyncio.run(call_text(make_client(settings.base_url, key, timeout), req,
                                   timeout=timeout, max_retries=1, max_resends=0,
                                   prices=load_prices()))
    return Preflight.of(result, model=settings.model, base_url=settings.base_url,
                        sent=f"task {task.task_id}", images=req.image_count,
                        answer=(result.data or {}).get("text"))


def grader_preflight(s: Session, *, config_id: int, items: str = "pending",
                     api_key: str | None = None, timeout: float = TIMEOUT,
                     trust_base_url: str | None = None) -> Preflight:
    """The config's request for the first response a run on `items` would grade (the study's
    first response when none is left), as `grade` sends it; the answer is the grade's JSON.
    The stored config's base URL is sent to only when `trust_base_url` names it (see `grade`)."""
    config = get_config(s, config_id)
    key = api_key_for(config.base_url, api_key, trusted=trust_base_url,
                      origin=f"grader config {config.id}")
    rubric = rubric_by_hash(s, config.rubric_hash)
    pending = select_items(s, config, items, 1)
    response = pending[0] if pending else s.exec(
        select(Response).order_by(Response.response_id).limit(1)).first()
    if response is None:
        raise UserError("the study has no responses to grade (nmb import or nmb demo first)")
    item = prepare(s, config, rubric, response)
    s.rollback()  # ends the read: nothing is held (nor written) while the request is out
    call = grader_call(make_client(config.base_url, key, timeout), rubric, timeout=timeout,
                       prices=load_prices(), max_reasks=0, max_retries=1)
    result = asyncio.run(call(item))
    images = sum(len(m["content"]) - 1 for m in item.request.messages
                 if isinstance(m["content"], list))  # a text part, then the images
    return Preflight.of(result, model=config.model, base_url=config.base_url,
                        sent=f"response {response.blind_code or response.response_id}",
                        images=images,
                        answer=json.dumps(result.data.fields(item.asked.extra) if result.ok
                                          else None, indent=1, ensure_ascii=False))
