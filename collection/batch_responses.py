"""Model-server output as responses (`nmb import-responses FILE --from openai-batch |
chat-completions | ollama`), read by the rules `nmb collect` reads its own answers by.

- `openai-batch`: a Batch API output file (`{"custom_id", "response": {"status_code", "body"},
  "error"}` per line), as OpenAI writes it for `/v1/chat/completions` or `/v1/responses`
  requests, and as vLLM's `run_batch` writes it (whose error is a string, its status 400);
- `chat-completions`: bare response bodies, one per line, as an OpenAI-compatible server
  (vLLM's `vllm serve`, Ollama's `/v1`, llama.cpp, SGLang) returns them: `chat.completion`
  objects, or `response` objects of `/v1/responses`; an error body is a failure;
- `ollama`: Ollama's own `/api/chat` (or `/api/generate`) responses with `"stream": false`,
  one per line (`{"model", "message": {"content"}, "done": true, "done_reason", ...}`).

A usable answer becomes a response (the body's `model` the model unless `--model` is given,
its token counts kept as `usage`); an error, a status other than 200, no answer, an empty one
or one cut at the token limit becomes a collection failure, not a response. A chat completion
is read by `llm.model_call.batch_outcome`, what `nmb collect --batch` reads; a `response`
object by `_response_outcome` under the same rules (`llm.model_call.answer_text`). Each line's
shape is checked first, so a hostile file is one problem per line, never a traceback. Default
task key: `custom_id` (Batch), else a `task_id` field, else the line's position (`line`, from
0: `--task-key order:TASKS`). The import is `db.sources.responses.import_responses`.
"""

from pathlib import Path
from typing import Any

from sqlmodel import Session

from db.bundle.errors import Problem
from db.bundle.validate import read_jsonl
from db.sources.answers import Answer, Reader, cap
from db.sources.responses import ResponsesSummary, import_responses
from db.text_limits import model_name_problem
from llm.call import CallResult, server_text
from llm.model_call import answer_text, batch_outcome

_STREAMED = "save whole responses (\"stream\": false), not a stream's chunks"


def _is_count(v: Any) -> bool:
    return v is None or (isinstance(v, int) and not isinstance(v, bool) and v >= 0)


def _is_response_object(body: dict) -> bool:
    """A `/v1/responses` body (`object: "response"`, `output` items) rather than a chat
    completion (`choices`)."""
    return body.get("object") == "response" or ("output" in body and "choices" not in body)


def _model_problem(body: dict, at: str) -> str | None:
    if body.get("model") is not None and (why := model_name_problem(body["model"])):
        return f"{at}model is not a model name: {why}"
    return None


def _usage_problem(body: dict, at: str, names: tuple[str, str]) -> str | None:
    usage = body.get("usage")
    if usage is not None and (not isinstance(usage, dict)
                              or not all(_is_count(usage.get(k)) for k in names)):
        return f"{at}usage is not an object of token counts (integers >= 0)"
    return None


def _chat_problem(body: dict, at: str) -> str | None:
    """Why a chat completion body cannot be read, or None; `at` prefixes the field names."""
    if why := _model_problem(body, at) or _usage_problem(body, at, ("prompt_tokens",
                                                                   "completion_tokens")):
        return why
    choices = body.get("choices")
    if choices is not None and not isinstance(choices, list):
        return f"{at}choices is not a list"
    if choices:
        choice = choices[0]
        message = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(message, dict):
            return f"{at}choices[0].message is not an object"
        for name, v in (("message.content", message.get("content")),
                        ("message.refusal", message.get("refusal")),
                        ("finish_reason", choice.get("finish_reason"))):
            if v is not None and not isinstance(v, str):
                return f"{at}choices[0].{name} is not a string"
    return None


def _response_problem(body: dict, at: str) -> str | None:
    """Why a `/v1/responses` body cannot be read, or None."""
    if why := _model_problem(body, at) or _usage_problem(body, at, ("input_tokens",
                                                                   "output_tokens")):
        return why
    for name in ("status",):
        if body.get(name) is not None and not isinstance(body[name], str):
            return f"{at}{name} is not a string"
    for name in ("error", "incomplete_details"):
        if body.get(name) is not None and not isinstance(body[name], dict):
            return f"{at}{name} is not an object"
    output = body.get("output")
    if output is not None and not isinstance(output, list):
        return f"{at}output is not a list"
    for i, item in enumerate(output or []):
        if not isinstance(item, dict):
            return f"{at}output[{i}] is not an object"
        if item.get("type") != "message":
            continue  # reasoning, tool calls: no answer text
        if not isinstance(item.get("content"), list):
            return f"{at}output[{i}].content is not a list"
        for j, part in enumerate(item["content"]):
            kind = part.get("type") if isinstance(part, dict) else None
            field = {"output_text": "text", "refusal": "refusal"}.get(kind or "")
            if not isinstance(part, dict) or (field and not isinstance(part.get(field), str)):
                return f"{at}output[{i}].content[{j}] is not an output_text or refusal part"
    return None


def _body_problem(body: dict, at: str) -> str | None:
    return (_response_problem(body, at) if _is_response_object(body)
            else _chat_problem(body, at))


def _response_outcome(body: dict) -> tuple[str | None, str | None]:
    """(answer, None) or (None, why it is a failure) of a checked `/v1/responses` body: its
    message items' `output_text` parts joined (the SDK's `output_text`), a refusal part when
    there is no text; `status` "incomplete" for `max_output_tokens` is an answer cut at the
    token limit, as chat's `finish_reason` "length"."""
    status = body.get("status")
    if body.get("error") or status in ("failed", "cancelled", "queued", "in_progress"):
        error = body.get("error") or {}
        return None, (f"response {server_text(str(status), 20)}: "
                      f"{server_text(str(error.get('message') or error.get('code')), 200)}")
    if status == "incomplete":
        reason = (body.get("incomplete_details") or {}).get("reason")
        if reason != "max_output_tokens":
            return None, f"response incomplete: {server_text(str(reason), 60)}"
    parts = [p for item in body.get("output") or [] if item.get("type") == "message"
             for p in item["content"]]
    text = "".join(p["text"] for p in parts if p.get("type") == "output_text")
    refusal = next((p["refusal"] for p in parts if p.get("type") == "refusal"), None)
    return answer_text(text or None, "length" if status == "incomplete" else None, refusal)


def _read_body(body: dict, answer: Answer) -> None:
    """Fill `answer` (text or failure, model, usage) from a checked response body."""
    if _is_response_object(body):
        usage = body.get("usage") or {}
        answer.model = body.get("model")
        tokens = {"prompt_tokens": usage.get("input_tokens"),
                  "completion_tokens": usage.get("output_tokens")}
        answer.text, answer.failure = _response_outcome(body)
    else:
        result = CallResult(ok=False)
        verdict, detail = batch_outcome({"response": {"status_code": 200, "body": body}},
                                        result)
        answer.model = result.model_returned
        tokens = {"prompt_tokens": result.prompt_tokens,
                  "completion_tokens": result.completion_tokens}
        if verdict == "ok":
            answer.text = detail
        else:
            answer.failure = detail or verdict
    answer.usage = {k: v for k, v in tokens.items() if v} or None


def _error_text(what: str, error: Any) -> str:
    """`what` and an error as OpenAI writes it ({"code", "message"}), as an error body does
    ({"error": {...}}) or as vLLM's `run_batch` does (a string): "what CODE: message"."""
    if isinstance(error, dict) and isinstance(error.get("error"), dict):
        error = error["error"]
    if isinstance(error, dict):
        code, message = error.get("code"), error.get("message")
    else:
        code, message = None, error
    code = "" if code is None else " " + server_text(str(code), 60)
    return f"{what}{code}: {server_text(str(message), 200)}"


def _batch_problem(entry: Any) -> str | None:
    """Why a line is not a Batch API output line this reader can read, or None."""
    if not isinstance(entry, dict):
        return "is not a JSON object"
    if not isinstance(entry.get("custom_id"), str | int) or isinstance(entry.get("custom_id"), bool):
        return "has no custom_id (not a Batch API output line)"
    response, error = entry.get("response"), entry.get("error")
    if error is not None and not isinstance(error, dict | str):
        return "error is not an object"
    if response is None:
        return None if error is not None else "has neither response nor error"
    if not isinstance(response, dict):
        return "response is not an object"
    status, body = response.get("status_code"), response.get("body")
    if not isinstance(status, int) or isinstance(status, bool):
        return "response.status_code is not an integer"
    if body is not None and not isinstance(body, dict):
        return "response.body is not an object"
    if status != 200 or error:
        return None
    return _body_problem(body or {}, "response.body.")


def read_batch_output(path: Path, problems: list[Problem]) -> list[Answer]:
    """The answers (and failures) of a Batch API output file, one per line."""
    if not cap(path, problems):
        return []
    out = []
    for n, entry, why in read_jsonl(path, path.name, problems):
        if why or (why := _batch_problem(entry)):
            problems.append(Problem(path.name, n, why))
            continue
        answer = Answer(f"{path.name}:{n}", {"custom_id": entry["custom_id"]}, "custom_id")
        response = entry.get("response") or {}
        body = response.get("body") or {}
        if entry.get("error"):
            answer.failure = _error_text("batch line error", entry["error"])
        elif response.get("status_code") != 200:
            error = body.get("error") or {}
            message = error.get("message", "") if isinstance(error, dict) else error
            answer.failure = (f"HTTP {server_text(str(response.get('status_code')), 20)}: "
                              f"{server_text(str(message), 200)}")
        else:
            _read_body(body, answer)
        out.append(answer)
    return out


def _line_answer(path: Path, n: int, position: int, obj: dict) -> Answer:
    """An Answer keyed by the line's own fields (a `task_id` or `custom_id` a wrapper added,
    for `--task-key field:`) and its position `line` (from 0)."""
    default = next((k for k in ("task_id", "custom_id") if isinstance(obj.get(k), str)), "line")
    return Answer(f"{path.name}:{n}", {**obj, "line": position}, default, "line",
                  positional=default == "line")


def _lines(path: Path, problems: list[Problem], read: Any) -> list[Answer]:
    """`read(obj, answer)` (a problem text, or None having filled `answer`) on every line."""
    if not cap(path, problems):
        return []
    out = []
    for position, (n, obj, why) in enumerate(read_jsonl(path, path.name, problems)):
        if why or not isinstance(obj, dict):
            problems.append(Problem(path.name, n, why or "is not a JSON object"))
            continue
        answer = _line_answer(path, n, position, obj)
        if why := read(obj, answer):
            problems.append(Problem(path.name, n, why))
            continue
        out.append(answer)
    return out


def _read_completion(obj: dict, answer: Answer) -> str | None:
    if obj.get("object") == "chat.completion.chunk":
        return f"is a chat.completion.chunk: {_STREAMED}"
    if obj.get("object") == "error" or ("error" in obj and not {"choices", "output"} & set(obj)):
        answer.failure = _error_text("error", obj.get("error") or obj)
        return None
    if not _is_response_object(obj) and "choices" not in obj:
        return "is not a chat.completion (no choices) nor a response object (no output)"
    if why := _body_problem(obj, ""):
        return why
    _read_body(obj, answer)
    return None


def read_chat_completions(path: Path, problems: list[Problem]) -> list[Answer]:
    """Bare `chat.completion` (or `response`) bodies, one per line, as an OpenAI-compatible
    server returns them; an error body (`{"error": ...}`, vLLM's `{"object": "error"}`) is a
    failure."""
    return _lines(path, problems, _read_completion)


def _read_ollama(obj: dict, answer: Answer) -> str | None:
    if "error" in obj and "message" not in obj and "response" not in obj:
        answer.failure = f"ollama error: {server_text(str(obj['error']), 200)}"
        return None
    message = obj.get("message")
    content = message.get("content") if isinstance(message, dict) else obj.get("response")
    if "done" not in obj or not (isinstance(message, dict) or "response" in obj):
        return "is not an Ollama /api/chat response (needs message and done)"
    if obj["done"] is not True:
        return f"has done {obj['done']!r}, a streamed chunk: {_STREAMED}"
    if content is not None and not isinstance(content, str):
        return "message.content is not a string"
    if obj.get("done_reason") is not None and not isinstance(obj["done_reason"], str):
        return "done_reason is not a string"
    if why := _model_problem(obj, ""):
        return why
    if not all(_is_count(obj.get(k)) for k in ("prompt_eval_count", "eval_count")):
        return "prompt_eval_count or eval_count is not a token count (an integer >= 0)"
    answer.model = obj.get("model")
    answer.usage = {k: obj[o] for k, o in (("prompt_tokens", "prompt_eval_count"),
                                           ("completion_tokens", "eval_count")) if obj.get(o)} or None
    answer.text, answer.failure = answer_text(
        content, "length" if obj.get("done_reason") == "length" else None, None)
    return None


def read_ollama(path: Path, problems: list[Problem]) -> list[Answer]:
    """Ollama's `/api/chat` responses (`"stream": false`), one per line: `message.content` the
    answer (`thinking` not kept), `done_reason` "length" an answer cut at the token limit,
    `prompt_eval_count`/`eval_count` the tokens; `{"error": "..."}` a failure. A streamed
    chunk (`done` false) is refused: its text is a fragment. `/api/generate` lines
    (`response` for `message.content`) are read alike."""
    return _lines(path, problems, _read_ollama)


READERS: dict[str, Reader] = {"openai-batch": read_batch_output,
                              "chat-completions": read_chat_completions, "ollama": read_ollama}


def import_harness_responses(s: Session, path: Path, **kw: Any) -> ResponsesSummary:
    """`db.sources.responses.import_responses` with the model-server readers of this layer."""
    return import_responses(s, path, readers=READERS, **kw)
