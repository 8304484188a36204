"""The grader's calls, without a database: one item's request, its call, and a job of many.

What `calibration.grader` (the study) and `calibration.package` (a frozen package) both send,
and what the sender process (`calibration.sender`) runs, so all three send the same way.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from calibration.llm import CallResult, LLMRequest, call_structured, run_bounded
from rubric import Rubric
from rubric.render import parse_grader_output


@dataclass
class GradeItem:
    response_id: str
    family: str
    request: LLMRequest
    request_hash: str


@dataclass
class SendJob:
    """Requests to send and how: everything the sender process needs, picklable."""

    items: list[GradeItem]
    rubric: Rubric
    base_url: str | None
    api_key: str | None = field(repr=False)  # never printed; None when nothing is to be sent
    concurrency: int = 8
    timeout: float = 60.0
    max_reasks: int = 2
    max_retries: int = 5
    prices: dict | None = None


def make_client(base_url: str | None, key: str, timeout: float):
    """Made only when something is sent: a run answered from the cache needs no client.
    Retries are ours (calibration.llm), so the SDK's are off."""
    from openai import AsyncOpenAI

    return AsyncOpenAI(api_key=key, base_url=base_url, max_retries=0, timeout=timeout)


def grader_call(client, rubric: Rubric, *, timeout: float, prices: dict | None,
                max_reasks: int = 2,
                max_retries: int = 5) -> Callable[[GradeItem], Awaitable[CallResult]]:
    """One item's call: its request, validated against the rubric for its task family."""
    async def one(w: GradeItem) -> CallResult:
        return await call_structured(
            client, w.request, validate=lambda d, f=w.family: parse_grader_output(rubric, d, f),
            max_reasks=max_reasks, max_retries=max_retries, timeout=timeout, prices=prices)

    return one


async def send(job: SendJob,
               on_done: Callable[[GradeItem, CallResult], Any] | None = None) -> list[CallResult]:
    """Every request of `job`, at most `job.concurrency` at once; `on_done(item, result)` as
    each ends (see `run_bounded`); the results in item order."""
    client = make_client(job.base_url, job.api_key, job.timeout)
    one = grader_call(client, job.rubric, timeout=job.timeout, prices=job.prices,
                      max_reasks=job.max_reasks, max_retries=job.max_retries)
    return await run_bounded(job.items, one, job.concurrency, on_done=on_done)
