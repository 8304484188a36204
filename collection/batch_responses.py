"""OpenAI Batch API output files as responses (`nmb import-responses FILE --from openai-batch`).

Each line of a Batch output file (`{"custom_id", "response": {"status_code", "body"}, "error"}`)
is read by the reader `nmb collect --batch` uses (`llm.model_call.batch_outcome`):
an HTTP 200 line with a usable answer becomes a response (its `body.model` the model unless
`--model` is given, its `usage` tokens kept); an error line, a non-200 status or an unusable
answer (empty, cut at the token limit) becomes a collection failure, not a response. The
line's shape is checked first, so a hostile file is one problem per line, never a traceback.
Default task key: `custom_id`. The import itself is `db.sources.responses.import_responses`.
"""

from pathlib import Path
from typing import Any

from sqlmodel import Session

from db.bundle.errors import Problem
from db.bundle.validate import read_jsonl
from db.sources.responses import Answer, ResponsesSummary, _cap, import_responses
from db.text_limits import model_name_problem
from llm.call import CallResult
from llm.model_call import batch_outcome


def _is_count(v: Any) -> bool:
    return v is None or (isinstance(v, int) and not isinstance(v, bool) and v >= 0)


def _shape_problem(entry: Any) -> str | None:
    """Why a line is not a Batch API output line this reader can read, or None."""
    if not isinstance(entry, dict):
        return "is not a JSON object"
    if not isinstance(entry.get("custom_id"), str | int) or isinstance(entry.get("custom_id"), bool):
        return "has no custom_id (not a Batch API output line)"
    response, error = entry.get("response"), entry.get("error")
    if error is not None and not isinstance(error, dict):
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
    if status != 200:
        return None
    body = body or {}
    if body.get("model") is not None and model_name_problem(body["model"]) is not None:
        return f"response.body.model is not a model name: {model_name_problem(body['model'])}"
    usage = body.get("usage")
    if usage is not None and (not isinstance(usage, dict) or not all(
            _is_count(usage.get(k)) for k in ("prompt_tokens", "completion_tokens"))):
        return "response.body.usage is not an object of token counts (integers >= 0)"
    choices = body.get("choices")
    if choices is not None and not isinstance(choices, list):
        return "response.body.choices is not a list"
    if choices:
        choice = choices[0]
        message = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(message, dict):
            return "response.body.choices[0].message is not an object"
        for name, v in (("message.content", message.get("content")),
                        ("message.refusal", message.get("refusal")),
                        ("finish_reason", choice.get("finish_reason"))):
            if v is not None and not isinstance(v, str):
                return f"response.body.choices[0].{name} is not a string"
    return None


def read_batch_output(path: Path, problems: list[Problem]) -> list[Answer]:
    """The answers (and failures) of a Batch API output file, one per line."""
    if not _cap(path, problems):
        return []
    out = []
    for n, entry, why in read_jsonl(path, path.name, problems):
        if why or (why := _shape_problem(entry)):
            problems.append(Problem(path.name, n, why))
            continue
        result = CallResult(ok=False)
        verdict, detail = batch_outcome(entry, result)
        usage = {k: v for k, v in (("prompt_tokens", result.prompt_tokens),
                                   ("completion_tokens", result.completion_tokens)) if v}
        answer = Answer(f"{path.name}:{n}", {"custom_id": entry["custom_id"]}, "custom_id",
                        model=result.model_returned, usage=usage or None)
        if verdict == "ok":
            answer.text = detail
        else:
            answer.failure = detail or verdict
        out.append(answer)
    return out


def import_harness_responses(s: Session, path: Path, **kw: Any) -> ResponsesSummary:
    """`db.sources.responses.import_responses` with the Batch output reader of this layer."""
    return import_responses(s, path, readers={"openai-batch": read_batch_output}, **kw)
