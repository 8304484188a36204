"""The grader's requests, built and sent without a database: the one place that decides what the
grader is sent.

The study (`grading.grader`), frozen packages (`package.freeze`, `package.verify`) and the Batch API all
build with `grade_request` and send with `send`, so a package cannot build another prompt than
the study did. `user_message` keeps every mapping (test scores, the reference answer) in its
stored order: reordering a case's scores changes the prompt and so the request hash.
"""

from __future__ import annotations

import ipaddress
import os
import urllib.parse
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from db.models import Case, GraderConfig, Task
from db.study.cases import reference_fields
from errors import UserError
from llm.call import CallResult, LLMRequest, call_structured, request_hash, run_bounded
from rubric import Rubric
from rubric.grade import Grade
from rubric.render import (
    NOT_ASKED,
    Asked,
    grader_instructions,
    output_json_schema,
    parse_grader_output,
)


class Answered(Protocol):
    """What the grader reads of a response: a stored `db.models.Response` or a package's
    `Answer`."""

    response_id: str
    text: str
    turns: list[str] | None


@dataclass
class GradeItem:
    """One response's request, its cache key, and what it asks for beyond the score."""

    response_id: str
    family: str
    request: LLMRequest
    request_hash: str
    asked: Asked = NOT_ASKED

    def parse(self, rubric: Rubric, data: Any) -> Grade:
        """The grader's answer to this request, validated (ValueError otherwise)."""
        return parse_grader_output(rubric, data, self.family, self.asked)


def user_message(task: Task, case: Case, response: Answered) -> str:
    """The case material, the reference answer and the response, in a fixed layout."""
    parts = [
        f"# Task ({task.family}, level {task.level})", task.prompt,
        "# Clinical record", case.ehr,
    ]
    if case.scores:
        parts += ["# Test scores", "\n".join(f"- {k}: {v}" for k, v in case.scores.items())]
    parts += [
        "# Reference answer",
        "\n".join(f"{label}: {text}" for label, text in reference_fields(case.ground_truth)),
        "# Response to grade", response.text,
    ]
    for i, stage in enumerate(task.stages or []):
        turns = response.turns or []
        parts += [f"## Stage {i + 2} revealed", stage,
                  f"## Answer after stage {i + 2}", turns[i] if i < len(turns) else "(no answer)"]
    return "\n\n".join(parts)


Parts = dict[tuple[str, Asked], tuple[dict, dict]]


def _config_parts(rubric: Rubric, family: str, asked: Asked, parts: Parts | None
                  ) -> tuple[dict, dict]:
    """(system message, JSON schema) of a task family and what is asked: the same for every
    request of a config, so built once per `parts` (a dict the caller keeps for one config
    and rubric) and shared, never changed, by the requests that use them."""
    key = (family, asked)
    if parts is not None and key in parts:
        return parts[key]
    made = ({"role": "system", "content": grader_instructions(rubric, family, asked)},
            output_json_schema(rubric, family, asked))
    if parts is not None:
        parts[key] = made
    return made


def grade_request(config: GraderConfig, rubric: Rubric, task: Task, case: Case,
                  response: Answered, images: list[dict] | None = None, *,
                  parts: Parts | None = None) -> GradeItem:
    """The exact request for one response (rows saved or not) and its cache key, the hash of
    (config hash, base URL, request body); the config's prompt version decides what it asks.
    `parts`: a dict kept by the caller for one config and rubric, where the system message and
    schema of each (family, asked) are built once (`_config_parts`)."""
    asked = Asked.of(config.prompt_version, task.family, len(task.stages or []))
    content: str | list = user_message(task, case, response)
    if images is not None:
        content = [{"type": "text", "text": content}, *images]
    system, schema = _config_parts(rubric, task.family, asked, parts)
    req = LLMRequest(
        model=config.model,
        messages=[system, {"role": "user", "content": content}],
        json_schema=schema, schema_name="grade",
        temperature=config.temperature, seed=config.seed, max_tokens=config.max_tokens)
    digest = request_hash(req, {"config_hash": config.config_hash, "base_url": config.base_url})
    return GradeItem(response.response_id, task.family, req, digest, asked)


def check_base_url(url: str | None) -> None:
    """Refuse a base URL that is not http(s)://host[:port][/path], or that holds credentials or
    blanks (they would be stored with the config), in one line naming it."""
    if url is None:
        return
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port  # raises for a port out of range or not a number
    except ValueError as e:
        raise UserError(f"base URL {url!r} is not a URL: {e}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname or port == 0:
        raise UserError(f"base URL {url!r}: expected http:// or https:// and a host, "
                        "e.g. http://127.0.0.1:8000/v1")
    if parts.username is not None or any(c.isspace() or not c.isprintable() for c in url):
        raise UserError(f"base URL {url!r}: no credentials, blanks or control characters")
    try:  # no request could reach it: every item would be retried until the run gives up
        ascii_host = parts.hostname.encode("idna")
    except UnicodeError:
        ascii_host = b""
    if not ascii_host or len(ascii_host) > 253:
        raise UserError(f"base URL {url!r}: the host is not a host name (labels of 1-63 "
                        "characters, 253 in all)")


def plain_http_warning(base_url: str | None, key: str | None) -> str | None:
    """A warning where the API `key` would travel unencrypted: given, and sent to an http://
    base URL whose host is not this machine (a loopback address or `localhost`); else None,
    also for a URL `check_base_url` refuses (the refusal says what is wrong with it)."""
    if not base_url or not key:
        return None
    try:
        check_base_url(base_url)
    except UserError:
        return None
    parts = urllib.parse.urlsplit(base_url)
    host = parts.hostname or ""
    try:
        local = ipaddress.ip_address(host).is_loopback
    except ValueError:
        local = host == "localhost" or host.endswith(".localhost")
    if parts.scheme != "http" or local:
        return None
    return (f"{base_url} is plain http to another machine: OPENAI_API_KEY and the study's data "
            "would cross the network unencrypted (use https, or unset OPENAI_API_KEY for a "
            "server that needs no key)")


def check_destination(base_url: str | None, *, trusted: str | None, origin: str) -> None:
    """Refuse to send to `base_url` unless the user chose it: the API key (and the study's data
    in the requests) go only to the official API (no base URL; the SDK then honours the user's
    OPENAI_BASE_URL), to OPENAI_BASE_URL itself, or to `trusted`, the address the caller says the
    user gave for this call (typed in this command or on this page, or named by
    `--trust-base-url`). An address read from a config file, a stored config, a bundle or a
    package is none of these until the user names it. `origin` says where `base_url` came from."""
    if base_url is None or base_url == trusted or base_url == os.environ.get("OPENAI_BASE_URL"):
        return
    raise UserError(f"{origin} sends to {base_url}, an address not given in this command or the "
                    "environment: nothing (no API key, no study data) is sent there until you "
                    f"confirm it (--trust-base-url {base_url}, or the endpoint box on the page)")


def api_key_for(base_url: str | None, api_key: str | None, *, trusted: str | None,
                origin: str = "the base URL") -> str:
    """`api_key`, else OPENAI_API_KEY; local servers (a base URL) may do without. The base URL
    is checked first: nothing is ever sent to a malformed one, nor to one the user did not
    choose (`check_destination`: `trusted` is the address the user gave for this call)."""
    check_base_url(base_url)
    check_destination(base_url, trusted=trusted, origin=origin)
    key = api_key or os.environ.get("OPENAI_API_KEY")
    if not key:
        if base_url is None:
            raise UserError("OPENAI_API_KEY is not set (or give --base-url of a local server)")
        key = "not-needed"  # local OpenAI-compatible servers ignore it
    return key


@dataclass
class SendJob:
    """Requests to send and how."""

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
    Retries are ours (llm.call), so the SDK's are off; what the server sends back is
    bounded by `llm.http_client.CappedClient` (byte caps, no redirects)."""
    from openai import AsyncOpenAI

    from llm.http_client import CappedClient

    return AsyncOpenAI(api_key=key, base_url=base_url, max_retries=0, timeout=timeout,
                       http_client=CappedClient(timeout=timeout))


def grader_call(client, rubric: Rubric, *, timeout: float, prices: dict | None,
                max_reasks: int = 2,
                max_retries: int = 5) -> Callable[[GradeItem], Awaitable[CallResult]]:
    """One item's call: its request, validated against the rubric for its task family."""
    async def one(w: GradeItem) -> CallResult:
        return await call_structured(
            client, w.request, validate=lambda d, w=w: w.parse(rubric, d),
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
