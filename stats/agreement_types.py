"""The typed results of the agreement statistics (`stats.correlation`, `stats.icc`,
`stats.chance_agreement`, `stats.bland_altman`, `stats.alt_test`): frozen dataclasses whose
fields are JSON-ready (Python floats, NaN as None, intervals as [low, high] lists).

`to_dict()` gives the JSON shape calibration reports have always been stored in (reports of
earlier versions are read back as those dicts), so a field is named as its key there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

import numpy as np

Interval = list[float | None]  # [low, high]; a bound that cannot be formed is None


def plain_float(x: object) -> float | None:
    """A JSON-safe float: numpy scalars to float, NaN and infinities to None."""
    if x is None:
        return None
    v = float(x)  # type: ignore[arg-type]
    return v if math.isfinite(v) else None


def plain(obj: object) -> object:
    """Recursively turn results into their dicts, numpy scalars/arrays into Python
    floats/lists, NaN into None."""
    if isinstance(obj, Result):
        return obj.to_dict()
    if isinstance(obj, dict):
        return {str(k): plain(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [plain(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return [plain(v) for v in obj.tolist()]
    if isinstance(obj, bool | np.bool_):
        return bool(obj)
    if isinstance(obj, int | np.integer):
        return int(obj)
    if isinstance(obj, float | np.floating):
        return plain_float(obj)
    return obj


def interval(pair: object) -> Interval:
    """A (low, high) pair as a JSON-ready list, NaN bounds as None."""
    return [plain_float(v) for v in pair]  # type: ignore[attr-defined]


class Result:
    """A statistic's result; `to_dict()` is its stored JSON shape (fields in order)."""

    def to_dict(self) -> dict:
        return {f.name: plain(getattr(self, f.name)) for f in fields(self)}  # type: ignore[arg-type]


@dataclass(frozen=True)
class Pearson(Result):
    """Pearson's r with its Fisher-z and bootstrap intervals; `units`: the cases (else items)
    the bootstrap interval stands on, `warning` when they are too few."""

    r: float | None
    n: int
    ci95_fisher: Interval
    ci95_bootstrap: Interval
    units: int
    warning: str | None

    def interval(self) -> Interval:
        """The bootstrap interval of r where one was computed, else Fisher's z interval."""
        return r_interval(self.ci95_bootstrap, self.ci95_fisher)


def r_interval(bootstrap: Interval | None, fisher: Interval | None) -> Interval | None:
    """The bootstrap interval of r where one was computed, else Fisher's z interval (also for
    a stored report, whose Pearson is a dict)."""
    return bootstrap if bootstrap and None not in bootstrap else fisher


@dataclass(frozen=True)
class Spearman(Result):
    rho: float | None
    p: float | None
    n: int


@dataclass(frozen=True)
class Kendall(Result):
    tau_b: float | None
    p: float | None
    n: int


@dataclass(frozen=True)
class ICCForm(Result):
    """One intraclass correlation with its interval and F test."""

    icc: float | None
    ci95: Interval | None
    F: float | None  # the F statistic, named as it is stored
    df1: int
    df2: int
    p: float | None


@dataclass(frozen=True)
class ICC(Result):
    """The six forms of Shrout & Fleiss (1979), None where undefined (`reasons` says why)."""

    n_items: int
    n_raters: int
    left_out: list[str]
    notes: list[str]
    reasons: dict[str, str]
    icc1: ICCForm | None = None
    icc2: ICCForm | None = None
    icc3: ICCForm | None = None
    icc1k: ICCForm | None = None
    icc2k: ICCForm | None = None
    icc3k: ICCForm | None = None
    dropped: int = 0  # items dropped listwise (a rating missing)

    def form(self, name: str) -> ICCForm | None:
        """The form named as in `stats.icc.ICC_FORMS` ("ICC2", ...)."""
        return getattr(self, name.lower())

    def to_dict(self) -> dict:
        forms = {name: plain(getattr(self, name.lower())) for name in
                 ("ICC1", "ICC2", "ICC3", "ICC1k", "ICC2k", "ICC3k")}
        return {"n_items": self.n_items, "n_raters": self.n_raters,
                "left_out": list(self.left_out), "notes": list(self.notes), **forms,
                "reasons": dict(self.reasons), "dropped": self.dropped}


@dataclass(frozen=True)
class GraderICC(Result):
    """ICC(2,1) of the grader against the experts' mean (two columns), the gate's ICC: `ci95`
    is its case-clustered interval (delete-one-case jackknife on Fisher's z, t with G - 1 df,
    `stats.icc.icc_grader_vs_mean`), `ci95_f` McGraw & Wong's F interval, which treats
    items as independent. `dropped`: items dropped listwise (no grade, or no expert score);
    `units`: the cases (else items) of the clustered interval, `unit` their kind."""

    icc: float | None
    ci95: Interval | None
    ci95_f: Interval | None
    n_items: int
    dropped: int
    units: int
    unit: str
    warning: str | None = None
    reason: str | None = None


@dataclass(frozen=True)
class Alpha(Result):
    """Krippendorff's alpha at each computed level of measurement (`levels`)."""

    levels: tuple[str, ...]
    reasons: dict[str, str]
    interval: float | None = None
    ordinal: float | None = None
    nominal: float | None = None

    def to_dict(self) -> dict:
        return {**{level: getattr(self, level) for level in self.levels},
                "reasons": dict(self.reasons)}


@dataclass(frozen=True)
class BlandAltman(Result):
    """Bias, SD and limits of agreement; the intervals are None from fewer than 2 items."""

    n: int
    bias: float | None
    sd: float | None
    loa: Interval
    bias_ci95: Interval | None = None
    loa_lower_ci95: Interval | None = None
    loa_upper_ci95: Interval | None = None
    units: int | None = None  # with clusters: the cases the intervals stand on
    unit: str | None = None  # "case" (jackknife over cases) or None (items independent)
    warning: str | None = None

    def to_dict(self) -> dict:
        return {k: v for k, v in super().to_dict().items()
                if v is not None or k in ("bias", "sd")}


@dataclass(frozen=True)
class Absolute(Result):
    """Mean absolute error, exact and within-one agreement of rubric codes."""

    mae: float | None
    exact: float | None
    within_one: float | None
    n: int


@dataclass(frozen=True)
class Confusion(Result):
    tp: int
    fp: int
    fn: int
    tn: int
    precision: float | None
    recall: float | None
    f1: float | None


@dataclass(frozen=True)
class AltExpert(Result):
    """One expert's leave-one-out test of the alt-test, or `skipped` with too few items."""

    expert: int
    n_items: int
    skipped: bool = False
    rho_f: float | None = None
    rho_h: float | None = None
    p: float | None = None
    llm_wins: bool | None = None

    def to_dict(self) -> dict:
        if self.skipped:
            return {"expert": self.expert, "n_items": self.n_items, "skipped": True}
        return {"expert": self.expert, "n_items": self.n_items, "rho_f": self.rho_f,
                "rho_h": self.rho_h, "p": self.p, "llm_wins": self.llm_wins}


@dataclass(frozen=True)
class AltTest(Result):
    """The Alternative Annotator Test's verdict and each expert's test."""

    epsilon: float
    q: float
    scoring: str
    winning_rate: float | None
    advantage_probability: float | None
    passed: bool
    experts: list[AltExpert]
    winning_rate_ci95: Interval | None = None  # percentile, cases resampled
    advantage_probability_ci95: Interval | None = None  # jackknife over cases
    units: int | None = None  # the cases (else items) the tests and intervals stand on
    unit: str | None = None  # "case" or "item"
    warning: str | None = None


@dataclass(frozen=True)
class AltSensitivity(Result):
    """The Alt-Test's verdict at one epsilon (the margin's sensitivity)."""

    epsilon: float
    winning_rate: float | None
    passed: bool
