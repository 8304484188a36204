"""The baseline of the grader benchmark: a bare `AsyncOpenAI` loop, as a program of its own.

`python benchmarks/openai_bare_loop.py URL N CONCURRENCY BODY.json` sends the chat completion in
BODY.json N times, at most CONCURRENCY at once, through a plain `AsyncOpenAI` (key from
OPENAI_API_KEY, SDK retries off), and exits; it fails if any request fails. Started by path with the same
interpreter as `nmb grade`, it imports nothing of the project: interpreter start, the `openai`
import and the loop are all it pays, which is what any minimal script using the SDK pays.
`benchmarks/bench_grader.py` times it as a whole process beside `nmb grade`.
"""

import asyncio
import json
import sys
from pathlib import Path

from openai import AsyncOpenAI


async def bare_loop(base_url: str, n: int, concurrency: int, body: dict) -> None:
    client = AsyncOpenAI(base_url=base_url, max_retries=0)
    gate = asyncio.Semaphore(concurrency)

    async def one() -> None:
        async with gate:
            await client.chat.completions.create(**body)

    await asyncio.gather(*(one() for _ in range(n)))
    await client.close()


if __name__ == "__main__":
    url, n, concurrency, body_file = sys.argv[1:]
    asyncio.run(bare_loop(url, int(n), int(concurrency), json.loads(Path(body_file).read_text())))
