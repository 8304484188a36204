"""`grade_responses`: new models' responses graded with a package alone (the grader's exact
requests built from it), and their summary, like the study's results. A package is untrusted
input: requests go to the official API (or the user's OPENAI_BASE_URL), or to `--base-url`
given on the command line, never to an address the package names.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, get_args

from calibration.terms import TERMS_NOT_RECORDED
from db.bundle.records import over_limit
from db.models import (
    Case,
    ResponseSource,
    Task,
)
from db.text_limits import model_name_problem
from errors import UserError, one_line, read_at_most
from llm.call import CallResult, load_prices, run_bounded
from llm.grader_request import (
    Answered,
    GradeItem,
    api_key_for,
    grade_request,
    grader_call,
    make_client,
)
from llm.model_request import image_parts
from package.format import MAX_RETURNED, RETURNED, Answer, Package, T, quoted
from package.progress import Progress
from results.bertscore import final_answer, reference_text
from results.judgments import grade_judgment
from results.leaderboard import summarize
from rubric.render import Asked, parse_grader_output

# ---------------------------------------------------------------- grade and canary


def read_responses(path: Path, *, max_bytes: int = 256 * 2**20) -> list[Answer]:
    """Responses to grade from JSONL: `response_id`, `task_id`, `text` (str), optional `turns`
    (list of str, the later stages' answers), `model` (str, copied to the output) and, for an
    exam taker's answer, `source` (their role: physician or student) and `user` (the person);
    other fields are ignored, so `nmb export responses --format jsonl` is valid input."""
    try:
        if (data := read_at_most(path, max_bytes)) is None:
            raise UserError(f"{path}: larger than {max_bytes} bytes")
        lines = data.decode("utf-8").splitlines()
    except OSError as exc:
        raise UserError(f"cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise UserError(f"{path}: not UTF-8 text") from None
    from llm.http_client import MAX_JSON_VALUES as MAX_LINE_VALUES
    from llm.http_client import json_values

    responses, seen = [], set()
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        if json_values(line.encode()) > MAX_LINE_VALUES:  # before parsing: it could be millions
            raise UserError(f"{path} line {n}: more than {MAX_LINE_VALUES:,} JSON values (a "
                            "response holds a few dozen)")
        try:
            row = json.loads(line)
        except (ValueError, RecursionError):
            raise UserError(f"{path} line {n}: not JSON") from None
        if not isinstance(row, dict):
            raise UserError(f"{path} line {n}: expected a JSON object")
        for key in ("response_id", "task_id", "text"):
            if not isinstance(row.get(key), str) or not row[key]:
                raise UserError(f"{path} line {n}: {key!r} must be non-empty text")
        turns = row.get("turns") or []  # absent or null: a one-stage answer
        if not isinstance(turns, list) or not all(isinstance(x, str) for x in turns):
            raise UserError(f"{path} line {n}: 'turns' must be a list of text")
        for name, value in (("text", row["text"]), ("turns", turns)):  # as the study stores
            if why := over_limit(name, value):
                raise UserError(f"{path} line {n}: {why}")
        model, source, user = row.get("model"), row.get("source") or "model", row.get("user")
        if model is not None and (why := model_name_problem(model)):
            raise UserError(f"{path} line {n}: model {quoted(model)} {why}")
        if source not in get_args(ResponseSource):
            raise UserError(f"{path} line {n}: source {one_line(repr(source), 60)} is not one "
                            f"of {', '.join(get_args(ResponseSource))}")
        if source != "model" and (model is not None or not isinstance(user, str) or not user
                                  or model_name_problem(user)):
            raise UserError(f"{path} line {n}: a {source}'s answer names no model and names "
                            "its person in 'user' (as nmb export responses writes it)")
        if row["response_id"] in seen:
            raise UserError(f"{path} line {n}: response_id {quoted(row['response_id'])} "
                            "repeated")
        seen.add(row["response_id"])
        responses.append(Answer(row["response_id"], row["task_id"], row["text"], turns, model,
                                source, user if source != "model" else None))
    return responses


def canary_answer(item: dict[str, Any]) -> Answer:
    return Answer(item["response_id"], item["task_id"], item["text"], item["turns"] or [])


def _packaged_task(pkg: Package, response: Answered) -> tuple[Task, Case]:
    if response.task_id not in pkg.tasks:
        raise UserError(f"response {quoted(response.response_id)}: task "
                        f"{quoted(response.task_id)} is not in the package")
    return pkg.tasks[response.task_id]


def check_tasks(pkg: Package, responses: list[Answer]) -> None:
    """UserError naming the first response whose task the package does not hold."""
    for answer in responses:
        _packaged_task(pkg, answer)


def request_for(pkg: Package, response: Answered) -> GradeItem:
    """The grader's exact request for `response`, from the package alone."""
    task, case = _packaged_task(pkg, response)
    images = image_parts(pkg.images[case.case_id]) if pkg.config.vision else None
    return grade_request(pkg.config, pkg.rubric, task, case, response, images=images)


def send(pkg: Package, answers: list[Answer], finish: Callable[[Answer, GradeItem, CallResult], T],
          *, base_url: str | None, api_key: str | None, concurrency: int, timeout: float,
          on_done: Callable[[Answer, T], Any] | None = None) -> list[T]:
    """`finish(answer, request, result)` for each answer, in their order, once its request was
    sent (no cache: a canary must reach the model); `on_done(answer, finished)` as each ends.
    Requests are built as they go out, so that `concurrency` of them are held at once, never
    one per answer (a vision request carries its images). `base_url` comes from the user,
    never from the package: without it the client uses the official API (or the user's
    OPENAI_BASE_URL)."""
    if concurrency < 1:
        raise UserError(f"--concurrency must be at least 1, got {concurrency}")
    if not (math.isfinite(timeout) and timeout > 0):
        raise UserError(f"--timeout must be a positive number of seconds, got {timeout}")
    check_tasks(pkg, answers)  # every mistake before anything is paid for
    if not answers:
        return []
    key = api_key_for(base_url, api_key, trusted=base_url)

    async def run() -> list[T]:
        one = grader_call(make_client(base_url, key, timeout), pkg.rubric, timeout=timeout,
                          prices=load_prices())

        async def worker(answer: Answer) -> T:
            item = request_for(pkg, answer)
            return finish(answer, item, await one(item))

        return await run_bounded(answers, worker, concurrency, on_done=on_done)

    return asyncio.run(run())


def _row(answer: Answer, extra: tuple[str, ...], result: CallResult) -> dict[str, Any]:
    """A response's output row: its score and what was asked beyond it, or the reason it
    failed."""
    return {"response_id": answer.response_id, "task_id": answer.task_id, "model": answer.model,
            **({"source": answer.source, "user": answer.user} if answer.user else {}),
            "ok": result.ok,
            **(result.data.fields(extra) if result.ok else {"reason": result.reason}),
            "model_returned": result.model_returned,
            "system_fingerprint": result.system_fingerprint, "cost_usd": result.cost_usd}


def grade_responses(pkg: Package, responses: list[Answer], *, base_url: str | None = None,
                    api_key: str | None = None, concurrency: int = 8, timeout: float = 60.0,
                    graded: dict[str, dict] | None = None, progress: Progress | None = None,
                    on_row: Callable[[Answer, dict], Any] | None = None) -> list[dict]:
    """One row per response, in their order: the frozen grader's score, or the reason it
    failed. Responses with a row in `graded` (by response id: `kept_rows`) are not sent again;
    each new grade is kept in `progress` as it comes back, and `on_row(answer, row)` called."""
    graded = graded or {}
    fresh = [r for r in responses if r.response_id not in graded]

    def done(answer: Answer, finished: tuple[dict, CallResult]) -> None:
        row, result = finished
        if progress is not None and result.ok:
            progress.keep(answer.response_id, answer.key, {
                "grade": result.raw, **{k: row[k] for k in RETURNED}})
        if on_row is not None:
            on_row(answer, row)

    rows = send(pkg, fresh, lambda a, item, res: (_row(a, item.asked.extra, res), res),
                 base_url=base_url, api_key=api_key, concurrency=concurrency, timeout=timeout,
                 on_done=done)
    graded = {**graded, **{r.response_id: row for r, (row, _) in zip(fresh, rows, strict=True)}}
    return [graded[r.response_id] for r in responses]


def kept_rows(pkg: Package, responses: list[Answer], progress: Progress) -> dict[str, dict]:
    """The rows to reuse from a progress file (`package.progress`): those of a response still
    to grade and unchanged since (`Answer.key`), each rebuilt from the grader's answer as it
    was sent back, checked again as a live answer is. UserError naming the response for a line
    that does not pass."""
    from llm.http_client import MAX_JSON_VALUES as MAX_ANSWER_VALUES  # lazy: verify needs
    from llm.http_client import json_values  # no HTTP client

    rows = {}
    for answer in responses:
        line = progress.kept.get(answer.response_id)
        if line is None or line["answer"] != answer.key:
            continue
        task, _ = _packaged_task(pkg, answer)
        asked = Asked.of(pkg.config.prompt_version, task.family, len(task.stages or []))
        returned = {k: line.get(k) for k in RETURNED}
        try:
            grade, raw = None, line.get("grade")
            if isinstance(raw, str) and json_values(raw.encode()) <= MAX_ANSWER_VALUES:
                grade = parse_grader_output(pkg.rubric, json.loads(raw), task.family, asked)
            if grade is None or not _returned_ok(returned):
                raise ValueError("not a grader's answer as it came back")
        except (ValueError, RecursionError) as e:
            raise UserError(f"{progress.path}: response {quoted(answer.response_id)}: "
                            f"{one_line(str(e), 200)}; remove the file to grade everything "
                            "again") from None
        rows[answer.response_id] = _row(answer, asked.extra, CallResult(True, grade, **returned))
    return rows


def _returned_ok(returned: dict[str, Any]) -> bool:
    """Whether what the server said of a kept answer (model name, fingerprint, cost) is of the
    types a live answer's is."""
    cost = returned["cost_usd"]
    names = (returned["model_returned"], returned["system_fingerprint"])
    return (all(v is None or (isinstance(v, str) and len(v) <= MAX_RETURNED) for v in names)
            and (cost is None or (type(cost) in (int, float) and math.isfinite(cost)
                                  and cost >= 0)))


def bertscore_pairs(pkg: Package, responses: list[Answer]) -> dict[str, tuple[str, str]]:
    """(final answer, reference answer) per response, as `results.bertscore` scores them."""
    return {r.response_id: (final_answer(r.text, r.turns),
                            reference_text(pkg.tasks[r.task_id][1].ground_truth))
            for r in responses}


def summary(pkg: Package, rows: list[dict], *, ks: tuple[int, ...] = (1,),
            bertscore: dict[str, float] | None = None) -> dict[str, Any]:
    """What `nmb package grade` reports besides its rows: per model and human group (exam
    takers' answers by their role, each person counted as in the study), overall and per
    family x level cell, the study's own `summarize` (pass@k with intervals, the mean rubric score with
    its interval, error classes among wrong responses; BERTScore F1 per response id, when
    given, as a secondary column)."""
    judged = []
    for r in rows:
        if r["ok"]:
            task, _ = pkg.tasks[r["task_id"]]
            asked = Asked.of(pkg.config.prompt_version, task.family, len(task.stages or []))
            human = r.get("user") is not None
            judged.append(grade_judgment(
                who=r["source"] if human else r["model"] or "unnamed model",
                is_model=not human, person=r.get("user"), task=task,
                correct=r["correct_diagnosis"], overall=r["overall"], error_tags=r["error_tags"],
                asked=asked, rank=r.get("diagnosis_rank"), stages=r.get("stages"),
                response_id=r["response_id"]))
    return {"package_sha256": pkg.sha256, **pkg.terms_json(), "graded": len(judged),
            "failed": sum(not r["ok"] for r in rows),
            "overall": summarize(judged, ks=ks, bertscore=bertscore),
            "by_family_level": summarize(judged, ks=ks, by=("family", "level"),
                                         bertscore=bertscore)}


def summary_markdown(data: dict[str, Any]) -> str:
    """The summary as Markdown tables (model names escaped: they come from the input file)."""
    def cell(v: Any) -> str:
        if isinstance(v, float):
            return f"{v:.3f}"
        if isinstance(v, list):
            return "[" + ", ".join(cell(x) for x in v) + "]"
        if isinstance(v, dict):
            return ", ".join(f"{k} {cell(x)}" for k, x in v.items()) or "–"
        text = "–" if v is None else str(v)
        return re.sub(r"([\\`*_\[\]<>|#!])", r"\\\1", text)  # no links, images, HTML

    out = [f"Package sha256 {data['package_sha256']}: {data['graded']} graded, "
           f"{data['failed']} failed.", "",
           f"Grader validated under {cell(data.get('validation_terms') or TERMS_NOT_RECORDED)}.",
           ""]
    if b := data.get("bertscore"):
        out[-1:] = [f"{b['label']}: model {cell(b['model'])} (key {b['model_key'][:12]}, layer "
                    f"{b['layer']}, {'rescaled' if b['rescaled'] else 'not rescaled'}).", ""]
    for title, rows in (("Overall", data["overall"]), ("By family x level", data["by_family_level"])):
        out.append(f"### {title}")
        if not rows:
            out += ["(no graded responses)", ""]
            continue
        keys = [k for k in rows[0] if k != "group" or any(r["group"] != "model" for r in rows)]
        out += ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
        out += ["| " + " | ".join(cell(r[k]) for k in keys) + " |" for r in rows]
        out.append("")
    return "\n".join(out)
