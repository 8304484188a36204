"""The bare `AsyncOpenAI` loop as a program of its own, for `bench_grader` to time as a whole process.

`python -m benchmarks.bare_process URL N CONCURRENCY BODY.json`: interpreter start, the `openai`
import and the loop, which is all a minimal script using the SDK pays; `nmb grade` pays that too,
so the ratio of the two shows what the tool itself adds.
"""

import asyncio
import json
import sys
from pathlib import Path

from benchmarks.openai_bare_loop import bare_loop

if __name__ == "__main__":
    url, n, concurrency, body = sys.argv[1:5]
    asyncio.run(bare_loop(url, int(n), int(concurrency), json.loads(Path(body).read_text())))
