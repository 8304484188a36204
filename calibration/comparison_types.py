"""The typed results of the comparisons a calibration report is assembled from
(`calibration.comparison`): frozen dataclasses over the statistics of `stats.agreement_types`.

`to_dict()` gives the JSON shape reports are stored in (`Report.overall`, `criteria`,
`error_tags`); stored reports, of this version or earlier ones, are read back as those dicts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from stats.agreement_types import (
    ICC,
    Alpha,
    AltSensitivity,
    AltTest,
    BlandAltman,
    Confusion,
    GraderICC,
    Interval,
    Kendall,
    Pearson,
    Result,
    Spearman,
)


@dataclass(frozen=True)
class Versus(Result):
    """One rater against the per-item mean of other raters (`calibration.comparison.versus`);
    `reasons` says why each None statistic is None."""

    n_items: int
    pearson: Pearson
    spearman: Spearman
    kendall: Kendall
    bland_altman: BlandAltman
    mae: float | None
    exact: float | None
    within_one: float | None
    weighted_kappa: float | None
    weighted_kappa_linear: float | None
    reasons: dict[str, str]


# The measures the human ceiling averages over its rows, by their name in the stored report.
CEILING_MEASURES: dict[str, Callable[[Versus], float | None]] = {
    "pearson.r": lambda v: v.pearson.r,
    "spearman.rho": lambda v: v.spearman.rho,
    "kendall.tau_b": lambda v: v.kendall.tau_b,
    "weighted_kappa": lambda v: v.weighted_kappa,
    "weighted_kappa_linear": lambda v: v.weighted_kappa_linear,
    "mae": lambda v: v.mae,
    "exact": lambda v: v.exact,
    "within_one": lambda v: v.within_one,
    "bland_altman.bias": lambda v: v.bland_altman.bias,
}


@dataclass(frozen=True)
class CeilingRow(Result):
    """One expert against the other experts, and the grader against the same experts."""

    expert: int
    expert_vs_others: Versus
    grader_vs_others: Versus


@dataclass(frozen=True)
class Ceiling(Result):
    """The human ceiling; the means are keyed by `CEILING_MEASURES`."""

    per_expert: list[CeilingRow]
    experts_mean: dict[str, float | None]
    grader_mean: dict[str, float | None]
    grader_vs_all: dict[str, float | None]


@dataclass(frozen=True)
class Resampling(Result):
    """How the bootstrap intervals were drawn."""

    resamples: int
    seed: int
    unit: str  # the clustering unit: "case" (whole cases resampled) or "item"
    interval: str
    confidence: float


@dataclass(frozen=True)
class Comparison(Versus):
    """Everything a calibration report holds for one numeric criterion: the grader against the
    experts' mean (the fields of `Versus`), the gate's ICC(2,1) of the grader against the
    experts' mean with its case-clustered interval (`icc_vs_mean`), ICC and Krippendorff's
    alpha with and without the grader (all raters as columns, items dropped listwise), the human
    ceiling and the alt-test with its sensitivity to epsilon (None with fewer than two
    experts)."""

    n_experts: int
    icc_vs_mean: GraderICC
    icc: ICC
    icc_experts: ICC
    krippendorff_alpha: Alpha
    krippendorff_alpha_experts: Alpha
    ceiling: Ceiling | None
    alt_test: AltTest | None
    bootstrap: Resampling
    alt_test_sensitivity: list[AltSensitivity] | None = None

    def to_dict(self) -> dict:
        d = super().to_dict()
        return {"n_items": d.pop("n_items"), "n_experts": d.pop("n_experts"), **d}


@dataclass(frozen=True)
class TagIntervals(Result):
    """Percentile intervals of the grader's kappa, AC1 and F1 on one error class."""

    kappa: Interval | None
    ac1: Interval | None
    f1: Interval | None
    units: int | None = None  # the cases (else items) resampled
    warning: str | None = None  # fewer than `stats.resample.MIN_R_CASES` cases


@dataclass(frozen=True)
class TagStats(Result):
    """Binary agreement on one error class: Cohen's kappa, Gwet's AC1, the confusion table."""

    kappa: float | None
    ac1: float | None
    confusion: Confusion
    ci95: TagIntervals | None = None

    def to_dict(self) -> dict:
        d = {"kappa": self.kappa, "ac1": self.ac1, **self.confusion.to_dict()}
        return d if self.ci95 is None else {**d, "ci95": self.ci95.to_dict()}


@dataclass(frozen=True)
class ExpertTags(Result):
    """One expert against the majority of the other experts."""

    expert: int
    stats: TagStats

    def to_dict(self) -> dict:
        return {"expert": self.expert, **self.stats.to_dict()}


@dataclass(frozen=True)
class TagMeans(Result):
    """The experts' mean kappa, AC1 and F1 against each other (the ceiling)."""

    kappa: float | None
    ac1: float | None
    f1: float | None

    @classmethod
    def of(cls, rows: list[TagStats]) -> TagMeans:
        def mean(values: list[float | None]) -> float | None:
            vals = [v for v in values if v is not None]
            return float(np.mean(vals)) if vals else None

        return cls(mean([r.kappa for r in rows]), mean([r.ac1 for r in rows]),
                   mean([r.confusion.f1 for r in rows]))


@dataclass(frozen=True)
class TagClass(Result):
    """One error class: the grader against the experts' majority, the experts' ceiling, and
    the class's reliability (Krippendorff's nominal alpha)."""

    prevalence: float | None
    alpha_experts: float | None
    alpha_with_grader: float | None
    grader: TagStats
    ceiling: list[ExpertTags]
    ceiling_mean: TagMeans | None


@dataclass(frozen=True)
class TagComparison(Result):
    n_items: int
    n_experts: int
    classes: dict[str, TagClass]
