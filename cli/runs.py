"""`nmb grade` and `nmb collect`: runs against an OpenAI-compatible server."""

import argparse
import math
import sys
from pathlib import Path

from cli.common import (
    JSON,
    adder,
    open_study,
    positive,
    print_json,
    progress_bar,
    sigterm_as_ctrl_c,
    warn_plain_http,
)
from errors import UserError, counted


def cmd_grade(args: argparse.Namespace) -> None:
    from grading.config import is_dated_snapshot, load_settings, store_config
    from grading.grader import grade, summary_dict
    from grading.runs import run_failures
    from llm.grader_request import check_base_url, check_destination
    from llm.plan import spent_text

    settings = load_settings(Path(args.config) if args.config else None, model=args.model,
                             base_url=args.base_url)
    check_base_url(settings.base_url)  # before the config is stored
    trusted = args.base_url or args.trust_base_url  # typed in this command
    if args.trust_base_url is not None and args.trust_base_url != settings.base_url:
        raise UserError(f"--trust-base-url {args.trust_base_url!r} is not the base URL requests "
                        f"would go to ({settings.base_url or 'the official API'!s})")
    check_destination(settings.base_url, trusted=trusted,
                      origin=f"the grader config {args.config}")
    warn_plain_http(settings.base_url)
    if not is_dated_snapshot(settings.model):
        print(f"nmb: warning: {settings.model!r} is an undated alias; reports flag it",
              file=sys.stderr)
    with open_study() as s, progress_bar("grading") as bar, sigterm_as_ctrl_c():
        config = store_config(s, settings, actor="cli")
        s.commit()

        def progress(done: int, total: int) -> None:
            if bar is not None:
                bar.total = total
                bar.update(done - bar.n)

        summary = grade(s, config_id=config.id, items=args.items,
                        concurrency=args.concurrency, limit=args.limit, batch=args.batch,
                        timeout=args.timeout, progress=progress, actor="cli",
                        trust_base_url=trusted)
    if args.json:
        print_json(summary_dict(summary))
    else:
        print(f"run {summary.run_id} (config {config.id}): {summary.graded} graded "
              f"({summary.from_cache} from cache), {summary.failed} failed of {summary.items}; "
              f"{summary.prompt_tokens}+{summary.completion_tokens} tokens, "
              f"{spent_text(summary.cost_usd)}")
    if summary.failed:
        with open_study() as s:
            reasons = [f.reason for f in run_failures(s, run_id=summary.run_id)]
        if not summary.graded:
            _nothing_done(f"run {summary.run_id} graded nothing", summary.failed, reasons)
        _some_failed(summary.run_id, summary.failed, summary.items, reasons)


def cmd_collect(args: argparse.Namespace) -> None:
    from collection.collect import Selection, collect
    from grading.config import is_dated_snapshot
    from llm.model_request import CollectSettings
    from llm.plan import spent_text

    condition = _condition(args)
    samples = 1 if args.samples is None else args.samples
    if condition is not None and condition.strategy == "self-consistency":
        samples = 1  # --samples is the votes per turn; one response per task
    settings = CollectSettings(model=args.model, base_url=args.base_url, samples=samples,
                               images=args.images, temperature=args.temperature,
                               max_tokens=args.max_tokens, condition=condition).check()
    if settings.base_url is None and not is_dated_snapshot(settings.model):
        print(f"nmb: warning: {settings.model!r} is an undated alias: the model behind it may "
              "change", file=sys.stderr)
    warn_plain_http(settings.base_url)
    selection = Selection(tuple(args.tasks or ()), tuple(args.families or ()),
                          tuple(args.levels or ()))
    with open_study() as s, progress_bar("collecting") as bar, sigterm_as_ctrl_c():
        def progress(done: int, total: int) -> None:
            if bar is not None:
                bar.total = total
                bar.update(done - bar.n)

        summary = collect(s, settings, selection, concurrency=args.concurrency,
                          batch=args.batch, timeout=args.timeout,
                          poll_interval=args.poll_interval, progress=progress, actor="cli")
    for f in summary.failures:
        print(f"nmb: failed: task {f['task_id']} sample {f['sample']}: {f['reason']}",
              file=sys.stderr)
    if not args.json:
        print(f"run {summary.run_id} ({summary.model}): {summary.collected} collected "
              f"({summary.from_cache} from cache), {summary.failed} failed of {summary.items}; "
              f"{summary.already_collected} collected before; {summary.prompt_tokens}+"
              f"{summary.completion_tokens} tokens, {counted(summary.image_count, 'image')}, "
              f"{spent_text(summary.cost_usd)}")
    print_json(summary.as_dict())
    if summary.failed:
        reasons = [f["reason"] for f in summary.failures]
        if not summary.collected:
            _nothing_done(f"run {summary.run_id} collected nothing", summary.failed, reasons)
        _some_failed(summary.run_id, summary.failed, summary.items, reasons)


def _condition(args: argparse.Namespace):
    """The condition of `nmb collect --condition` (llm.conditions), None without one."""
    from llm.conditions import SELF_CONSISTENCY_VOTES, Condition, read_system_prompt

    if args.condition is None:
        if args.strategy or args.system_prompt_file:
            raise UserError("--strategy and --system-prompt-file need --condition NAME (the "
                            "name the responses are shown under, as MODEL@NAME)")
        return None
    strategy = args.strategy or "zero-shot"
    votes = 1
    if strategy == "self-consistency":
        votes = SELF_CONSISTENCY_VOTES if args.samples is None else args.samples
    prompt = read_system_prompt(Path(args.system_prompt_file)) if args.system_prompt_file else None
    return Condition(args.condition, strategy, prompt, votes).check()


def _nothing_done(what: str, failed: int, reasons: list[str]) -> None:
    """A run that completed none of its items: its failures' reasons (each once, the most
    frequent first, with how many items it failed) in one line on stderr, then exit 1."""
    from llm.plan import reasons_text

    print(f"nmb: {what}: {failed} failed: {reasons_text(reasons)}", file=sys.stderr)
    raise SystemExit(1)


def _some_failed(run_id: int, failed: int, items: int, reasons: list[str]) -> None:
    """A run that completed some of its items (exit 0, as before): why the others failed,
    grouped as `_nothing_done` groups them, in one line on stderr."""
    from llm.plan import reasons_text

    print(f"nmb: run {run_id} partial: {failed} of {items} failed: {reasons_text(reasons)}",
          file=sys.stderr)



def register(sub: argparse._SubParsersAction) -> None:
    add = adder(sub)

    gp = add("grade", cmd_grade, "grade responses with the LLM grader (OpenAI-compatible API)")
    gp.add_argument("--config", help="grader config TOML (default: gpt-4o-2024-08-06, T=0)")
    gp.add_argument("--model", help="the grader model (overrides the config's)")
    gp.add_argument("--base-url", help="an OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1")
    gp.add_argument("--trust-base-url", metavar="URL",
                    help="send the API key and the study's data to the base URL that --config "
                    "names; the value must be that URL (docs/grader.md)")
    gp.add_argument("--items", choices=["pending", "calibration", "all", "stale"], default="pending",
                    help="pending: responses without a valid grade of this config; stale: "
                         "responses whose grade was made before a revision of their case or "
                         "task (nmb import --revise), graded again")
    gp.add_argument("--concurrency", type=positive(int, 1000), default=8,
                    help="requests out at once (at most 1000, the SDK's connection pool)")
    gp.add_argument("--limit", type=positive(int, math.inf), help="grade at most N responses")
    gp.add_argument("--timeout", type=positive(float, 86400), default=60.0,
                    help="seconds each request may take in all (connect, wait and read)")
    gp.add_argument("--batch", action="store_true", help="use the OpenAI Batch API")
    gp.add_argument("--json", action="store_true", help=JSON)

    co = add("collect", cmd_collect, "send the tasks to a model (OpenAI-compatible API) and "
             "store its answers as responses (docs/collect.md)")
    co.add_argument("--model", required=True, help="the model name sent and stored")
    co.add_argument("--base-url", help="an OpenAI-compatible server, e.g. "
                    "http://127.0.0.1:8000/v1 (default: the official OpenAI API)")
    co.add_argument("--samples", type=int, help="answers per task (pass@k; default 1); under "
                    "--strategy self-consistency the answers per turn a majority is taken of "
                    "(default 5)")
    co.add_argument("--condition", metavar="NAME", help="collect under a named condition: the "
                    "responses are shown as MODEL@NAME (docs/collect.md, Conditions)")
    co.add_argument("--strategy", choices=["zero-shot", "cot", "self-consistency"],
                    help="with --condition: zero-shot (default), cot (reason step by step, end "
                    "with a final answer), self-consistency (k cot answers, the majority's)")
    co.add_argument("--system-prompt-file", metavar="FILE", help="with --condition: text "
                    "appended verbatim to the exam's system message")
    pick = co.add_mutually_exclusive_group()
    pick.add_argument("--tasks", nargs="+", metavar="TASK_ID", help="only these tasks")
    pick.add_argument("--families", nargs="+", metavar="FAMILY",
                      help="differential, lesion, rationale")
    co.add_argument("--levels", nargs="+", type=int, metavar="LEVEL", help="1, 2, 3")
    co.add_argument("--images", choices=["key", "none"], default="key",
                    help="key: the cases' key slices as PNG images; none: text only")
    co.add_argument("--concurrency", type=int, default=4, help="items in flight at once")
    co.add_argument("--temperature", type=float, default=1.0, help="sampling temperature")
    co.add_argument("--max-tokens", type=int, default=2048, help="per answer")
    co.add_argument("--timeout", type=float, default=120.0,
                    help="seconds each request may take in all")
    co.add_argument("--batch", action="store_true", help="use the OpenAI Batch API (rounds of "
                    "batches: one per turn of the multi-turn tasks)")
    co.add_argument("--poll-interval", type=float, default=10.0, help="seconds between batch polls")
    co.add_argument("--json", action="store_true", help="print only the JSON summary")
