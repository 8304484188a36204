"""Batch API result files read as a stream (`llm.batch_file`), through the real client and the
local server: the file's and a line's caps while reading, long lines across chunks, hostile
lines."""

import asyncio
import json

import pytest
from openai import AsyncOpenAI

from errors import UserError
from llm.batch import run_batch
from llm.batch_file import MAX_LINE_BYTES
from llm.call import CallResult
from llm.http_client import CappedClient
from tests.llm import test_call as base
from tests.openai_server import OpenAIServer


def _filler(mib: int) -> bytes:
    """About `mib` MiB of result lines (about 1 KiB each) of an item not asked for."""
    line = json.dumps({"custom_id": "other", "response": None,
                       "error": {"code": "x", "message": "y" * 960}}) + "\n"
    return line.encode() * (mib * 1024)


def _grade(server: OpenAIServer, n: int = 3, http_client=None,
           **options) -> dict[str, CallResult]:
    reqs = {f"item-{i}": base.request(f"case-{i}") for i in range(n)}
    api = AsyncOpenAI(base_url=server.base_url, api_key=base.KEY, http_client=http_client)
    return asyncio.run(run_batch(api, reqs, poll_interval=0.01, validate=base.validate,
                                 max_reasks=0, max_retries=0, **options))


def _output_file(server: OpenAIServer) -> str:
    (batch,) = server.batches.values()
    return batch["output_file_id"]


@pytest.mark.parametrize("chunked", [True, False], ids=["chunked", "content-length"])
def test_a_result_file_over_the_cap_is_refused_while_read(chunked: bool) -> None:
    """A 48 MiB file under a 1 MiB cap: one line naming the file and the cap, no result; the
    server did not get to write the file (the client hung up at the cap, or at the announced
    length)."""
    with OpenAIServer(api_key=base.KEY) as server:
        server.chunked_files = chunked
        server.edit_batch_file = lambda data: data + _filler(48)
        with pytest.raises(UserError) as caught:
            _grade(server, http_client=CappedClient(timeout=30.0, max_file_bytes=2**20))
        file_id = _output_file(server)
        size = len(server.files[file_id]["content"])
        why = ("response body larger than 1 MiB (the cap): not read further" if chunked else
               f"response body of {size:,} bytes announced: larger than 1 MiB (the cap)")
        assert str(caught.value) == f"Batch API result file {file_id} refused: {why}"
        assert server.sent_of(file_id) < size // 2


@pytest.mark.parametrize("last", [False, True], ids=["line-2", "last-line"])
def test_a_line_over_its_cap_is_refused_with_its_number(srv: OpenAIServer, last: bool) -> None:
    """A result line longer than MAX_LINE_BYTES (a chat completion's 8 MiB cap and 1 MiB),
    second or last (without its newline): the file is refused naming the line."""
    big = json.dumps({"custom_id": "item-1", "response": {
        "status_code": 200, "body": {"pad": "a" * MAX_LINE_BYTES}}}).encode()

    def edit(data: bytes) -> bytes:
        first, rest = data.split(b"\n", 1)
        return data + big if last else first + b"\n" + big + b"\n" + rest

    srv.edit_batch_file = edit
    with pytest.raises(UserError) as caught:
        _grade(srv)
    assert str(caught.value) == (
        f"Batch API result file {_output_file(srv)} refused: line {4 if last else 2} is "
        "longer than 9 MiB (the cap on one line): not read further")


def test_long_lines_across_chunks_raw_utf8_and_repeats() -> None:
    """Answers of 300 KB with raw UTF-8 (é, and U+2028, a line separator to `str.splitlines`
    but not in JSON Lines) are read whole across the body's chunks; a custom_id written twice
    counts by its last line, one not asked for is ignored."""
    def answer(body: dict) -> str:
        case = body["messages"][1]["content"]
        return json.dumps({"criteria": [{"criterion": "accuracy", "level": 2}],
                           "error_tags": [], "rationale": f"{case} é\u2028 " + "x" * 300_000},
                          ensure_ascii=False)

    def edit(data: bytes) -> bytes:
        lines = [json.dumps(json.loads(raw), ensure_ascii=False) for raw in data.splitlines()]
        first = json.loads(lines[0])
        early = {**first, "response": {"status_code": 500, "body": {"error": "earlier"}}}
        stranger = {**first, "custom_id": "not-asked"}
        lines = [json.dumps(early), json.dumps(stranger), *lines]
        return "".join(x + "\n" for x in lines).encode()

    with OpenAIServer(api_key=base.KEY, answer=answer) as server:
        server.edit_batch_file = edit
        results = _grade(server, http_client=CappedClient(timeout=30.0))
        assert "é\u2028".encode() in server.files[_output_file(server)]["content"]
    assert set(results) == {"item-0", "item-1", "item-2"}
    for i in range(3):
        assert results[f"item-{i}"].ok, results[f"item-{i}"].reason
        assert results[f"item-{i}"].data["rationale"] == f"case-{i} é\u2028 " + "x" * 300_000


def test_lines_not_utf8_not_json_or_cut_count_as_missing(srv: OpenAIServer) -> None:
    """An invalid UTF-8 line, a line that is not JSON and a last line cut short (no newline)
    end their items with the one-line reason of a missing result; the others are read."""
    def edit(data: bytes) -> bytes:
        lines = data.splitlines()
        lines[0] = lines[0].replace(b'"custom_id"', b'"\xff\xfe"', 1)
        lines[1] = b"Internal Server Error"
        return b"".join(x + b"\n" for x in lines[:3]) + lines[3][: len(lines[3]) // 2]

    srv.edit_batch_file = edit
    results = _grade(srv, n=4)
    assert results["item-2"].ok, results["item-2"].reason
    for i in (0, 1, 3):
        assert results[f"item-{i}"].reason == (
            "no result in batch batch-test1 completed (gave up after 1 attempts)")


@pytest.mark.slow
@pytest.mark.parametrize("chunked", [True, False], ids=["chunked", "content-length"])
def test_a_file_cut_by_the_connection_is_read_again(chunked: bool) -> None:
    """The connection closed halfway through the body: the file is read again from its start,
    as many times as the SDK retries (`api_retries`), then the error propagates."""
    from httpx2 import RemoteProtocolError

    with OpenAIServer(api_key=base.KEY) as server:
        server.chunked_files, server.cut_files = chunked, 1
        server.edit_batch_file = lambda data: data + _filler(4)
        results = _grade(server, http_client=CappedClient(timeout=30.0), api_retries=1)
        assert all(r.ok for r in results.values()), results
        reads = [r for r in server.requests if r.path.endswith("/content")]
        assert len(reads) == 2 and reads[0].path == reads[1].path
        server.cut_files = 2
        with pytest.raises(RemoteProtocolError):
            _grade(server, http_client=CappedClient(timeout=30.0), api_retries=1)


@pytest.fixture
def srv():
    with OpenAIServer(api_key=base.KEY) as server:
        yield server
