"""What a run would send, before running: the one plan type of grader runs and collection runs
(`grading.grader.estimate`, `collection.collect.estimate`) and its one sentence, shown by
/calibrate and /models. Token counts and cost are estimates and say so; `spent_text`, what a
finished run spent."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


def spent_text(cost_usd: float | None) -> str:
    """What a finished run spent, in words: "unknown cost" where a price was unknown."""
    return "unknown cost" if cost_usd is None else f"${cost_usd:.4f}"


@dataclass(frozen=True)
class Plan:
    """`items` the run would complete; `cached` of them answered from the grader's cache
    (grader runs); `tasks`, `requests` and `images` sent (collection runs). `cost_usd` is None
    where the model's price is unknown."""

    run: Literal["grade", "collect"]
    items: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None
    cached: int = 0
    tasks: int = 0
    requests: int = 0
    images: int = 0

    def cost_text(self) -> str:
        return "unknown price" if self.cost_usd is None else f"≈ ${self.cost_usd:.2f}"

    def sentence(self) -> str:
        """The plan in one sentence (Markdown: the item count in bold)."""
        if self.run == "grade":
            what = f"**{self.items}** items to grade ({self.cached} answered from the cache)"
        else:
            what = (f"**{self.items}** answers to collect over {self.tasks} tasks: "
                    f"{self.requests} requests, {self.images} images")
        return f"{what}, ≈ {self.prompt_tokens:,} prompt tokens, {self.cost_text()} (estimate)."
