"""A small OpenAI-compatible HTTP server for tests and benchmarks (stdlib only, 127.0.0.1, real sockets).

The real `openai` client talks to it; nothing is mocked. It serves

- POST /v1/chat/completions (non-streaming): with a `json_schema` response format the answer is a
  JSON document generated deterministically from the schema (it validates against it), without
  one a short text naming the turn and the images seen; `image_url` content parts must be
  base64 data URLs of PNG or JPEG images (else 400, as the real API refuses them) and are kept
  decoded in `Recorded.images`;
- GET /v1/models;
- the Batch API: POST /v1/files (multipart, purpose=batch), GET /v1/files/{id}[/content],
  POST /v1/batches, GET /v1/batches/{id} (completes after `batch_polls` polls), POST .../cancel;
  a file's content is written 64 KiB at a time, with a Content-Length or chunked
  (`chunked_files`), and the bytes written before the end or the client's hang-up are counted
  (`sent_of`); `cut_files` ends the next contents halfway (the connection closed);
  `edit_batch_file` rewrites result files (hostile, large).

Fault injection (`inject`, `inject_when`): "429" (with `Retry-After`), "500", "400", "truncated"
(cut JSON), "badschema" (valid JSON that breaks the schema), "slow" (sleeps before answering),
"empty" (an empty answer), "length" (half the answer, finish_reason "length"), "trickle" (sends
the whole answer, status line and headers included, one byte at a time, spread over the given
seconds: every read gets a byte long before a per-read timeout, the answer does not end for that
long). Hostile answers (HTTP chat completions only; a batch line meeting one is answered
normally): "html" (200 with an HTML page), "notjson" (200, `application/json`, not JSON),
"wrongtype" (200, JSON whose fields have the wrong types), "deep" (200, JSON nested 100,000
deep), "dense" (200, a completion whose choices list starts with `value` MiB, default 7, of
empty arrays: millions of values within the byte cap), "endless" (200, a chunked body that
never ends: 64 KiB chunks until the client hangs up), "huge_json" (200, a valid completion
whose answer is `value` MiB, default 64, with its Content-Length), "huge_chunked" (the same
without a length, chunked), "gzip" (200, a gzip body inflating to `value` MiB of JSON, default
16), "redirect" (307 to the same path on port `value`), "quotes" (200, JSON that opens a
string and never closes it, every later quote escaped, `value` MiB, default 1). A fault is a
`Fault` or a string "kind" / "kind:value" ("429:0.2" = Retry-After 0.2 s, "slow:2" = sleep
2 s, "trickle:60" = one answer over 60 s). Queued faults are consumed in order by the next chat
completions (batch lines included); keyed faults apply to every chat completion whose body
contains a substring.

Run standalone for benchmarks: `python -m tests.openai_server --port 0 --latency 1.0`; the first
line on stdout is the base URL.
"""

from __future__ import annotations

import argparse
import base64
import copy
import email.parser
import email.policy
import hashlib
import json
import re
import sys
import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

HOSTILE_KINDS = ("html", "notjson", "wrongtype", "deep", "dense", "endless", "huge_json",
                 "huge_chunked", "gzip", "redirect", "quotes")
FAULT_KINDS = ("429", "500", "400", "truncated", "badschema", "slow", "empty", "length", "trickle",
               *HOSTILE_KINDS)
IMAGE_MAGIC = {"image/png": b"\x89PNG\r\n\x1a\n", "image/jpeg": b"\xff\xd8\xff"}
SYSTEM_FINGERPRINT = "fp_test1"


@dataclass(frozen=True)
class Fault:
    """One injected fault. `value`: Retry-After seconds for "429", sleep seconds for "slow",
    seconds one answer takes for "trickle"."""

    kind: str
    value: float | None = None

    @classmethod
    def parse(cls, spec: Fault | str) -> Fault:
        if isinstance(spec, Fault):
            return spec
        kind, _, value = str(spec).partition(":")
        if kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault {spec!r}; expected one of {FAULT_KINDS}")
        return cls(kind, float(value) if value else None)


@dataclass
class KeyedFault:
    """A fault applied to every chat completion whose raw body contains `substring`."""

    substring: str
    fault: Fault
    times: int | None = None  # None = forever


@dataclass
class Recorded:
    """One request as the server saw it (arrival on the server's monotonic clock)."""

    method: str
    path: str
    headers: dict[str, str]  # lower-case names
    body: Any
    arrived: float
    fault: str | None = None
    answered: float | None = None  # when the server began sending its answer
    status: int | None = None
    images: list[bytes] = field(default_factory=list)  # decoded image_url parts, in order


# ---------------------------------------------------------------- schema -> document


def _resolve(schema: dict, root: dict) -> dict:
    ref = schema.get("$ref")
    if not ref:
        return schema
    node: Any = root
    for part in ref.removeprefix("#/").split("/"):
        node = node[part]
    return _resolve(node, root)


def _pick(options: list, seed: int, path: str) -> Any:
    digest = hashlib.sha256(f"{seed}:{path}".encode()).digest()
    return options[int.from_bytes(digest[:4], "big") % len(options)]


def sample_document(schema: dict, seed: int, root: dict | None = None, path: str = "$") -> Any:
    """A value that validates against `schema`, chosen deterministically from `seed`.

    Covers what strict Structured Outputs allows: object/properties/required, $ref/$defs, anyOf,
    type lists (nullable), enum/const, boolean, integer/number (enum or minimum/maximum),
    string (enum or free), array (items, minItems/maxItems).
    """
    root = schema if root is None else root
    schema = _resolve(schema, root)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return _pick(list(schema["enum"]), seed, path)
    if "anyOf" in schema:
        return sample_document(schema["anyOf"][0], seed, root, path)
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        props = schema.get("properties", {})
        return {k: sample_document(v, seed, root, f"{path}.{k}") for k, v in props.items()}
    if kind == "array":
        lo = int(schema.get("minItems", 1))
        hi = int(schema.get("maxItems", max(lo, 2)))
        n = _pick(list(range(lo, hi + 1)), seed, path + "#n")
        items = schema.get("items", {"type": "string"})
        out = [sample_document(items, seed, root, f"{path}[{i}]") for i in range(n)]
        if schema.get("uniqueItems"):
            out = list({json.dumps(x, sort_keys=True): x for x in out}.values())
            out = out + [sample_document(items, seed + 1 + i, root, path) for i in range(lo)]
            out = list({json.dumps(x, sort_keys=True): x for x in out}.values())[: max(n, lo)]
        return out
    if kind in ("integer", "number"):
        lo = schema.get("minimum", schema.get("exclusiveMinimum", -1) + 1)
        hi = schema.get("maximum", schema.get("exclusiveMaximum", lo + 5) - 1)
        value = _pick(list(range(int(lo), int(hi) + 1)) or [int(lo)], seed, path)
        return value if kind == "integer" else float(value)
    if kind == "boolean":
        return _pick([True, False], seed, path)
    if kind == "null":
        return None
    return f"text {_pick(['alpha', 'beta', 'gamma', 'delta'], seed, path)}"


def break_document(schema: dict, doc: Any, root: dict | None = None) -> tuple[Any, bool]:
    """Mutate a valid `doc` so it no longer validates (first bounded number or enum gets an
    out-of-range value, else a required key goes missing). Returns (doc, whether it broke)."""
    root = schema if root is None else root
    schema = _resolve(schema, root)
    if "enum" in schema:
        bad = max((v for v in schema["enum"] if isinstance(v, int | float)), default=None)
        return (bad + 100 if bad is not None else "__not_in_enum__"), True
    kind = schema.get("type")
    if kind in ("integer", "number") and "maximum" in schema:
        return schema["maximum"] + 100, True
    if kind == "object" and isinstance(doc, dict):
        for key, sub in schema.get("properties", {}).items():
            if key in doc:
                new, broke = break_document(sub, doc[key], root)
                if broke:
                    return {**doc, key: new}, True
        required = schema.get("required", [])
        if required and required[0] in doc:
            return {k: v for k, v in doc.items() if k != required[0]}, True
    if kind == "array" and isinstance(doc, list) and doc:
        new, broke = break_document(schema.get("items", {}), doc[0], root)
        if broke:
            return [new, *doc[1:]], True
    return doc, False


# ---------------------------------------------------------------- the server


class OpenAIServer:
    """OpenAI-compatible server on 127.0.0.1 with fault injection; a context manager.

    `latency`: seconds each chat completion waits before answering. `answer(request_json) -> str`
    overrides the content. `model_alias` maps a requested model to the name returned (as the
    real API returns a dated snapshot). `batch_polls`: polls a batch stays "in_progress".
    `api_key`: if set, requests without `Authorization: Bearer <api_key>` get 401.
    """

    def __init__(
        self,
        latency: float = 0.0,
        *,
        answer: Callable[[dict], str] | None = None,
        model_alias: dict[str, str] | None = None,
        batch_polls: int = 0,
        api_key: str | None = None,
        port: int = 0,
        slow_seconds: float = 5.0,
        retry_after: float = 1.0,
    ) -> None:
        self.latency = latency
        self.answer = answer
        self.model_alias = dict(model_alias or {})
        self.batch_polls = batch_polls
        self.api_key = api_key
        self.port = port
        self.slow_seconds = slow_seconds  # also the default of "trickle"
        self.retry_after = retry_after
        #: The message of a "400" fault's error (else a fixed one).
        self.error_message: str | None = None
        #: When set, every chat completion refuses with this text (no content).
        self.refusal: str | None = None
        #: Rewrites each Batch API output/error file before it is stored (hostile batch lines).
        self.edit_batch_file: Callable[[bytes], bytes] | None = None
        #: Serve file contents chunked, without a Content-Length (else with one).
        self.chunked_files = False
        #: The next `cut_files` file contents end halfway: the connection is closed.
        self.cut_files = 0
        #: Bytes of each file's content written by its last GET .../content, once it ended.
        self.file_bytes_sent: dict[str, int] = {}
        self._file_sent = threading.Condition()
        self.requests: list[Recorded] = []
        self.counts: Counter[str] = Counter()
        self.files: dict[str, dict] = {}
        self.batches: dict[str, dict] = {}
        self.in_flight = 0
        self.max_in_flight = 0
        self._queue: deque[Fault] = deque()
        self._keyed: list[KeyedFault] = []
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._ids = Counter()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ---- lifecycle
    def start(self) -> OpenAIServer:
        handler = type("Handler", (_Handler,), {"server_state": self})
        httpd = ThreadingHTTPServer(("127.0.0.1", self.port), handler, bind_and_activate=False)
        httpd.daemon_threads = True
        httpd.request_queue_size = 256  # 32+ clients connecting at once must not overflow backlog
        httpd.allow_reuse_address = True
        httpd.server_bind()
        httpd.server_activate()
        self._httpd = httpd
        self.port = httpd.server_address[1]
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="openai-server"
        )
        self._thread.daemon = True
        self._thread.start()
        return self

    def stop(self) -> None:
        self._closing.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> OpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # ---- faults
    def inject(self, *faults: Fault | str) -> None:
        """Queue faults, consumed in order by the next chat completions."""
        parsed = [Fault.parse(f) for f in faults]
        with self._lock:
            self._queue.extend(parsed)

    def inject_when(self, substring: str, fault: Fault | str, times: int | None = None) -> None:
        """Apply `fault` to every chat completion whose body contains `substring`
        (`times` of them, or forever)."""
        with self._lock:
            self._keyed.append(KeyedFault(substring, Fault.parse(fault), times))

    def clear_faults(self) -> None:
        with self._lock:
            self._queue.clear()
            self._keyed.clear()

    def _take_fault(self, raw: str) -> Fault | None:
        with self._lock:
            for keyed in self._keyed:
                if keyed.substring in raw and keyed.times != 0:
                    if keyed.times is not None:
                        keyed.times -= 1
                    return keyed.fault
            return self._queue.popleft() if self._queue else None

    # ---- records
    def chat_requests(self) -> list[Recorded]:
        """Recorded chat completions (HTTP only; batch lines are in `batch_lines`)."""
        with self._lock:
            return [r for r in self.requests if r.path == "/v1/chat/completions"]

    @property
    def batch_lines(self) -> list[dict]:
        with self._lock:
            return [r.body for r in self.requests if r.path == "batch:/v1/chat/completions"]

    def batch_records(self) -> list[Recorded]:
        """Recorded batch lines (with their decoded images)."""
        with self._lock:
            return [r for r in self.requests if r.path == "batch:/v1/chat/completions"]

    def _record(self, rec: Recorded) -> None:
        with self._lock:
            self.requests.append(rec)
            self.counts[rec.path] += 1
            if rec.fault:
                self.counts[f"fault:{rec.fault}"] += 1

    def sent_of(self, file_id: str, timeout: float = 60.0) -> int:
        """Bytes of file `file_id`'s content written by its last GET .../content, once the
        answer ended (the whole body, or the client hung up); KeyError if it did not end."""
        with self._file_sent:
            self._file_sent.wait_for(lambda: file_id in self.file_bytes_sent, timeout)
            return self.file_bytes_sent[file_id]

    def _new_id(self, prefix: str) -> str:
        with self._lock:
            self._ids[prefix] += 1
            return f"{prefix}-test{self._ids[prefix]}"

    # ---- chat completion logic (shared by HTTP and batch lines)
    def completion(self, body: dict, fault: Fault | None) -> tuple[int, dict, dict[str, str]]:
        """(status, JSON body, extra headers) for one chat completion under `fault`."""
        if fault is not None and fault.kind == "429":
            wait = self.retry_after if fault.value is None else fault.value
            return 429, _error("Rate limit reached (test server).", "rate_limit_exceeded"), {
                "Retry-After": f"{wait:g}"
            }
        if fault is not None and fault.kind == "500":
            return 500, _error("The server had an error (test server).", "server_error"), {}
        if fault is not None and fault.kind == "400":
            message = self.error_message or "Invalid request (test server)."
            return 400, _error(message, "invalid_request_error"), {}
        content, finish = self._content(body), "stop"
        if fault is not None and fault.kind == "truncated":
            content = content[: max(1, len(content) // 2)]
        elif fault is not None and fault.kind == "badschema":
            content = self._bad_content(body, content)
        elif fault is not None and fault.kind == "empty":
            content = ""
        elif fault is not None and fault.kind == "length":
            content, finish = content[: max(1, len(content) // 2)], "length"
        return 200, self._completion_body(body, content, finish), {}

    def _content(self, body: dict) -> str:
        if self.answer is not None:
            return self.answer(body)
        schema = _schema_of(body)
        if schema is None:
            return _text_answer(body)
        seed = int(hashlib.sha256(_canonical(body).encode()).hexdigest()[:8], 16)
        return json.dumps(sample_document(schema, seed))

    @staticmethod
    def _bad_content(body: dict, content: str) -> str:
        schema = _schema_of(body)
        try:
            doc = json.loads(content)
        except ValueError:
            return json.dumps({"unexpected": True})
        if schema is not None:
            broken, ok = break_document(schema, copy.deepcopy(doc))
            if ok:
                return json.dumps(broken)
        return json.dumps({"unexpected": True})

    def _completion_body(self, body: dict, content: str, finish: str = "stop") -> dict:
        model = body.get("model", "test-model")
        prompt_tokens = max(1, len(json.dumps(body.get("messages", []))) // 4)
        completion_tokens = max(1, len(content) // 4)
        return {
            "id": self._new_id("chatcmpl"),
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.model_alias.get(model, model),
            "system_fingerprint": SYSTEM_FINGERPRINT,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": None if self.refusal else content,
                                "refusal": self.refusal},
                    "logprobs": None,
                    "finish_reason": finish,
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }

    # ---- batch logic
    def _run_batch(self, batch: dict) -> None:
        """Answer every line of the input file; fill output/error files (like the real API:
        non-200 answers and expired lines go to the error file)."""
        source = self.files[batch["input_file_id"]]["content"].decode()
        out_lines, err_lines = [], []
        for raw in source.splitlines():
            if not raw.strip():
                continue
            line = json.loads(raw)
            cid = line.get("custom_id")
            line_body = line.get("body", {})
            try:
                images, bad_image = decode_images(line_body), None
            except ValueError as e:
                images, bad_image = [], str(e)
            fault = None if bad_image else self._take_fault(json.dumps(line_body))
            self._record(
                Recorded(
                    "POST",
                    "batch:" + line.get("url", ""),
                    {},
                    line_body,
                    time.monotonic(),
                    fault.kind if fault else None,
                    images=images,
                )
            )
            entry_id = self._new_id("batch_req")
            if fault is not None and fault.kind == "slow":
                error = {"code": "batch_expired", "message": "Not executed before the window expired."}
                err_lines.append({"id": entry_id, "custom_id": cid, "response": None, "error": error})
                continue
            if bad_image:
                status, resp_body = 400, _error(bad_image, "invalid_image_format")
            else:
                status, resp_body, _ = self.completion(line_body, fault)
            entry = {
                "id": entry_id,
                "custom_id": cid,
                "response": {"status_code": status, "request_id": entry_id, "body": resp_body},
                "error": None,
            }
            (out_lines if status == 200 else err_lines).append(entry)
        now = int(time.time())
        for key, lines in (("output_file_id", out_lines), ("error_file_id", err_lines)):
            if lines:
                data = "".join(json.dumps(x) + "\n" for x in lines).encode()
                if self.edit_batch_file is not None:
                    data = self.edit_batch_file(data)
                batch[key] = self._store_file(f"batch_{key}.jsonl", data, "batch_output")["id"]
        batch.update(
            status="completed",
            completed_at=now,
            finalizing_at=now,
            request_counts={
                "total": len(out_lines) + len(err_lines),
                "completed": len(out_lines),
                "failed": len(err_lines),
            },
        )

    def _store_file(self, filename: str, data: bytes, purpose: str) -> dict:
        meta = {
            "id": self._new_id("file"),
            "object": "file",
            "bytes": len(data),
            "created_at": int(time.time()),
            "filename": filename,
            "purpose": purpose,
            "status": "processed",
        }
        with self._lock:
            self.files[meta["id"]] = {**meta, "content": data}
        return meta


def _text_answer(body: dict) -> str:
    """A free-text answer that names what it answers: the turn and the images seen."""
    messages = body.get("messages", [])
    turn = sum(1 for m in messages if m.get("role") == "user")
    images = sum(1 for m in messages if isinstance(m.get("content"), list)
                 for part in m["content"] if part.get("type") == "image_url")
    digest = hashlib.sha256(_canonical(body).encode()).hexdigest()[:8]
    return f"Test-server answer {digest}: turn {turn}, {images} images seen."


def decode_images(body: dict) -> list[bytes]:
    """The images of every `image_url` part, decoded; ValueError naming the first bad one."""
    out = []
    for m in body.get("messages", []):
        parts = m.get("content") if isinstance(m, dict) else None
        for part in parts if isinstance(parts, list) else []:
            if part.get("type") != "image_url":
                continue
            url = str((part.get("image_url") or {}).get("url", ""))
            kind, sep, data = url.removeprefix("data:").partition(";base64,")
            if not url.startswith("data:") or not sep or kind not in IMAGE_MAGIC:
                raise ValueError(f"Invalid image URL {url[:40]!r}: expected a base64 data URL "
                                 "of a PNG or JPEG image (the test server fetches nothing).")
            try:
                raw = base64.b64decode(data, validate=True)
            except ValueError:
                raise ValueError("Invalid image: the data URL is not base64.") from None
            if not raw.startswith(IMAGE_MAGIC[kind]):
                raise ValueError(f"Invalid image: the data is not {kind}.")
            out.append(raw)
    return out


def _error(message: str, code: str) -> dict:
    return {"error": {"message": message, "type": code, "param": None, "code": code}}


def _schema_of(body: dict) -> dict | None:
    fmt = body.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        return (fmt.get("json_schema") or {}).get("schema")
    return None


def _headers(message: Any) -> dict[str, str]:
    """Request headers with lower-case names (HTTP names are case-insensitive)."""
    return {key.lower(): value for key, value in message.items()}


def _canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the real API
    disable_nagle_algorithm = True  # headers and body are separate writes: no 40 ms delayed-ACK stall
    server_state: OpenAIServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - silence stderr
        pass

    # ---- plumbing
    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None,
              content_type: str = "application/json") -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout)
            self.close_connection = True

    def _send_file(self, file_id: str, data: bytes) -> None:
        """A file's content in 64 KiB writes (chunked if `chunked_files`), counting the bytes
        written until the end or until the client hangs up (`file_bytes_sent`)."""
        state, sent, chunked = self.server_state, 0, self.server_state.chunked_files
        view, end = memoryview(data), len(data)
        with state._lock:
            if state.cut_files > 0:
                state.cut_files -= 1
                end = len(data) // 2
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header(*(("Transfer-Encoding", "chunked") if chunked
                               else ("Content-Length", str(len(data)))))
            self.end_headers()
            for at in range(0, end, 65536):
                part = view[at:min(at + 65536, end)]
                self.wfile.write(b"%x\r\n%b\r\n" % (len(part), part) if chunked else part)
                sent += len(part)
            if end < len(data):
                self.close_connection = True
            elif chunked:
                self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):  # the client stopped reading
            self.close_connection = True
        finally:
            with state._file_sent:
                state.file_bytes_sent[file_id] = sent
                state._file_sent.notify_all()

    def _trickle(self, status: int, payload: dict, seconds: float) -> None:
        """The answer, one byte at a time, over `seconds` (ends early if the client leaves)."""
        data = json.dumps(payload).encode()
        raw = (f"HTTP/1.1 {status} {self.responses[status][0]}\r\n"
               f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
               ).encode() + data
        gap = seconds / len(raw)
        try:
            for i in range(len(raw)):
                if self.server_state._closing.wait(gap):
                    break
                self.wfile.write(raw[i:i + 1])
        except (BrokenPipeError, ConnectionResetError):  # the client gave up: the point
            pass
        self.close_connection = True

    def _hostile(self, fault: Fault, body: dict) -> None:
        """The hostile answers of `HOSTILE_KINDS` (see the module docstring)."""
        state = self.server_state
        default = {"gzip": 16, "dense": 7, "quotes": 1}.get(fault.kind, 64)
        kind, mib = fault.kind, int((fault.value or default) * 2**20)
        valid = json.dumps(state._completion_body(body, "x")).encode()
        head, _, tail = valid.partition(b'"x"')  # around the answer's content
        try:
            if kind == "redirect":
                port = int(fault.value or 0)
                self._send(307, b"", {"Location": f"http://127.0.0.1:{port}{self.path}"})
            elif kind == "html":
                page = b"<!doctype html><html><body><h1>Welcome</h1><p>Sign in</p></body></html>"
                self._send(200, page, content_type="text/html; charset=utf-8")
            elif kind == "notjson":
                self._send(200, b'{"id": "chatcmpl-1", "choices": [', {})
            elif kind == "wrongtype":
                self._send(200, {"id": 5, "object": "chat.completion", "model": ["m"],
                                 "choices": "none", "usage": {"prompt_tokens": "many"}})
            elif kind == "deep":
                self._send(200, b"[" * 100_000 + b"]" * 100_000)
            elif kind == "quotes":
                self._send(200, b'["' + b'\\"' * (mib // 2))
            elif kind == "dense":
                at = valid.index(b'"choices": [') + len(b'"choices": [')
                self._send(200, valid[:at] + b"[]," * (mib // 3) + valid[at:], {})
            elif kind == "gzip":
                import zlib

                packer = zlib.compressobj(6, zlib.DEFLATED, 31)  # gzip framing
                block = b"a" * 2**20
                parts = [packer.compress(head + b'"')]
                parts += [packer.compress(block) for _ in range(max(1, mib // 2**20))]
                parts += [packer.compress(b'"' + tail), packer.flush()]
                self._send(200, b"".join(parts), {"Content-Encoding": "gzip"})
            elif kind == "huge_json":
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(head) + mib + 2 + len(tail)))
                self.end_headers()
                self._stream(head + b'"', mib, b'"' + tail)
            else:  # endless, huge_chunked: chunked, no length
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                self._stream(head + b'"', None if kind == "endless" else mib, b'"' + tail,
                             chunked=True)
        except (BrokenPipeError, ConnectionResetError):  # the client hung up: the point
            pass
        self.close_connection = True

    def _stream(self, head: bytes, size: int | None, tail: bytes, chunked: bool = False) -> None:
        """`head`, then `size` bytes of "a" (forever when None) in 64 KiB writes, then `tail`."""
        def write(data: bytes) -> None:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data) if chunked else data)

        write(head)
        block, sent = b"a" * 65536, 0
        while (size is None or sent < size) and not self.server_state._closing.is_set():
            part = block if size is None else block[: size - sent]
            write(part)
            sent += len(part)
        write(tail)
        if chunked:
            self.wfile.write(b"0\r\n\r\n")

    def _authorized(self) -> bool:
        key = self.server_state.api_key
        if key is None or self.headers.get("Authorization") == f"Bearer {key}":
            return True
        self._send(401, _error("Incorrect API key provided.", "invalid_api_key"))
        return False

    # ---- routes
    def do_GET(self) -> None:
        state = self.server_state
        rec = Recorded("GET", self.path, _headers(self.headers), None, time.monotonic())
        state._record(rec)
        if not self._authorized():
            return
        path = self.path.split("?")[0]
        if path == "/v1/models":
            models = sorted({"gpt-4o-2024-08-06", "gpt-4o-mini-2024-07-18", "test-model"})
            data = [{"id": m, "object": "model", "created": 0, "owned_by": "test"} for m in models]
            self._send(200, {"object": "list", "data": data})
        elif m := re.fullmatch(r"/v1/files/([\w-]+)/content", path):
            found = state.files.get(m.group(1))
            if found is None:
                self._send(404, _error("No such file.", "not_found"))
            else:
                self._send_file(m.group(1), found["content"])
        elif m := re.fullmatch(r"/v1/files/([\w-]+)", path):
            found = state.files.get(m.group(1))
            meta = {k: v for k, v in (found or {}).items() if k != "content"}
            self._send(200, meta) if found else self._send(404, _error("No such file.", "not_found"))
        elif m := re.fullmatch(r"/v1/batches/([\w-]+)", path):
            self._get_batch(m.group(1))
        else:
            self._send(404, _error(f"Unknown path {path}.", "not_found"))

    def do_POST(self) -> None:
        state = self.server_state
        raw = self._read_body()
        path = self.path.split("?")[0]
        headers = _headers(self.headers)
        if path == "/v1/chat/completions":
            self._chat(raw, headers)
            return
        body: Any = None
        if headers.get("content-type", "").startswith("application/json"):
            body = json.loads(raw or b"null")
        state._record(Recorded("POST", path, headers, body, time.monotonic()))
        if not self._authorized():
            return
        if path == "/v1/files":
            self._upload(raw)
        elif path == "/v1/batches":
            self._create_batch(body or {})
        elif m := re.fullmatch(r"/v1/batches/([\w-]+)/cancel", path):
            batch = state.batches.get(m.group(1))
            if batch is None:
                self._send(404, _error("No such batch.", "not_found"))
            else:
                if batch["status"] not in ("completed", "failed", "expired"):
                    batch.update(status="cancelled", cancelled_at=int(time.time()))
                self._send(200, batch)
        else:
            self._send(404, _error(f"Unknown path {path}.", "not_found"))

    def _chat(self, raw: bytes, headers: dict[str, str]) -> None:
        state = self.server_state
        arrived = time.monotonic()
        try:
            body = json.loads(raw)
        except ValueError:
            self._send(400, _error("Body is not JSON.", "invalid_request_error"))
            return
        try:
            images = decode_images(body)
        except ValueError as e:
            state._record(Recorded("POST", "/v1/chat/completions", headers, body, arrived,
                                   status=400))
            self._send(400, _error(str(e), "invalid_image_format"))
            return
        fault = state._take_fault(raw.decode("utf-8", "replace"))
        rec = Recorded("POST", "/v1/chat/completions", headers, body, arrived,
                       fault.kind if fault else None, images=images)
        state._record(rec)
        with state._lock:
            state.in_flight += 1
            state.max_in_flight = max(state.max_in_flight, state.in_flight)
        try:
            if not self._authorized():
                rec.status = 401
                return
            if fault is not None and fault.kind == "slow":
                state._closing.wait(state.slow_seconds if fault.value is None else fault.value)
            if state.latency:
                state._closing.wait(state.latency)
            if fault is not None and fault.kind in HOSTILE_KINDS:
                rec.status, rec.answered = 307 if fault.kind == "redirect" else 200, time.monotonic()
                self._hostile(fault, body)
                return
            status, payload, extra = state.completion(body, fault)
            rec.status, rec.answered = status, time.monotonic()
            if fault is not None and fault.kind == "trickle":
                self._trickle(status, payload, state.slow_seconds if fault.value is None
                              else fault.value)
            else:
                self._send(status, payload, extra)
        finally:
            with state._lock:
                state.in_flight -= 1

    def _upload(self, raw: bytes) -> None:
        head = f"Content-Type: {self.headers.get('Content-Type', '')}\r\n\r\n".encode()
        msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + raw)
        fields: dict[str, Any] = {}
        filename = "upload.jsonl"
        for part in msg.iter_parts():
            name = part.get_param("name", header="content-disposition")
            if part.get_filename():
                filename = part.get_filename()
            fields[name] = part.get_payload(decode=True)
        data, purpose = fields.get("file"), (fields.get("purpose") or b"").decode()
        if data is None or purpose != "batch":
            self._send(400, _error("Expected a file with purpose=batch.", "invalid_request_error"))
            return
        for number, line in enumerate(data.decode().splitlines(), start=1):
            try:
                if line.strip():
                    json.loads(line)
            except ValueError:
                self._send(400, _error(f"Line {number} is not JSON.", "invalid_request_error"))
                return
        self._send(200, self.server_state._store_file(filename, data, purpose))

    def _create_batch(self, body: dict) -> None:
        state = self.server_state
        if body.get("input_file_id") not in state.files:
            self._send(400, _error("Unknown input_file_id.", "invalid_request_error"))
            return
        if body.get("endpoint") != "/v1/chat/completions" or body.get("completion_window") != "24h":
            self._send(400, _error("Unsupported endpoint or window.", "invalid_request_error"))
            return
        now = int(time.time())
        batch = {
            "id": state._new_id("batch"),
            "object": "batch",
            "endpoint": body["endpoint"],
            "errors": None,
            "input_file_id": body["input_file_id"],
            "completion_window": "24h",
            "status": "validating",
            "output_file_id": None,
            "error_file_id": None,
            "created_at": now,
            "in_progress_at": None,
            "expires_at": now + 86400,
            "completed_at": None,
            "request_counts": {"total": 0, "completed": 0, "failed": 0},
            "metadata": body.get("metadata"),
            "_polls_left": state.batch_polls,
        }
        with state._lock:
            state.batches[batch["id"]] = batch
        self._send(200, _public(batch))

    def _get_batch(self, batch_id: str) -> None:
        state = self.server_state
        batch = state.batches.get(batch_id)
        if batch is None:
            self._send(404, _error("No such batch.", "not_found"))
            return
        if batch["status"] in ("validating", "in_progress"):
            if batch["_polls_left"] > 0:
                batch["_polls_left"] -= 1
                batch.update(status="in_progress", in_progress_at=batch["created_at"])
            else:
                state._run_batch(batch)
        self._send(200, _public(batch))


def _public(batch: dict) -> dict:
    return {k: v for k, v in batch.items() if not k.startswith("_")}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0, help="0 = any free port")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds per chat completion")
    parser.add_argument("--batch-polls", type=int, default=0)
    args = parser.parse_args(argv)
    server = OpenAIServer(latency=args.latency, port=args.port, batch_polls=args.batch_polls)
    server.start()
    print(server.base_url, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


if __name__ == "__main__":
    main(sys.argv[1:])
