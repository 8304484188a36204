"""The HTTP client under every `AsyncOpenAI` of the grader and of response collection: what a
model or grader server may send back is bounded before it is read.

- Every response body is capped while it is read (`MAX_RESPONSE_BYTES` for the JSON endpoints,
  `MAX_FILE_BYTES` for a Batch API result file, which `llm.batch_file` reads as a stream, one
  line at a time): past the cap the connection is dropped and the
  call fails with `ResponseRefused`, so an endless chunked body or a huge JSON costs at most the
  cap in memory, whatever `Content-Length` says (a declared length above the cap is refused
  before any byte of the body is read). The bodies one client is reading at once share a cap
  too (`MAX_BYTES_IN_FLIGHT`): past it the body whose chunk crossed it is dropped the same way,
  so a run's memory stays bounded however many requests are out (`--concurrency` up to 1000 x
  8 MiB would be 8 GiB).
- A body that would be parsed as JSON (it starts with `{` or `[`) holds at most
  `MAX_JSON_VALUES` arrays, objects and items outside its strings: 8 MiB of `[],[],...` would
  be millions of Python objects (over 500 MB, and minutes of the SDK building a choice of
  each), where a chat completion holds a few dozen; the text of an answer is one string.
- Bodies are asked for uncompressed (`Accept-Encoding: identity`) and a compressed one is
  refused: a small gzip body may inflate to gigabytes, and the cap counts the bytes read.
- Redirects are not followed (an API does not redirect; a redirect would carry the request, the
  study's data, to an address nobody chose): a 3xx answer is refused, naming where it pointed.
- A successful (2xx) answer from a JSON endpoint must say it is JSON: an HTML page (a proxy's
  login page, a web server's index) is refused with its content type, not parsed.

`ResponseRefused` is an `openai.APIError`, so the SDK passes it through unwrapped and
`llm.call.complete` ends the item with its message (no retry: the server would send the
same). The SDK's own defaults (connection pool, timeouts, proxies from the environment) are kept:
this is `openai.DefaultAsyncHttpxClient` with the checks added to `send`.
"""

from __future__ import annotations

import re
import threading
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import openai

MAX_RESPONSE_BYTES = 8 * 2**20  # one chat completion (the largest stored answer is 200,000 chars)
MAX_FILE_BYTES = 256 * 2**20  # one Batch API result file (GET /files/{id}/content)
MAX_BYTES_IN_FLIGHT = 128 * 2**20  # all JSON bodies one client is reading at once
MAX_JSON_VALUES = 10_000  # arrays, objects and items outside strings in one JSON body
# A string, or an unclosed one up to the end: every match attempt at a quote succeeds, so the
# scan is linear (requiring the closing quote, an unclosed string whose later quotes are all
# escaped was scanned again from each of them: quadratic). JSON that is not valid fails to parse.
_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)', re.DOTALL)
_JSON_START = re.compile(rb"\s*[\[{]")


def _mib(n: int) -> str:
    return f"{n / 2**20:g} MiB"


class ResponseRefused(openai.APIError):
    """A response this client does not read: too large, compressed, redirected or not JSON."""

    def __init__(self, message: str, request: httpx2.Request) -> None:
        super().__init__(message, request, body=None)


class _InFlight:
    """The bytes of the bodies one client is reading at once, against their shared cap."""

    def __init__(self, cap: int) -> None:
        self.cap, self.held, self._lock = cap, 0, threading.Lock()

    def take(self, n: int) -> bool:
        """Count `n` more bytes; False once the bodies being read hold more than the cap."""
        with self._lock:
            self.held += n
            return self.held <= self.cap

    def give_back(self, n: int) -> None:
        with self._lock:
            self.held -= n


class _CappedStream(httpx2.AsyncByteStream):
    """The body, chunk by chunk, ending with `ResponseRefused` once more than `cap` bytes came,
    or once the bodies being read at once (`in_flight`, if given) hold more than theirs."""

    def __init__(self, inner: Any, cap: int, request: httpx2.Request,
                 in_flight: _InFlight | None = None) -> None:
        self._inner, self._cap, self._request = inner, cap, request
        self._in_flight, self._held = in_flight, 0

    def _release(self) -> None:
        if self._in_flight is not None and self._held:
            self._in_flight.give_back(self._held)
        self._held = 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        seen = 0
        try:
            async for chunk in self._inner:
                seen += len(chunk)
                if seen > self._cap:
                    raise ResponseRefused(f"response body larger than {_mib(self._cap)} (the "
                                          "cap): not read further", self._request)
                if self._in_flight is not None:
                    self._held += len(chunk)
                    if not self._in_flight.take(len(chunk)):
                        raise ResponseRefused(
                            "response bodies being read at once hold more than "
                            f"{_mib(self._in_flight.cap)} (the cap on all of them): not read "
                            "further", self._request)
                yield chunk
        finally:
            self._release()  # the body is read (into the response) or dropped

    async def aclose(self) -> None:
        self._release()
        await self._inner.aclose()


def json_values(body: bytes) -> int:
    """The opening brackets, braces and commas outside the strings of JSON `body` (each begins
    a value): about how many objects parsing it builds, counted in one linear scan. Exact for
    valid JSON; where `body` stops being valid, parsing stops too."""
    bare = _JSON_STRING.sub(b"", body)
    return bare.count(b",") + bare.count(b"[") + bare.count(b"{")


def too_many_json_values(body: bytes) -> str | None:
    """Why a body (or a line, an answer) that would be parsed as JSON is not, or None: more
    than MAX_JSON_VALUES values (`json_values`)."""
    if len(body) <= MAX_JSON_VALUES or not _JSON_START.match(body):
        return None
    if json_values(body) <= MAX_JSON_VALUES:
        return None
    return f"more than {MAX_JSON_VALUES:,} JSON values (a chat completion holds a few dozen)"


def _is_file_content(request: httpx2.Request) -> bool:
    return request.method == "GET" and request.url.path.endswith("/content")


def _refusal(response: httpx2.Response, cap: int) -> str | None:
    """Why the response is not read (from its status line and headers alone), or None."""
    if 300 <= response.status_code < 400:
        where = response.headers.get("location", "nowhere")
        return (f"HTTP {response.status_code} redirect to {where[:200]!r} not followed: give the "
                "address the API answers at as the base URL")
    encoding = response.headers.get("content-encoding", "identity").strip().lower()
    if encoding not in ("", "identity"):
        return f"compressed response body ({encoding[:40]!r}): identity was asked for"
    length = response.headers.get("content-length", "")
    if length.isascii() and length.isdigit() and int(length) > cap:
        return f"response body of {int(length):,} bytes announced: larger than {_mib(cap)} (the cap)"
    kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
    if (200 <= response.status_code < 300 and not _is_file_content(response.request)
            and not kind.endswith("json")):
        return (f"HTTP {response.status_code} with a {kind[:60] or 'untyped'} body, not JSON: "
                "is the base URL an OpenAI-compatible API (often ending in /v1)?")
    return None


class CappedClient(openai.DefaultAsyncHttpxClient):
    """`openai.DefaultAsyncHttpxClient` that bounds what it reads (see the module docstring)."""

    def __init__(self, *, max_bytes: int = MAX_RESPONSE_BYTES,
                 max_file_bytes: int = MAX_FILE_BYTES,
                 max_bytes_in_flight: int = MAX_BYTES_IN_FLIGHT, **kwargs: Any) -> None:
        kwargs["follow_redirects"] = False
        super().__init__(**kwargs)
        self.max_bytes, self.max_file_bytes = max_bytes, max_file_bytes
        self.in_flight = _InFlight(max_bytes_in_flight)

    async def send(self, request: httpx2.Request, *, stream: bool = False,
                   **kwargs: Any) -> httpx2.Response:
        request.headers["Accept-Encoding"] = "identity"
        kwargs["follow_redirects"] = False  # also when a caller's request options ask otherwise
        response = await super().send(request, stream=True, **kwargs)
        try:
            file = _is_file_content(request)  # one at a time, capped on its own
            cap = self.max_file_bytes if file else self.max_bytes
            refusal = _refusal(response, cap)
            if refusal is not None:
                raise ResponseRefused(refusal, request)
            response.stream = _CappedStream(response.stream, cap, request,
                                            None if file else self.in_flight)
            if not stream:
                await response.aread()
                if not file and (why := too_many_json_values(response.content)):
                    raise ResponseRefused(f"body of {why}: not parsed", request)
        except BaseException:
            await response.aclose()
            raise
        return response
