"""What a run would send, before running: the one plan type of grader runs and collection runs
(`grading.grader.estimate`, `collection.collect.estimate`) and its one sentence, shown by
/calibrate and /models. Token counts and cost are estimates and say so; `spent_text`, what a
finished run spent; `reasons_text`, why its items failed."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from errors import one_line

#: What a failure's reason ends with that differs between items failed the same way.
_ATTEMPTS = re.compile(r" \((?:gave up after \d+ attempts|after \d+ answer\(s\)|turn \d+)\)")


def spent_text(cost_usd: float | None) -> str:
    """What a finished run spent, in words: "unknown cost" where a price was unknown."""
    return "unknown cost" if cost_usd is None else f"${cost_usd:.4f}"


def reasons_text(reasons: Iterable[str], shown: int = 3) -> str:
    """Why a run's items failed, on one line: each reason once, the most frequent first, with
    how many items it failed ("HTTP 500: ... (2 items); timeout"), the `shown` most frequent
    and how many others. The attempt count or turn a reason ends with ("(gave up after 3
    attempts)", "(after 2 answer(s))", "(turn 2)") is left out, so items that failed the same
    way count together."""
    counts = Counter(one_line(_ATTEMPTS.sub("", r), 300) for r in reasons).most_common()
    why = "; ".join(f"{reason} ({n} items)" if n > 1 else reason for reason, n in counts[:shown])
    more = f"; and {len(counts) - shown} other reasons" if len(counts) > shown else ""
    return f"{why or 'no reason recorded'}{more}"


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
