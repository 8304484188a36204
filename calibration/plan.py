"""The sample-size planner: the chance that a grader passes the gate's r check, by simulation
under the registered interval and rule, for held-out parts of given sizes, before anything is
scored.

A simulated study draws `cases` cases of `items_per_case` items. The grader's score x and the
experts' mean y of an item are standard bivariate normal with correlation `expected_r`, made
of a case part (weight `within_case`) shared by the items of a case and an item part:
(x, y) = sqrt(w) (a_c, b_c) + sqrt(1 - w) (u_i, v_i), both pairs with correlation rho, so the
items of a case correlate w with each other and every item's x and y correlate rho. Each study
is then judged as a report judges it: the interval of r (`Statistics.pearson_ci`, resampling
whole cases, at the protocol's per-look level) and the gate's rule (`Gate.rule`). The pass
probability is the share of `studies` simulated studies that pass, with its Monte Carlo
standard error sqrt(p (1 - p) / studies) (Morris, White & Crowther 2019, Stat Med
38:2074-2102). Only the r check is simulated: ICC and the Alt-Test depend on the experts'
number, bias and scale as well, which a planner cannot know beforehand.

Vectorised: every study's resampled moment sums come from one batched matrix product (per
block of studies), and the intervals are formed for all studies at once, with the formulas of
`stats.correlation` (`_r_and_se`, the studentized interval on Fisher's z, BCa).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy import special

from calibration.protocol import LOWER_BOUND, interval_level
from errors import UserError
from stats.correlation import _moment_products, _r_and_se, _r_from_sums

DEFAULT_CASES = (10, 20, 30, 40, 60, 90, 120)
DEFAULT_STUDIES = 400
_BLOCK = 3_000_000  # weights per block of studies (~24 MB)


@dataclass(frozen=True)
class Settings:
    """What is simulated: the gate (threshold, rule, interval, level) and the simulation."""

    expected_r: float
    threshold: float = 0.90
    rule: str = LOWER_BOUND
    pearson_ci: str = "studentized_z"
    level: float = 0.95
    bootstrap: int = 2000
    within_case: float = 0.0
    studies: int = DEFAULT_STUDIES
    seed: int = 0


@dataclass(frozen=True)
class Chance:
    """The chance of passing with `cases` x `items_per_case` held-out items."""

    cases: int
    items_per_case: int
    items: int
    pass_probability: float
    mc_se: float


@dataclass
class Plan:
    settings: Settings
    target: float
    rows: list[Chance]
    smallest: Chance | None  # the fewest cases reaching `target`, None if none tried did
    notes: list[str] = field(default_factory=list)


def check_settings(st: Settings, items_per_case: int) -> None:
    """Refuse values outside their meaningful range (one line naming the value)."""
    if not (math.isfinite(st.expected_r) and -1 < st.expected_r < 1):
        raise UserError(f"--expected-r must be in (-1, 1), got {st.expected_r!r}")
    if not (math.isfinite(st.threshold) and 0 <= st.threshold < 1):
        raise UserError(f"--threshold must be in [0, 1), got {st.threshold!r}")
    if not (math.isfinite(st.within_case) and 0 <= st.within_case < 1):
        raise UserError(f"--within-case must be in [0, 1), got {st.within_case!r}")
    if not 1 <= items_per_case <= 100:
        raise UserError(f"--items-per-case must be 1 to 100, got {items_per_case}")
    if not 50 <= st.studies <= 100_000:
        raise UserError(f"--studies must be 50 to 100000, got {st.studies}")
    if st.pearson_ci != "fisher" and not 200 <= st.bootstrap <= 100_000:
        raise UserError(f"bootstrap must be 200 to 100000 resamples, got {st.bootstrap}")


def _studies(st: Settings, cases: int, per_case: int,
             rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(S, G, 6) moment sums of each case and (S, G, 21) their products, for S studies."""
    rho, w = st.expected_r, st.within_case
    shape = (st.studies, cases)

    def pairs(size: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        a, b = rng.standard_normal(size), rng.standard_normal(size)
        return a, rho * a + math.sqrt(1 - rho * rho) * b

    ca, cb = pairs(shape)
    ua, ub = pairs((*shape, per_case))
    x = math.sqrt(w) * ca[..., None] + math.sqrt(1 - w) * ua
    y = math.sqrt(w) * cb[..., None] + math.sqrt(1 - w) * ub
    units = np.stack([np.full_like(x, 1.0), x, y, x * x, x * y, y * y], axis=-1).sum(axis=2)
    return units, _moment_products(units)


def _weights(n_studies: int, resamples: int, cases: int, rng: np.random.Generator) -> np.ndarray:
    """(S, B, G) case counts: each resample draws `cases` cases with replacement."""
    rows = n_studies * resamples
    draws = rng.integers(0, cases, size=(rows, cases)) + (np.arange(rows) * cases)[:, None]
    counts = np.bincount(draws.ravel(), minlength=rows * cases).astype(float)
    return counts.reshape(n_studies, resamples, cases)


def _quantile_rows(values: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Per row, the q-th quantile of the row's finite values, interpolated as np.quantile's
    default does; NaN where q is NaN or the row has no finite value."""
    v = np.sort(np.where(np.isfinite(values), values, np.inf), axis=1)
    n = np.isfinite(v).sum(axis=1)
    pos = np.where(np.isfinite(q) & (n > 0), q * (n - 1), 0.0)
    lo = np.floor(pos).astype(int)
    hi = np.minimum(lo + 1, np.maximum(n - 1, 0))
    a = np.take_along_axis(v, lo[:, None], 1)[:, 0]
    b = np.take_along_axis(v, hi[:, None], 1)[:, 0]
    with np.errstate(invalid="ignore"):
        out = np.where(hi > lo, a + (pos - lo) * (b - a), a)
    return np.where(np.isfinite(q) & (n > 0), out, np.nan)


def lower_bounds(units: np.ndarray, products: np.ndarray, st: Settings,
                 rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(r, the lower bound of its interval) of every study, as `stats.correlation.pearson`
    computes them with whole cases resampled."""
    total = units.sum(axis=1)
    r, se = _r_and_se(total, products.sum(axis=1))
    n_items = total[:, 0]
    tail = (1 - st.level) / 2
    if st.pearson_ci == "fisher":
        h = special.ndtri(1 - tail) / np.sqrt(np.maximum(n_items - 3, 1e-12))
        return r, np.where(n_items > 3, np.tanh(np.arctanh(r) - h), np.nan)
    n_studies, cases = units.shape[:2]
    block = max(1, _BLOCK // (st.bootstrap * cases))
    lower = np.empty(n_studies)
    cols = np.concatenate([units, products], axis=2)  # (S, G, 27)
    for start in range(0, n_studies, block):
        part = slice(start, min(start + block, n_studies))
        w = _weights(part.stop - part.start, st.bootstrap, cases, rng)
        sums = np.einsum("sbg,sgk->sbk", w, cols[part])  # (s, B, 27); beats matmul here
        if st.pearson_ci == "bca":
            lower[part] = _bca_lower(r[part], sums[..., :6], units[part], total[part], tail)
        else:
            lower[part] = _studentized_lower(r[part], se[part], *_r_and_se(
                sums[..., :6], sums[..., 6:]), tail)
    return r, lower


def _studentized_lower(r: np.ndarray, se: np.ndarray, rb: np.ndarray, se_b: np.ndarray,
                       tail: float) -> np.ndarray:
    """`stats.correlation._studentized_z_interval`'s lower bound, for each row."""
    with np.errstate(invalid="ignore", divide="ignore"):
        z, se_z = np.arctanh(r), se / (1 - r * r)
        t = (np.arctanh(rb) - z[:, None]) / (se_b / (1 - rb * rb))
    finite = np.isfinite(t).sum(axis=1)
    t_hi = _quantile_rows(t, np.full(len(r), 1 - tail))
    out = np.tanh(z - t_hi * se_z)
    out = np.where((finite >= rb.shape[1] / 2) & (se > 0), out, np.nan)
    return np.where(np.abs(r) >= 1, r, out)


def _bca_lower(r: np.ndarray, sums: np.ndarray, units: np.ndarray, total: np.ndarray,
               tail: float) -> np.ndarray:
    """`stats.correlation._bca_interval`'s lower bound, for each row."""
    rb = _r_from_sums(sums)
    ok = np.isfinite(rb)
    rb_valid = np.where(ok, rb, np.nan)
    count = ok.sum(axis=1)
    below = np.nansum(rb_valid < r[:, None], axis=1) + 0.5 * np.nansum(rb_valid == r[:, None],
                                                                       axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        z0 = special.ndtri(below / count)
        jack = _r_from_sums(total[:, None, :] - units)  # leave one case out: (S, G)
        dev = np.nanmean(jack, axis=1, keepdims=True) - jack
        denom = 6 * np.nansum(dev ** 2, axis=1) ** 1.5
        a = np.where(denom > 0, np.nansum(dev ** 3, axis=1) / denom, 0.0)
        zq = special.ndtri(tail)
        q = special.ndtr(z0 + (z0 + zq) / (1 - a * (z0 + zq)))
    return np.where(np.isfinite(z0), _quantile_rows(rb, q), np.nan)


def pass_probability(st: Settings, *, cases: int, items_per_case: int = 1) -> Chance:
    """The share of `st.studies` simulated studies of `cases` x `items_per_case` items whose
    r check passes under `st` (seeded: the same settings give the same answer)."""
    check_settings(st, items_per_case)
    if cases < 3:
        raise UserError(f"--cases must be at least 3, got {cases}")
    rng = np.random.default_rng([st.seed, cases, items_per_case])
    units, products = _studies(st, cases, items_per_case, rng)
    r, lower = lower_bounds(units, products, st, rng)
    decided = r if st.rule != LOWER_BOUND else lower
    p = float(np.mean(np.nan_to_num(decided, nan=-np.inf) >= st.threshold))
    return Chance(cases, items_per_case, cases * items_per_case, p,
                  math.sqrt(p * (1 - p) / st.studies))


def plan(st: Settings, *, items_per_case: int = 1, cases: tuple[int, ...] | None = None,
         target: float = 0.8) -> Plan:
    """The chance of passing for each number of `cases` (default `DEFAULT_CASES`), and the
    fewest cases reaching `target`: the first size tried that reaches it, narrowed by
    bisection against the size tried before it (the chance grows with the cases when
    `expected_r` is above the threshold)."""
    if not 0 < target < 1:
        raise UserError(f"--power must be in (0, 1), got {target!r}")
    sizes = sorted(set(cases or DEFAULT_CASES))
    if sizes[0] < 3 or sizes[-1] > 2000:
        raise UserError(f"--cases must be 3 to 2000, got {', '.join(map(str, sizes))}")
    rows = [pass_probability(st, cases=n, items_per_case=items_per_case) for n in sizes]
    notes = []
    if st.expected_r <= st.threshold:
        notes.append(f"expected r {st.expected_r:g} is not above the threshold "
                     f"{st.threshold:g}: more cases make passing less likely, not more")
    first = next((i for i, c in enumerate(rows) if c.pass_probability >= target), None)
    if first is None:
        return Plan(st, target, rows, None, notes + [
            f"no size tried reaches {target:.0%}; try more cases (--cases)"])
    best = rows[first]
    lo = rows[first - 1].cases if first > 0 else None
    if lo is not None and cases is None:  # narrow down between the two sizes tried
        hi = best.cases
        while hi - lo > 1:
            mid = (lo + hi) // 2
            c = pass_probability(st, cases=mid, items_per_case=items_per_case)
            if c.pass_probability >= target:
                hi, best = mid, c
            else:
                lo = mid
    return Plan(st, target, rows, best, notes)


def settings_for(protocol_gate, statistics, *, expected_r: float, threshold: float | None = None,
                 within_case: float = 0.0, studies: int = DEFAULT_STUDIES,
                 seed: int = 0) -> Settings:
    """The planner's settings under a protocol's gate and statistics (registered or not)."""
    return Settings(expected_r=expected_r,
                    threshold=protocol_gate.pearson_min if threshold is None else threshold,
                    rule=protocol_gate.rule, pearson_ci=statistics.pearson_ci,
                    level=interval_level(statistics.confidence, protocol_gate.looks),
                    bootstrap=statistics.bootstrap, within_case=within_case, studies=studies,
                    seed=seed)
