"""Memory of reading a ~100 MiB Batch API result file: read whole (as before) against streamed.

The test server (`tests.openai_server`, its own process) holds a result file uploaded through
the Files API; it is then read back (GET /files/{id}/content) through the real client on
`llm.http_client.CappedClient`, as `nmb grade --batch` and `nmb collect --batch` do, three ways,
each measured with `tracemalloc` (peak of the Python allocations above what was held before,
in this process only: the server's memory is its own), and timed untraced (median of 3):

- read whole, the former code: the body as bytes, decoded, split into lines, every line parsed;
- streamed (`llm.batch_file.read_result_file`) keeping every line (as its bytes), each then
  parsed once and dropped, as a run settling its items does: what a run asking for every item
  holds (its own results, the answers' text, aside);
- streamed keeping no line (no item asked): what the reader itself holds, one line at a time.

Two files of about the same size: 1,000 lines with 100 KiB answers (free-text answers of
`nmb collect`), and 70,000 lines with 1 KiB answers (grader answers), where Python's objects for
the parsed lines weigh more than their text. Figures are printed, never asserted.
Keeping lines as their bytes costs a second parse of each (the times printed).
"""

from __future__ import annotations

import asyncio
import gc
import json
import statistics
import time
import tracemalloc
from collections.abc import Awaitable, Callable, Mapping

from benchmarks.bench_grader import KEY, server_process

MiB, REPEAT = 2**20, 3


def _result_file(lines: int, answer_bytes: int) -> bytes:
    """`lines` HTTP 200 result lines, each answering with `answer_bytes` of text."""
    out = []
    for n in range(lines):
        body = {"id": f"chatcmpl-{n}", "object": "chat.completion", "created": 0,
                "model": "gpt-4o-2024-08-06", "system_fingerprint": "fp_bench",
                "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                             "message": {"role": "assistant", "refusal": None,
                                         "content": f"answer {n} " + "x" * answer_bytes}}],
                "usage": {"prompt_tokens": 1000, "completion_tokens": answer_bytes // 4}}
        out.append(json.dumps({"id": f"batch_req_{n}", "custom_id": f"i{n}", "error": None,
                               "response": {"status_code": 200, "body": body}}))
    return "".join(x + "\n" for x in out).encode()


def _read_whole(api, file_id: str, wanted: set[str]) -> Callable[[], Awaitable[dict]]:
    """The former reader: the whole body in memory, as text, as a list of lines."""
    from llm.batch_file import result_line

    async def read() -> dict:
        text = (await api.files.content(file_id)).content.decode()
        entries = {}
        for raw in text.splitlines():
            if raw.strip() and (entry := result_line(raw)) is not None:
                if entry["custom_id"] in wanted:
                    entries[entry["custom_id"]] = entry
        return entries

    return read


def _streamed(api, file_id: str, wanted: set[str]) -> Callable[[], Awaitable[Mapping]]:
    """The streamed reader, then every line kept read once, as a run settles its items."""
    from llm.batch_file import ResultLines, read_result_file

    async def read() -> Mapping:
        entries = ResultLines()
        await read_result_file(api, file_id, wanted, entries)
        for custom_id in wanted:
            entries.get(custom_id)
        return entries

    return read


async def _peak(read: Callable[[], Awaitable[Mapping]]) -> tuple[float, int]:
    """(peak MiB above what was held before, lines kept) of one read, traced."""
    gc.collect()
    tracemalloc.start()
    try:
        held = tracemalloc.get_traced_memory()[0]
        entries = await read()
        peak = (tracemalloc.get_traced_memory()[1] - held) / MiB
    finally:
        tracemalloc.stop()
    return peak, len(entries)


async def _seconds(read: Callable[[], Awaitable[Mapping]]) -> float:
    """Median wall time of `REPEAT` reads, untraced (tracing slows every allocation)."""
    times = []
    for _ in range(REPEAT):
        start = time.perf_counter()
        await read()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


async def _bench(url: str) -> None:
    from openai import AsyncOpenAI

    from llm.http_client import CappedClient

    api = AsyncOpenAI(base_url=url, api_key=KEY, max_retries=0,
                      http_client=CappedClient(timeout=600.0))
    for lines, answer in ((1_000, 100 * 1024), (70_000, 1024)):
        data = _result_file(lines, answer)
        size = len(data) / MiB
        file_id = (await api.files.create(file=("results.jsonl", data, "application/jsonl"),
                                          purpose="batch")).id
        del data
        every = {f"i{n}" for n in range(lines)}
        print(f"result file of {lines:,} lines with {answer // 1024} KiB answers: "
              f"{size:.1f} MiB", flush=True)
        for label, read in (
                ("read whole (before), every line kept", _read_whole(api, file_id, every)),
                ("streamed, every line kept", _streamed(api, file_id, every)),
                ("streamed, no line kept (the reader)", _streamed(api, file_id, set()))):
            peak, kept = await _peak(read)
            print(f"  {label:38s} peak {peak:7.1f} MiB = {peak / size:5.2f} x the file; "
                  f"{kept:,} lines kept; {await _seconds(read):.2f} s", flush=True)


def main() -> None:
    with server_process(0.0) as url:
        asyncio.run(_bench(url))


if __name__ == "__main__":
    main()
