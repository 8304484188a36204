"""Past grader runs as the history shows them, and how a run ended.

One rule names a run's outcome, for the run that just ended on the page and for the history:
a run that ended with failures and no grade failed, one with some failures is partial.
"""

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from sqlmodel import Session, select

from db.models import GraderConfig, GraderFailure, GraderRun
from grading.grader import config_label

Outcome = Literal["running", "interrupted", "failed", "partial", "finished"]


def outcome(status: str, graded: int, failed: int) -> Outcome:
    """"running" and "interrupted" as recorded; a run that ended is "failed" when items failed
    and none was graded (from the cache or not), "partial" when some failed, else "finished"."""
    if status in ("running", "interrupted"):
        return status  # type: ignore[return-value]
    if failed and not graded:
        return "failed"
    return "partial" if failed else "finished"


@dataclass(frozen=True)
class RunRow:
    """One run of the history."""

    run_id: int
    config: str  # `config_label`
    items: str  # which items it was asked to grade
    outcome: Outcome
    n_items: int
    graded: int
    failed: int
    from_cache: int
    tokens: int
    cost_usd: float | None  # None: unknown (an unpriced model)
    synthetic: bool
    started_at: datetime
    finished_at: datetime | None

    def row(self) -> dict:
        """The row as the page's table shows it (integers, cost in USD to 4 decimals)."""
        return {"run": self.run_id, "config": self.config, "items": self.items,
                "status": self.outcome, "to grade": self.n_items, "graded": self.graded,
                "failed": self.failed, "from cache": self.from_cache, "tokens": self.tokens,
                "cost (USD)": "unknown" if self.cost_usd is None else f"{self.cost_usd:.4f}",
                "synthetic": "yes" if self.synthetic else "",
                "started (UTC)": f"{self.started_at:%Y-%m-%d %H:%M:%S}",
                "finished (UTC)": "" if self.finished_at is None
                else f"{self.finished_at:%Y-%m-%d %H:%M:%S}"}


def history(s: Session, *, limit: int = 100) -> list[RunRow]:
    """The latest grader runs of every config, newest first."""
    rows = s.exec(select(GraderRun, GraderConfig)
                  .join(GraderConfig, GraderConfig.id == GraderRun.config_id)
                  .order_by(GraderRun.id.desc()).limit(limit)).all()
    return [RunRow(run.id, config_label(config), run.items,
                   outcome(run.status, run.graded, run.failed), run.n_items, run.graded,
                   run.failed, run.from_cache, run.prompt_tokens + run.completion_tokens,
                   run.cost_usd, run.synthetic, run.started_at, run.finished_at)
            for run, config in rows]


def run_failures(s: Session, *, run_id: int) -> list[GraderFailure]:
    """The failures a run left that still stand: a response failed again by a later run is
    that run's, and one graded since has none."""
    return list(s.exec(select(GraderFailure).where(GraderFailure.run_id == run_id)
                       .order_by(GraderFailure.response_id)))
