"""A Batch API result file (GET /files/{id}/content), read as a stream, one line at a time.

The body comes in chunks (the SDK's `with_streaming_response`) under the client's byte cap
(`llm.http_client.CappedClient`: `MAX_FILE_BYTES`; a larger `Content-Length` is refused before
the body, a longer body is dropped where it crosses the cap). Each line is parsed as soon as it
ends, and only the result lines of the items asked for are kept, as their bytes (`ResultLines`:
parsed again when read, a parsed line weighing two to three times its text). So a file costs
one line (at most `MAX_LINE_BYTES`) and the lines kept, not its size: read whole, it was held
as bytes, as text and as a list of lines at once, and every line parsed
(`benchmarks/bench_batch_file.py`).

A file over its cap, or a line over `MAX_LINE_BYTES`, refuses the whole file (`UserError`,
one line naming the file and the cap or the line) before any of its results is used: a run's
items are settled from files read whole, or not at all. A line that is not a result line (not
UTF-8, not JSON, not an object of the expected types: `result_line`), a truncated last line
included, counts as missing, as it did when the file was read whole.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Container, Iterator, Mapping
from typing import Any

import httpx2

from errors import UserError, one_line
from llm.http_client import MAX_RESPONSE_BYTES, ResponseRefused, too_many_json_values

log = logging.getLogger(__name__)

MAX_LINE_BYTES = MAX_RESPONSE_BYTES + 2**20  # one chat completion's cap, and its line's envelope


def result_line(raw: str | bytes) -> dict | None:
    """A Batch API result line, or None for one that is not (its item then has no result line):
    UTF-8 text of a JSON object of at most `llm.http_client.MAX_JSON_VALUES` values with a
    string `custom_id`, `response` and `error` objects or null, the response's `status_code` an
    integer or null and its `body` an object or null."""
    if too_many_json_values(raw.encode() if isinstance(raw, str) else raw):
        return None
    try:
        entry = json.loads(raw if isinstance(raw, str) else raw.decode())
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        return None
    if not isinstance(entry, dict) or not isinstance(entry.get("custom_id"), str):
        return None
    response, error = entry.get("response"), entry.get("error")
    if not isinstance(response, dict | None) or not isinstance(error, dict | None):
        return None
    if response is not None and not (isinstance(response.get("status_code"), int | None)
                                     and isinstance(response.get("body"), dict | None)):
        return None
    return entry


class ResultLines(Mapping[str, dict]):
    """Result lines by custom_id, each kept as its bytes (checked by `result_line`) and parsed
    when read."""

    def __init__(self) -> None:
        self._lines: dict[str, bytes] = {}

    def __getitem__(self, custom_id: str) -> dict:
        return json.loads(self._lines[custom_id].decode())

    def keep(self, custom_id: str, line: bytes) -> None:
        self._lines[custom_id] = line

    def update(self, other: ResultLines) -> None:
        self._lines.update(other._lines)

    def __iter__(self) -> Iterator[str]:
        return iter(self._lines)

    def __len__(self) -> int:
        return len(self._lines)


async def read_result_file(api: Any, file_id: str, wanted: Container[str],
                           into: ResultLines) -> None:
    """Keep in `into` the result lines of file `file_id` whose custom_id is `wanted` (a
    custom_id written twice: its last line); UserError when the file or a line is over its
    cap. A connection failing while the body is read (past the SDK's own retries, which end
    with the headers) reads the file again from its start, `api.max_retries` times at most
    with the SDK's backoff (0.5 s doubling to 8 s), as the SDK did when it read the body."""
    retries = api.max_retries
    for attempt in range(retries + 1):
        lines = ResultLines()
        try:
            await _read(api, file_id, wanted, lines)
            break
        except httpx2.RequestError as exc:
            if attempt == retries:
                raise
            log.info("reading %s again (%s): %s", file_id, attempt + 1, type(exc).__name__)
            await asyncio.sleep(min(8.0, 0.5 * 2**attempt))
    into.update(lines)


async def _read(api: Any, file_id: str, wanted: Container[str], into: ResultLines) -> None:
    number = 0  # lines ended so far

    def take(raw: bytes) -> None:
        nonlocal number
        number += 1
        if len(raw) > MAX_LINE_BYTES:
            raise UserError(_line_too_long(file_id, number))
        entry = result_line(raw) if raw.strip() else None
        if entry is not None and entry["custom_id"] in wanted:
            into.keep(entry["custom_id"], raw)

    try:
        async with api.files.with_streaming_response.content(file_id) as response:
            line = bytearray()  # the line being read
            async for chunk in response.iter_bytes():
                *ended, rest = chunk.split(b"\n")
                for piece in ended:
                    line += piece
                    take(bytes(line))
                    line.clear()
                line += rest
                if len(line) > MAX_LINE_BYTES:
                    raise UserError(_line_too_long(file_id, number + 1))
            if line:
                take(bytes(line))
    except ResponseRefused as exc:
        raise UserError(f"Batch API result file {file_id} refused: "
                        f"{one_line(exc.message, 300)}") from None


def _line_too_long(file_id: str, number: int) -> str:
    return (f"Batch API result file {file_id} refused: line {number} is longer than "
            f"{MAX_LINE_BYTES / 2**20:g} MiB (the cap on one line): not read further")
