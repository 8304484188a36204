"""The grader's call layer against a real local OpenAI-compatible server, through the real client."""

import asyncio
import email.utils
import json
import logging
import subprocess
import sys
import time
from pathlib import Path

import jsonschema
import pytest
from openai import AsyncOpenAI

from llm.batch import run_batch
from llm.call import (
    CallResult,
    LLMRequest,
    call_structured,
    estimate_cost,
    load_prices,
    request_hash,
    retry_after_seconds,
    run_bounded,
)
from tests.openai_server import OpenAIServer, break_document, sample_document

KEY = "sk-test-SECRET-7c41e9d2"
SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["criteria", "error_tags", "rationale"],
    "properties": {
        "criteria": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["criterion", "level"],
                "properties": {
                    "criterion": {"type": "string", "enum": ["accuracy", "reasoning"]},
                    "level": {"type": "integer", "minimum": 0, "maximum": 3},
                },
            },
        },
        "error_tags": {
            "type": "array",
            "items": {"type": "string", "enum": ["hallucination", "omission", "anchoring"]},
        },
        "rationale": {"type": ["string", "null"]},
    },
}
FAST = {"backoff": 0.01, "timeout": 5.0}
CHECKER = jsonschema.Draft202012Validator(SCHEMA)


def validate(data: dict) -> dict:
    """What the grader's rubric check does: levels in range, known tags (here via the schema)."""
    try:
        CHECKER.validate(data)
    except jsonschema.ValidationError as exc:
        raise ValueError(exc.message) from None
    return data


def request(text: str = "case-1", **kw) -> LLMRequest:
    messages = [{"role": "system", "content": "Grade the response."}, {"role": "user", "content": text}]
    return LLMRequest(model="gpt-4o", messages=messages, json_schema=SCHEMA, seed=7, **kw)


@pytest.fixture
def srv():
    with OpenAIServer(api_key=KEY, model_alias={"gpt-4o": "gpt-4o-2024-08-06"}) as server:
        yield server


def client(server: OpenAIServer) -> AsyncOpenAI:
    return AsyncOpenAI(base_url=server.base_url, api_key=KEY)


def call(server: OpenAIServer, req: LLMRequest | None = None, **kw) -> CallResult:
    async def go() -> CallResult:
        return await call_structured(client(server), req or request(), validate=validate,
                                     **{**FAST, **kw})
    return asyncio.run(go())


# ---------------------------------------------------------------- the server itself


def test_server_answers_validate_against_the_schema_and_broken_ones_do_not():
    for seed in range(40):
        doc = sample_document(SCHEMA, seed)
        CHECKER.validate(doc)
        broken, did_break = break_document(SCHEMA, json.loads(json.dumps(doc)))
        assert did_break and not CHECKER.is_valid(broken)
    assert len({json.dumps(sample_document(SCHEMA, s)) for s in range(40)}) > 5


# ---------------------------------------------------------------- call_structured


def test_valid_answer_records_model_fingerprint_tokens_cost(srv):
    result = call(srv)
    assert result.ok and result.reason is None
    validate(result.data)
    assert result.model_returned == "gpt-4o-2024-08-06"
    assert result.system_fingerprint == "fp_test1"
    assert result.prompt_tokens > 0 and result.completion_tokens > 0
    expected = estimate_cost("gpt-4o-2024-08-06", result.prompt_tokens, result.completion_tokens)
    assert result.cost_usd == pytest.approx(expected) and result.cost_usd > 0
    assert result.attempts == 1 and result.latency_s > 0
    sent = srv.chat_requests()[0].body
    assert sent == request().body()
    assert sent["response_format"]["json_schema"]["strict"] is True


def test_429_waits_at_least_retry_after_between_the_429_and_the_retry(srv):
    srv.inject("429:0.3")
    result = call(srv, backoff=0.001)
    assert result.ok and result.attempts == 2
    first, second = srv.chat_requests()
    assert first.status == 429 and second.status == 200
    assert second.arrived - first.answered >= 0.3


def test_retry_after_beyond_the_limit_fails_at_once(srv):
    srv.inject("429:600")
    result = call(srv, max_retry_after=120)
    assert not result.ok and result.attempts == 1
    assert "HTTP 429" in result.reason and "Retry-After 600" in result.reason


def test_500s_are_retried_with_backoff(srv):
    srv.inject("500", "500")
    result = call(srv)
    assert result.ok and result.attempts == 3
    assert [r.status for r in srv.chat_requests()] == [500, 500, 200]


def test_persistent_429_ends_as_failure_after_max_retries(srv):
    srv.inject_when("case-stuck", "429:0.01")
    result = call(srv, request("case-stuck"), max_retries=2)
    assert not result.ok and result.attempts == 3 and len(srv.chat_requests()) == 3
    assert "HTTP 429" in result.reason and "gave up after 3 attempts" in result.reason


def test_400_is_not_retried(srv):
    srv.inject("400")
    result = call(srv)
    assert not result.ok and result.attempts == 1 and result.reason.startswith("HTTP 400")


def test_truncated_json_is_reasked_with_the_reason(srv):
    srv.inject("truncated")
    result = call(srv)
    assert result.ok and result.attempts == 2 and result.reasks == 1
    first, second = srv.chat_requests()
    assert first.fault == "truncated"
    truncated = second.body["messages"][-2]["content"]
    assert second.body["messages"][:2] == request().messages
    assert second.body["messages"][-2]["role"] == "assistant" and truncated
    with pytest.raises(ValueError):
        json.loads(truncated)
    assert "malformed JSON" in second.body["messages"][-1]["content"]


def test_invalid_answers_are_reasked_a_bounded_number_of_times(srv):
    srv.inject_when("case-bad", "badschema")
    result = call(srv, request("case-bad"), max_reasks=2)
    assert not result.ok and result.attempts == 3 and result.reasks == 2
    assert len(srv.chat_requests()) == 3
    assert result.reason.startswith("invalid:") and "after 3 answer(s)" in result.reason
    assert result.raw is not None and result.prompt_tokens > 0  # re-asks are billed and kept


def test_slow_answer_past_the_timeout_is_retried(srv):
    srv.inject("slow:1.5")
    result = call(srv, timeout=0.3)
    assert result.ok and result.attempts == 2


def test_always_slow_ends_as_timeout_failure(srv):
    srv.inject_when("case-slow", "slow:1.5")
    result = call(srv, request("case-slow"), timeout=0.2, max_retries=1)
    assert not result.ok and result.attempts == 2 and result.reason.startswith("timeout")


def test_a_trickling_answer_ends_at_the_total_deadline(srv):
    """One byte every few milliseconds never trips a per-read timeout; the deadline is total."""
    srv.inject_when("case-trickle", "trickle:60")
    result = call(srv, request("case-trickle"), timeout=0.5, max_retries=1)
    assert not result.ok and result.attempts == 2 and result.reason.startswith("timeout")
    assert [r.fault for r in srv.chat_requests()] == ["trickle", "trickle"]


HOSTILE_REASONS = {
    "endless": "response refused: response body larger than 8 MiB (the cap): not read further",
    "huge_chunked": "response refused: response body larger than 8 MiB (the cap)",
    "huge_json": "response refused: response body of 67,1",  # its Content-Length, not read
    "html": "response refused: HTTP 200 with a text/html body, not JSON",
    "notjson": "malformed response: the body is not JSON (JSONDecodeError)",
    "wrongtype": "malformed response: model is not a string of at most 128 characters",
    "deep": "response refused: body of more than 10,000 JSON values",
    "dense": "response refused: body of more than 10,000 JSON values",
    "gzip": "response refused: compressed response body ('gzip')",
    "redirect": "response refused: HTTP 307 redirect to 'http://127.0.0.1:",
}


@pytest.mark.slow
@pytest.mark.parametrize("kind", list(HOSTILE_REASONS))
def test_a_hostile_answer_ends_the_call_with_its_reason(srv, kind):
    """Through the client the runs use (`make_client`): bounded, refused at once (a hostile
    server would send the same again), never followed elsewhere, for free text as for JSON."""
    from llm.grader_request import make_client
    from llm.model_call import call_text
    from llm.model_request import ChatRequest

    with OpenAIServer() as elsewhere:
        srv.inject_when("case-hostile", f"redirect:{elsewhere.port}" if kind == "redirect" else kind)
        # one client per event loop: a pooled connection cannot move to another loop
        got = asyncio.run(call_structured(make_client(srv.base_url, KEY, 5.0),
                                          request("case-hostile"), validate=validate, **FAST))
        text = asyncio.run(call_text(make_client(srv.base_url, KEY, 5.0), ChatRequest(
            model="m", messages=[{"role": "user", "content": "case-hostile"}]), timeout=5.0,
            backoff=0.01))
        assert elsewhere.requests == []
    for result in (got, text):
        assert not result.ok and result.attempts == 1 and result.data is None
        assert result.reason.startswith(HOSTILE_REASONS[kind]), result.reason
        assert (result.prompt_tokens, result.completion_tokens) == (0, 0)


CHILD_CALL = """
import asyncio, sys
from llm.call import call_structured
from llm.grader_request import make_client
from tests.llm.test_call import FAST, KEY, request, validate
result = asyncio.run(call_structured(make_client(sys.argv[1], KEY, 5.0), request(sys.argv[2]),
                                     validate=validate, **FAST))
print(result.reason)
"""


@pytest.mark.slow
@pytest.mark.parametrize("where", ["body", "answer"])
def test_a_string_that_never_closes_is_counted_in_linear_time(srv, where):
    """JSON that opens a string and never closes it, every later quote escaped (1 MiB): the
    count of values before parsing scanned the rest of the body from every escaped quote,
    quadratic (a 256 KiB body took 231 s of one core, the event loop blocked, so no deadline
    ended it). The real client, in a child process bounded to 60 s, fails the item at once."""
    if where == "body":
        srv.inject_when("case-quotes", "quotes")
    else:  # a valid completion whose answer is such JSON
        srv.answer = lambda body: '{"rationale": "' + '\\"' * 2**17  # 256 KiB
    out = subprocess.run([sys.executable, "-c", CHILD_CALL, srv.base_url, "case-quotes"],
                         cwd=Path(__file__).resolve().parents[2], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(("malformed response: the body is not JSON", "malformed JSON: "
                                  "Unterminated string")), out.stdout


ESCAPES = "\x1b]0;owned\x07\x1b[2J\nnmb: graded 12 of 12\x1b[0m\u202e"


@pytest.mark.parametrize("where", ["error", "refusal"])
def test_a_servers_text_in_a_reason_is_one_line_of_printable_characters(srv, where):
    """A server's error message or a model's refusal reaches a failure's reason, which `nmb
    grade`, `nmb collect` and `nmb package canary` print on stderr: its terminal escape codes
    (retitle the window, clear the screen) went through as they were (one_line folds only
    line breaks). Escaped now, as in a refusal quoting a file's value."""
    if where == "error":
        srv.error_message = ESCAPES
        srv.inject("400")
    else:
        srv.refusal = ESCAPES + "x" * 10_000
    result = call(srv, request(), **FAST)
    assert not result.ok and "\\u001b]0;owned\\u0007\\u001b[2J nmb: graded" in result.reason, result.reason
    assert result.reason.isprintable() and len(result.reason) < 1_000, result.reason


def test_bodies_read_at_once_share_one_cap(srv):
    """16 endless answers at once through one client whose bodies may hold 2 MiB in all: no
    body reaches its own 8 MiB cap, every call ends refused by the shared one, what was held
    is given back, and the next answer is read in full."""
    from llm.http_client import CappedClient

    srv.inject_when("case-endless", "endless")
    http = CappedClient(timeout=30.0, max_bytes_in_flight=2 * 2**20)
    api = AsyncOpenAI(base_url=srv.base_url, api_key=KEY, max_retries=0, http_client=http)

    async def many() -> list[CallResult]:
        return await asyncio.gather(*(
            call_structured(api, request(f"case-endless {i}"), validate=validate, **FAST)
            for i in range(16)))

    results = asyncio.run(many())
    assert all(r.reason.startswith("response refused: response bodies being read at once hold "
                                   "more than 2 MiB") for r in results), {r.reason for r in results}
    assert http.in_flight.held == 0
    good = asyncio.run(call_structured(api, request("case-fine"), validate=validate, **FAST))
    assert good.ok, good.reason


@pytest.mark.parametrize("answer", [
    {"choices": [{"message": {"content": ["a"]}, "finish_reason": "stop"}]},
    {"choices": [{"message": "hi", "finish_reason": "stop"}]},
    {"choices": [{"message": {"content": "{}"}, "finish_reason": 3}]},
    {"choices": [], "usage": {"prompt_tokens": 10**12}},
    {"choices": [], "usage": {"prompt_tokens": True}},
    {"choices": [], "model": "m" * 129},
    {"choices": [], "system_fingerprint": {"a": 1}},
    {"choices": {"0": {}}},
    "just a string", [1, 2],
])
def test_a_completion_of_the_wrong_shape_is_malformed(answer):
    """Every field the call layer reads is type-checked first (the SDK does not validate)."""
    from openai._models import construct_type
    from openai.types.chat import ChatCompletion

    from llm.call import completion_problem

    built = construct_type(type_=ChatCompletion, value=answer)
    assert completion_problem(built) is not None
    good = {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "{}"},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}
    assert completion_problem(construct_type(type_=ChatCompletion, value=good)) is None


def test_api_key_never_in_logs_output_or_results(srv, caplog, capsys, monkeypatch):
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    srv.inject("429:0.01", "500", "truncated", "slow:1", "badschema", "400")
    api = AsyncOpenAI(base_url=srv.base_url)  # key from OPENAI_API_KEY

    async def go() -> list[CallResult]:
        return [await call_structured(api, request(f"case-{i}"), validate=validate,
                                      timeout=0.3, backoff=0.01) for i in range(4)]

    results = asyncio.run(go())
    assert srv.chat_requests()[0].headers["authorization"] == f"Bearer {KEY}"  # the key was used
    assert caplog.records  # something was logged, at DEBUG, by us and the SDK
    out, err = capsys.readouterr()
    for text in (caplog.text, out, err, repr(results)):
        assert KEY not in text and "SECRET" not in text


def test_a_server_echoing_the_key_is_redacted(srv):
    srv.answer = lambda body: f"not json, and the key is {KEY}"
    result = call(srv, max_reasks=0)
    assert not result.ok and "***" in result.raw and KEY not in result.raw


# ---------------------------------------------------------------- run_bounded


def test_run_bounded_limits_concurrency_and_reports_each_item(srv):
    srv.latency = 0.2
    srv.answer = lambda body: json.dumps(
        {"criteria": [], "error_tags": [], "rationale": body["messages"][-1]["content"]}
    )
    srv.inject_when("case-bad", "badschema")
    texts = [f"case-{i}" for i in range(11)] + ["case-bad"]
    reported: list[tuple[str, bool]] = []
    api = client(srv)

    async def go() -> list[CallResult]:
        return await run_bounded(
            texts,
            lambda t: call_structured(api, request(t), validate=validate, max_reasks=1, **FAST),
            concurrency=4,
            on_done=lambda t, r: reported.append((t, r.ok)),
        )

    results = asyncio.run(go())
    assert srv.max_in_flight == 4
    assert sorted(reported) == sorted((t, t != "case-bad") for t in texts)
    assert [r.data["rationale"] for r in results[:11]] == texts[:11]
    assert not results[-1].ok and results[-1].reason.startswith("invalid")


def test_run_bounded_cancel_keeps_reported_items_and_leaves_no_task(srv):
    srv.latency = 0.3
    reported: list[str] = []
    api = client(srv)

    async def go() -> None:
        task = asyncio.create_task(run_bounded(
            [f"case-{i}" for i in range(20)],
            lambda t: call_structured(api, request(t), validate=validate, **FAST),
            concurrency=2,
            on_done=lambda t, r: reported.append(t),
        ))
        while len(reported) < 2:
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        kept = list(reported)
        await asyncio.sleep(0.4)
        assert reported == kept  # nothing reported after the cancel
        assert asyncio.all_tasks() == {asyncio.current_task()}

    asyncio.run(go())
    assert 2 <= len(reported) < 20


def test_run_bounded_propagates_a_worker_error():
    async def worker(i: int) -> int:
        if i == 3:
            raise RuntimeError("bug")
        await asyncio.sleep(0.01)
        return i

    with pytest.raises(RuntimeError, match="bug"):
        asyncio.run(run_bounded(range(10), worker, concurrency=3))
    assert asyncio.run(run_bounded([], worker, concurrency=3)) == []


# ---------------------------------------------------------------- Batch API


def test_batch_flow_validates_retries_and_reasks():
    with OpenAIServer(api_key=KEY, batch_polls=2) as server:
        server.inject_when("case-bad", "badschema")
        server.inject_when("case-500", "500", times=1)
        server.inject_when("case-expired", "slow", times=1)
        server.inject_when("case-cut", "truncated", times=1)
        texts = ["case-a", "case-b", "case-bad", "case-500", "case-expired", "case-cut"]
        reqs = {f"item-{t}": request(t) for t in texts}
        polls: list[str] = []

        async def go() -> dict[str, CallResult]:
            return await run_batch(client(server), reqs, poll_interval=0.01, validate=validate,
                                   max_reasks=1, on_poll=lambda b: polls.append(b.status))

        results = asyncio.run(go())
        assert set(results) == set(reqs)
        for t in ("case-a", "case-b", "case-500", "case-expired", "case-cut"):
            assert results[f"item-{t}"].ok, results[f"item-{t}"].reason
            validate(results[f"item-{t}"].data)
        assert results["item-case-a"].attempts == 1
        assert results["item-case-500"].attempts == 2 and results["item-case-cut"].reasks == 1
        bad = results["item-case-bad"]
        assert not bad.ok and bad.reason.startswith("invalid") and bad.attempts == 2
        assert len(server.batches) == 2  # first round, then one round of retries and re-asks
        assert "in_progress" in polls and polls[-1] == "completed"
        assert not server.chat_requests()  # everything went through the batch
        first_input = server.files[server.batches["batch-test1"]["input_file_id"]]
        assert first_input["purpose"] == "batch"
        lines = [json.loads(x) for x in first_input["content"].decode().splitlines()]
        assert [x["custom_id"] for x in lines] == list(reqs)
        assert all(x["url"] == "/v1/chat/completions" and x["method"] == "POST" for x in lines)
        assert lines[0]["body"] == request("case-a").body()
        a = results["item-case-a"]
        full = estimate_cost("gpt-4o", a.prompt_tokens, a.completion_tokens)
        assert a.system_fingerprint == "fp_test1" and a.cost_usd == pytest.approx(full / 2)


# ---------------------------------------------------------------- hashing, prices, headers


def test_request_hash_covers_every_sent_parameter_and_nothing_else():
    base = request()
    same = LLMRequest(model="gpt-4o", messages=[dict(reversed(m.items())) for m in base.messages],
                      json_schema=json.loads(json.dumps(SCHEMA)), seed=7)
    assert request_hash(base) == request_hash(same)
    variants = [
        request("case-2"),
        LLMRequest("gpt-4o-mini", base.messages, SCHEMA, seed=7),
        LLMRequest("gpt-4o", base.messages, SCHEMA, seed=8),
        LLMRequest("gpt-4o", base.messages, SCHEMA, seed=7, temperature=0.5),
        LLMRequest("gpt-4o", base.messages, SCHEMA, seed=7, max_tokens=100),
        LLMRequest("gpt-4o", base.messages, SCHEMA, seed=7, schema_name="other"),
        LLMRequest("gpt-4o", base.messages, {**SCHEMA, "required": ["criteria"]}, seed=7),
    ]
    hashes = {request_hash(v) for v in variants} | {request_hash(base)}
    assert len(hashes) == len(variants) + 1
    assert request_hash(base, {"base_url": "a"}) != request_hash(base, {"base_url": "b"})


def test_estimate_cost_from_the_price_table():
    prices = load_prices()
    assert prices["taken"] and prices["source"].startswith("https://")
    assert estimate_cost("gpt-4o-2024-08-06", 1_000_000, 1_000_000) == pytest.approx(12.5)
    assert estimate_cost("gpt-4o-mini-2024-07-18", 2_000_000, 0) == pytest.approx(0.30)
    assert estimate_cost("gpt-4o-2024-11-20", 1_000_000, 0, batch=True) == pytest.approx(1.25)
    assert estimate_cost("my-local-llama", 10, 10) is None
    assert estimate_cost(None, 10, 10) is None


def test_retry_after_header_forms():
    assert retry_after_seconds({"retry-after": "0.25"}) == 0.25
    assert retry_after_seconds({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    date = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 < retry_after_seconds({"retry-after": date}) <= 30
    assert retry_after_seconds({"retry-after": "soon"}) is None
    assert retry_after_seconds({}) is None


def test_batch_not_finished_within_max_wait_is_cancelled_and_items_fail():
    with OpenAIServer(api_key=KEY, batch_polls=10_000) as server:
        reqs = {"item-1": request("case-1"), "item-2": request("case-2")}

        async def go() -> dict[str, CallResult]:
            return await run_batch(client(server), reqs, poll_interval=0.01, validate=validate,
                                   max_wait=0.1)

        results = asyncio.run(go())
        assert [b["status"] for b in server.batches.values()] == ["cancelled"]
        for result in results.values():
            assert not result.ok and result.attempts == 1
            assert "cancelled" in result.reason and "no result" in result.reason


def _hostile_lines(data: bytes) -> bytes:
    """Each result line of a Batch API file replaced by a hostile one that keeps its custom_id
    (the first line left as it was): not JSON, deep, dense, not an object, response or body of
    the wrong type, a completion of the wrong shape, an error that is a string."""
    out = []
    for n, raw in enumerate(data.decode().splitlines()):
        line = json.loads(raw)
        cid, ok = line["custom_id"], {**line["response"], "status_code": 200}
        out.append([
            raw,
            f'{{"custom_id": "{cid}", "response": ',
            f'{{"custom_id": "{cid}", "response": ' + "[" * 100_000 + "]" * 100_000 + "}",
            f'{{"custom_id": "{cid}", "x": [' + "[]," * 20_000 + "[]]}",
            json.dumps([cid]),
            json.dumps({"custom_id": cid, "response": "ok"}),
            json.dumps({"custom_id": cid, "response": {**ok, "body": ["x"]}}),
            json.dumps({"custom_id": cid, "response": {**ok, "body": {"choices": [[]]}}}),
            json.dumps({"custom_id": cid, "response": {**ok, "body": {"choices": "none"}}}),
            json.dumps({"custom_id": cid, "response": {**ok, "status_code": 500,
                                                       "body": {"error": "down"}}}),
        ][n % 10])
    return "".join(x + "\n" for x in out).encode()


def test_hostile_batch_result_lines_fail_their_items_not_the_run(srv):
    """A Batch API server writing hostile result lines: each item ends answered or failed with
    a reason (a line that is not a result line counts as missing), no exception, for the
    grader's `run_batch` and for free-text batch answers (`batch_outcome`)."""
    from llm.batch_file import result_line
    from llm.model_call import batch_outcome

    srv.edit_batch_file = _hostile_lines
    reqs = {f"item-{i}": request(f"case-{i}") for i in range(10)}

    async def go() -> dict[str, CallResult]:
        return await run_batch(client(srv), reqs, poll_interval=0.01, validate=validate,
                               max_reasks=0, max_retries=0)

    results = asyncio.run(go())
    reasons = [results[f"item-{i}"].reason for i in range(10)]
    assert results["item-0"].ok and reasons[0] is None
    assert all(r.startswith("no result in batch") for r in reasons[1:7]), reasons
    assert reasons[7:] == ["malformed response: choices[0] has no message object",
                           "malformed response: choices is not a list",
                           "HTTP 500: down (gave up after 1 attempts)"]
    for n, raw in enumerate(_hostile_lines(b"".join(
            json.dumps({"custom_id": f"c{i}", "response": {"status_code": 200, "body": {}}})
            .encode() + b"\n" for i in range(10))).decode().splitlines()):
        verdict, why = batch_outcome(result_line(raw), CallResult(ok=False))
        assert verdict in ("ok", "bad", "failed", "transient") and why, (n, verdict, why)


def test_models_endpoint(srv):
    async def go() -> list[str]:
        return [m.id async for m in client(srv).models.list()]

    assert "gpt-4o-2024-08-06" in asyncio.run(go())
