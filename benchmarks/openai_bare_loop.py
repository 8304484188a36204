"""Baseline for the grader benchmark: a bare `AsyncOpenAI` loop, and the test server as a process.

`bare_loop` is what `nmb grade` is compared against (issue 6: at least 0.8 of its throughput at
the same n and concurrency, measured in the same run). `server_process` starts
`python -m tests.openai_server` in its own process, so the server's threads do not share the GIL
with the client being measured. `main()` compares the bare loop with the call layer alone
(`run_bounded` + `call_structured`); this module is not `bench_*`, so `make bench` does not run it:
`python -m benchmarks.openai_bare_loop [n] [concurrency] [latency]`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from openai import AsyncOpenAI

ROOT = Path(__file__).resolve().parent.parent
BENCH_KEY = "sk-bench-not-a-key"


@contextlib.contextmanager
def server_process(latency: float = 1.0) -> Iterator[str]:
    """Run the test server in a child process on a free port; yields its base URL."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    cmd = [sys.executable, "-m", "tests.openai_server", "--port", "0", "--latency", str(latency)]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline().strip() if proc.stdout else ""
        if not line.startswith("http://"):
            raise RuntimeError(f"test server did not start (printed {line!r})")
        yield line
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


async def bare_loop(base_url: str, n: int, concurrency: int, body: dict) -> float:
    """Seconds to send `n` chat completions with `body` at most `concurrency` at once, through a
    plain `AsyncOpenAI` (SDK retries off): client creation to last answer, nothing else."""
    start = time.perf_counter()
    client = AsyncOpenAI(base_url=base_url, api_key=BENCH_KEY, max_retries=0)
    gate = asyncio.Semaphore(concurrency)

    async def one() -> None:
        async with gate:
            await client.chat.completions.create(**body)

    await asyncio.gather(*(one() for _ in range(n)))
    elapsed = time.perf_counter() - start
    await client.close()
    return elapsed


def _demo_request(i: int):
    from calibration.llm import LLMRequest

    schema = {
        "type": "object",
        "additionalProperties": False,
        "required": ["level", "error_tags"],
        "properties": {
            "level": {"type": "integer", "minimum": 0, "maximum": 3},
            "error_tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}},
        },
    }
    messages = [{"role": "user", "content": f"Grade response {i}."}]
    return LLMRequest(model="gpt-4o", messages=messages, json_schema=schema, seed=1)


async def call_layer_loop(base_url: str, n: int, concurrency: int) -> float:
    """Seconds for `n` distinct requests through `run_bounded` + `call_structured`."""
    from calibration.llm import call_structured, run_bounded

    start = time.perf_counter()
    client = AsyncOpenAI(base_url=base_url, api_key=BENCH_KEY)
    results = await run_bounded(
        [_demo_request(i) for i in range(n)],
        lambda req: call_structured(client, req, validate=lambda d: d),
        concurrency,
    )
    elapsed = time.perf_counter() - start
    await client.close()
    failed = [r.reason for r in results if not r.ok]
    if failed:
        raise RuntimeError(f"{len(failed)} calls failed, e.g. {failed[0]}")
    return elapsed


def main(n: int = 320, concurrency: int = 32, latency: float = 1.0, repeat: int = 3) -> None:
    body = _demo_request(0).body()
    bare, layer = [], []
    with server_process(latency) as url:
        for _ in range(repeat):  # alternate, so drift on a shared machine hits both alike
            bare.append(asyncio.run(bare_loop(url, n, concurrency, body)))
            layer.append(asyncio.run(call_layer_loop(url, n, concurrency)))
    ideal = n / concurrency * latency
    for name, times in (("bare AsyncOpenAI loop", bare), ("run_bounded+call_structured", layer)):
        med = statistics.median(times)
        print(f"{name:30s} median {med:6.2f} s  {n / med:6.1f} req/s  (ideal {ideal:.1f} s)")
    ratio = statistics.median(bare) / statistics.median(layer)
    print(f"call-layer throughput / bare throughput = {ratio:.3f} (issue 6 asks >= 0.8 for nmb grade)")


if __name__ == "__main__":
    args = [float(a) for a in sys.argv[1:4]]
    main(*(int(a) if i < 2 else a for i, a in enumerate(args)))
