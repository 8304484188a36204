"""What answering and grading cost: tokens and images per response, USD per model and task, and
the grader's USD per graded response.

A response's usage is what its bundle gave (`usage`: prompt_tokens, completion_tokens, images,
cost_usd; docs/bundle-format.md) or, for a response `nmb collect` obtained, what its collection
recorded (tokens over its turns, the images shown, the cost). Its cost is `cost_usd` when
given, else the tokens priced by `llm/prices.toml` when the model is in that table,
else unknown (never 0). Means are over the responses where the value is known, and each row
says how many those are. A model's cost per task is its mean cost per response times its
responses per task (the samples drawn for pass@k each cost a response). The grader's cost per
graded response is the mean over its grades whose request was sent and priced (answers from the
cache cost nothing again).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable
from dataclasses import dataclass

from sqlmodel import Session, select

from db.models import CollectedResponse, GraderScore, Response
from llm.call import estimate_cost, load_prices
from stats.resample import Estimate

DIGITS = 6
IMAGE_TOKENS = 255  # per image: OpenAI vision, high detail, one 512 px tile (85 + 170): an estimate


def _mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), DIGITS) if values else None


@dataclass
class ModelCost:
    model: str
    responses: int
    tasks: int
    with_usage: int
    prompt_tokens: float | None  # mean per response
    completion_tokens: float | None
    images: float | None
    priced: int  # responses with a known cost
    cost_per_response: float | None
    cost_per_task: float | None


@dataclass
class GraderCost:
    config_id: int
    graded: int
    priced: int
    prompt_tokens: float | None  # mean per sent request
    completion_tokens: float | None
    cost_per_graded_response: float | None


def response_cost(model: str | None, usage: dict | None, prices: dict) -> float | None:
    """The response's cost: its own `cost_usd`, else its tokens at the price table's rates."""
    usage = usage or {}
    if usage.get("cost_usd") is not None:
        return float(usage["cost_usd"])
    if "prompt_tokens" in usage or "completion_tokens" in usage:
        return estimate_cost(model, usage.get("prompt_tokens", 0),
                             usage.get("completion_tokens", 0), prices)
    return None


def model_costs(s: Session, prices: dict | None = None,
                leave_out: Collection[str] = ()) -> list[ModelCost]:
    """One row per model that has responses, by name; the responses to the tasks `leave_out`
    (the practice tasks, db.study.practice) left out."""
    rows = [(model, task_id, usage or (collected.usage() if collected else None))
            for model, task_id, usage, collected in s.exec(
                select(Response.model, Response.task_id, Response.usage, CollectedResponse)
                .join(CollectedResponse, CollectedResponse.response_id == Response.response_id,
                      isouter=True)
                .where(Response.source == "model"))
            if task_id not in leave_out]
    return model_costs_of(rows, prices)


def model_costs_of(rows: Iterable[tuple[str, str, dict | None]],
                   prices: dict | None = None) -> list[ModelCost]:
    """`model_costs` of (model, task_id, usage) rows, one per model response (what `nmb export
    responses` holds)."""
    prices = load_prices() if prices is None else prices
    by_model: dict[str, list[tuple[str, dict | None]]] = defaultdict(list)
    for model, task_id, usage in rows:
        by_model[model].append((task_id, usage))
    out = []
    for model, rows_ in sorted(by_model.items()):
        usages = [u for _, u in rows_ if u]
        costs = [c for _, u in rows_ if (c := response_cost(model, u, prices)) is not None]
        tasks = len({t for t, _ in rows_})
        per_response = _mean(costs)
        out.append(ModelCost(
            model=model, responses=len(rows_), tasks=tasks, with_usage=len(usages),
            prompt_tokens=_mean([u["prompt_tokens"] for u in usages if "prompt_tokens" in u]),
            completion_tokens=_mean([u["completion_tokens"] for u in usages
                                     if "completion_tokens" in u]),
            images=_mean([u["images"] for u in usages if "images" in u]), priced=len(costs),
            cost_per_response=per_response,
            cost_per_task=None if per_response is None
            else round(per_response * len(rows_) / tasks, DIGITS)))
    return out


def grader_cost(s: Session, *, config_id: int) -> GraderCost:
    rows = s.exec(select(GraderScore.prompt_tokens, GraderScore.completion_tokens,
                         GraderScore.cost_usd).where(GraderScore.config_id == config_id)).all()
    return grader_cost_of(config_id, rows)


def grader_cost_of(config_id: int,
                   rows: Iterable[tuple[int, int, float | None]]) -> GraderCost:
    """`grader_cost` of (prompt_tokens, completion_tokens, cost_usd) rows, one per grade."""
    rows = list(rows)
    sent = [r for r in rows if r[2] is not None]
    return GraderCost(config_id=config_id, graded=len(rows), priced=len(sent),
                      prompt_tokens=_mean([p for p, _, _ in sent]),
                      completion_tokens=_mean([c for _, c, _ in sent]),
                      cost_per_graded_response=_mean([c for _, _, c in sent]))


@dataclass
class Efficiency:
    """One full run of a model (one answer to every task of the study) beside its pass@1, as
    the paper's efficiency table: means per response x tasks. Image tokens are estimated at
    `IMAGE_TOKENS` per image (a provider's count differs by model and detail); text tokens in
    are the prompt tokens less that estimate."""

    model: str
    tasks: int
    images: float | None
    image_tokens: float | None  # estimate
    text_tokens_in: float | None
    tokens_out: float | None
    cost_usd: float | None
    pass_at_1: Estimate | None
    with_usage: int  # responses the means stand on
    priced: int


def efficiency_rows(costs: Iterable[ModelCost], overall: Iterable, *, tasks: int
                    ) -> list[Efficiency]:
    """One `Efficiency` per model with responses (`costs`), its pass@1 from `overall` (the
    results' overall rows)."""
    pass1 = {c.who: c.pass_at.get(1) for c in overall if c.group == "model"}

    def run(per_response: float | None) -> float | None:
        return None if per_response is None else round(per_response * tasks, 2)

    out = []
    for m in costs:
        images = run(m.images)
        image_tokens = None if images is None else round(images * IMAGE_TOKENS, 2)
        prompt = run(m.prompt_tokens)
        text_in = (None if prompt is None else
                   round(max(prompt - (image_tokens or 0), 0.0), 2))
        out.append(Efficiency(m.model, tasks, images, image_tokens, text_in,
                              run(m.completion_tokens),
                              None if m.cost_per_response is None
                              else round(m.cost_per_response * tasks, 4),
                              pass1.get(m.model), m.with_usage, m.priced))
    return out
