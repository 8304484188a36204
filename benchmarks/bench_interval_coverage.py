"""Coverage of the results' cell intervals (`stats.resample`, docs/results.md), by simulation.

Clustered binary data with case effects: a cell of C cases, each with 1-3 tasks (as the demo's
cells and cases share tasks), a task's chance of a correct answer expit(mu + u_case + v_task)
with u ~ N(0, 1) shared by the tasks of a case and v ~ N(0, 0.5^2). A model answers each task
`SAMPLES` times; a human group of `PEOPLE` people answers each task once, person effects
w ~ N(0, 0.5^2) added. The quantity estimated is the expected value of the cell's estimate
(the mean over tasks of the chance of a correct answer, over people for a human group),
computed once from a million draws. An interval covers when it holds it. Printed, never
asserted: coverage at 5, 12 and 40 cases for a share near 0.5, one near 0.9 and one near 0.97
(where the boundary weighs most), the share of
intervals entirely below and above, the median width, and that a one-case cell shows no
interval. Monte Carlo standard error of a coverage of 0.95 from 4,000 studies: about 0.35 points
(at 1,000, about 0.7: too coarse to tell a close call from 93 %).

The same cells, through the same variance v and degrees of freedom df the rule computed, are
then given the published alternatives, so that the rule's few-case behaviour is seen beside
theirs (none of them is in the product): Wilson at n* with the normal quantile (no df
correction), the t interval p +/- t_df sqrt(v), the t interval on the logit and on the angular
(arcsine square root, Anscombe 1948) scale, Clopper-
Pearson and Jeffreys at Korn & Graubard's df-adjusted n* (Korn & Graubard 1998; Dean & Pagano
2015), and, as a yardstick no study has, Wilson at the n* of the true variance (the variance of
the estimate over the simulated cells) with the normal quantile: what the rule could reach if
5 cases told the variance exactly. A second yardstick keeps the rule's estimated n* and gives it
the degrees of freedom its spread over the simulated cells shows (var log n* = trigamma(df/2), as
for a scaled chi-square): whether the t_{C-1} of a variance over-corrects because n* = p(1-p)/v,
whose parts shrink together near 0 and 1, is steadier than v.

`make bench` runs `criterion` (issue 45's coverage criterion, below); the comparison with the
published alternatives is `python -m benchmarks.bench_interval_coverage alternatives`.

Last, a bound no interval escapes: `least_coverage`, the least coverage an equal-tailed interval
can have on these cells if its lower bound never exceeds the exact binomial one of the cell's
answers taken as independent. Near a boundary, with few cases, an estimate cannot lie far
enough above the truth for such a bound to exclude it, so the upper side cannot spend its
2.5 %; where this bound exceeds 97 %, issue 26's band is out of reach of every such interval.
"""

import math
import os

import numpy as np
from scipy import optimize, special
from scipy import stats as sps
from scipy.special import expit

import stats.resample as resample
from stats.intervals import CONFIDENCE, NO_SPREAD, share_interval, wilson
from stats.resample import TOO_FEW, group_mean, over_cases

STUDIES, SAMPLES, PEOPLE = 4000, 5, 6
CASES = (5, 12, 40)
SHARES = {"near 0.5": 0.0, "near 0.9": 2.6, "near 0.97": 4.2}  # mu
SD_CASE, SD_TASK, SD_PERSON = 1.0, 0.5, 0.5


def truth(mu: float, people: bool) -> float:
    rng = np.random.default_rng(99)
    n = 1_000_000
    eta = mu + SD_CASE * rng.standard_normal(n) + SD_TASK * rng.standard_normal(n)
    if people:
        eta += SD_PERSON * rng.standard_normal(n)
    return float(expit(eta).mean())


def _design(rng: np.random.Generator, cases: int, mu: float) -> tuple[np.ndarray, np.ndarray]:
    """Each task's case and its log-odds."""
    per_case = rng.integers(1, 4, size=cases)
    case = np.repeat(np.arange(cases), per_case)
    eta = mu + SD_CASE * rng.standard_normal(cases)[case] + SD_TASK * rng.standard_normal(case.size)
    return case, eta


def _answers(rng: np.random.Generator, cases: int, mu: float,
             people: bool) -> tuple[np.ndarray, np.ndarray]:
    """Each task's case, and the answers: tasks x samples for a model, people x tasks for a
    human group."""
    case, eta = _design(rng, cases, mu)
    if not people:
        return case, rng.random((case.size, SAMPLES)) < expit(eta)[:, None]
    eta = eta[None, :] + SD_PERSON * rng.standard_normal((PEOPLE, 1))
    return case, rng.random(eta.shape) < expit(eta)


def model_cell(rng: np.random.Generator, cases: int, mu: float):
    case, correct = _answers(rng, cases, mu, people=False)
    return over_cases(correct.mean(axis=1), case, answers=correct.ravel(),
                      seed=int(rng.integers(1 << 30)))


def human_cell(rng: np.random.Generator, cases: int, mu: float):
    case, correct = _answers(rng, cases, mu, people=True)
    person = np.repeat(np.arange(PEOPLE), case.size).astype(str)
    task = np.tile(np.arange(case.size), PEOPLE).astype(str)
    return group_mean(list(task), correct.ravel().astype(float), list(person),
                      cases=list(np.tile(case, PEOPLE)), seed=int(rng.integers(1 << 30)))


Z = float(special.ndtri(0.5 + CONFIDENCE / 2))
LOW, HIGH = 0.93, 0.97  # issue 26's band


def _n_star(p: float, v: float, df: float, answers: int | None = None) -> float:
    """Korn & Graubard's df-adjusted effective sample size, as in `share_interval` (at most
    `answers`, before the df adjustment, where given)."""
    spread = 0 < p < 1 and v > NO_SPREAD
    t = sps.t.ppf(0.5 + CONFIDENCE / 2, df)
    n = p * (1 - p) / v if spread else df + 1
    return (n if answers is None else min(n, answers)) * (Z / t) ** 2


def _wilson_z(p: float, v: float, df: float) -> list[float]:
    spread = 0 < p < 1 and v > NO_SPREAD
    return wilson(p, p * (1 - p) / v if spread else df + 1, Z)


def _t(p: float, v: float, df: float) -> list[float]:
    half = sps.t.ppf(0.5 + CONFIDENCE / 2, df) * math.sqrt(v)
    return [max(0.0, p - half), min(1.0, p + half)]


def _logit_t(p: float, v: float, df: float) -> list[float]:
    if not (0 < p < 1 and v > NO_SPREAD):
        return share_interval(p, v, df)
    half = sps.t.ppf(0.5 + CONFIDENCE / 2, df) * math.sqrt(v) / (p * (1 - p))
    return [float(expit(special.logit(p) - half)), float(expit(special.logit(p) + half))]


def _arcsine_t(p: float, v: float, df: float) -> list[float]:
    """The t interval on the angular scale asin(sqrt(p)), variance v / (4 p (1 - p))."""
    if not (0 < p < 1 and v > NO_SPREAD):
        return share_interval(p, v, df)
    angle = math.asin(math.sqrt(p))
    half = sps.t.ppf(0.5 + CONFIDENCE / 2, df) * math.sqrt(v / (4 * p * (1 - p)))
    return [math.sin(max(0.0, angle - half)) ** 2, math.sin(min(math.pi / 2, angle + half)) ** 2]


def _beta(p: float, v: float, df: float, prior: float,
          answers: int | None = None) -> list[float]:
    """Clopper-Pearson (prior 0) or Jeffreys (prior 0.5) at the df-adjusted n*."""
    n = _n_star(p, v, df, answers)
    x, a = p * n, (1 - CONFIDENCE) / 2
    lo = sps.beta.ppf(a, x + prior, n - x + 1 - prior) if x > 0 else 0.0
    hi = sps.beta.ppf(1 - a, x + 1 - prior, n - x + prior) if x < n else 1.0
    return [float(lo), float(hi)]


def least_coverage(cases: int, mu: float, people: bool, target: float,
                   draws: int = 20_000) -> float:
    """The least coverage that an equal-tailed interval (each side missing at most
    (1 - CONFIDENCE) / 2 of the time) can have on these cells if its lower bound is never above
    the exact (Clopper-Pearson) lower bound of the cell's answers taken as independent: answers
    that share a case carry no more information than independent ones. It is 1 - (1 -
    CONFIDENCE) / 2 - P(that exact lower bound > target); above 97 %, no such interval covers
    within the band."""
    rng = np.random.default_rng(7)
    tail = (1 - CONFIDENCE) / 2
    above = 0
    for _ in range(draws):
        correct = _answers(rng, cases, mu, people)[1]
        x, n = int(correct.sum()), correct.size
        above += x > 0 and sps.beta.ppf(tail, x, n - x + 1) > target
    return 1 - tail - above / draws


def n_star_df(seen: np.ndarray) -> float:
    """The degrees of freedom of a scaled chi-square with the variance of log n* over the
    cells that saw spread: the solution of trigamma(df / 2) = var(log n*)."""
    p, v, _ = seen.T
    spread = (0 < p) & (p < 1) & (v > NO_SPREAD)
    log_n = np.log(p[spread] * (1 - p[spread]) / v[spread])
    return optimize.brentq(lambda k: special.polygamma(1, k / 2) - log_n.var(), 0.01, 1e6)


ALTERNATIVES = {
    "Wilson, normal quantile": _wilson_z,
    "t interval": _t,
    "t interval, logit scale": _logit_t,
    "t interval, arcsine scale": _arcsine_t,
    "Clopper-Pearson (Korn-Graubard)": lambda p, v, df: _beta(p, v, df, 0.0),
    "Jeffreys (Korn-Graubard)": lambda p, v, df: _beta(p, v, df, 0.5),
}


def simulate(cell, cases: int, mu: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(the rule's intervals, each cell's (estimate, v, df)) for `STUDIES` cells, the v and df
    read where the product passes them to `share_interval`."""
    seen: list[tuple[float, float, float]] = []

    def recorded(p: float, v: float, df: float, **kw) -> list[float]:
        seen.append((p, v, df))
        return share_interval(p, v, df, **kw)

    rng = np.random.default_rng(seed)
    resample.share_interval, kept = recorded, resample.share_interval
    try:
        cis = np.array([cell(rng, cases, mu).ci for _ in range(STUDIES)])
    finally:
        resample.share_interval = kept
    return cis, np.array(seen)


def missed(cis: np.ndarray, target: float) -> str:
    """How often the intervals lie entirely below and entirely above `target`."""
    lo, hi = np.asarray(cis).T
    return f"interval below {np.mean(hi < target):.3f}, above {np.mean(lo > target):.3f}"


def covers(cis: np.ndarray, target: float) -> float:
    lo, hi = np.asarray(cis).T
    return float(np.mean((lo <= target) & (target <= hi)))


def alternatives() -> None:
    """Issue 26's comparison of the rule with the published alternatives (docs/methods.md):
    `python -m benchmarks.bench_interval_coverage alternatives` (4,000 cells per line)."""
    se = math.sqrt(0.95 * 0.05 / STUDIES)
    print(f"{STUDIES} simulated cells per line, 2,000 case resamples each; Monte Carlo SE of a "
          f"coverage ~ {se:.3f}")
    columns: list[str] = []
    table: dict[str, list[float]] = {
        name: [] for name in ("the rule", *ALTERNATIVES, "yardstick", "the rule at n*'s df")}
    least: list[float] = []
    for who, cell in (("model (5 samples per task)", model_cell),
                      (f"human group ({PEOPLE} people)", human_cell)):
        for label, mu in SHARES.items():
            target = truth(mu, cell is human_cell)
            for cases in CASES:
                cis, seen = simulate(cell, cases, mu, seed=cases)
                lo, hi = cis.T
                print(f"{who}, share {label} ({target:.3f}), {cases:2d} cases: coverage "
                      f"{covers(cis, target):.3f} ({missed(cis, target)}), median width "
                      f"{np.median(hi - lo):.3f}")
                columns.append(f"{who.split()[0]} {label.split()[-1]} {cases}")
                table["the rule"].append(covers(cis, target))
                for name, interval in ALTERNATIVES.items():
                    table[name].append(covers([interval(*row) for row in seen], target))
                n_true = target * (1 - target) / seen[:, 0].var()
                yardstick = [wilson(p, n_true, Z) for p in seen[:, 0]]
                table["yardstick"].append(covers(yardstick, target))
                df_n = n_star_df(seen)
                table["the rule at n*'s df"].append(covers(
                    [share_interval(p, v, df_n) if 0 < p < 1 and v > NO_SPREAD
                     else share_interval(p, v, df) for p, v, df in seen], target))
                least.append(least_coverage(cases, mu, cell is human_cell, target))
                print(f"    degrees of freedom: the rule's median {np.median(seen[:, 2]):.1f}, "
                      f"n*'s spread {df_n:.1f}; yardstick {covers(yardstick, target):.3f} "
                      f"({missed(yardstick, target)}); least equal-tailed {least[-1]:.3f}")
    print(f"\nThe same cells, other intervals from the same v and df (coverage; cells in "
          f"{LOW:.0%}-{HIGH:.0%}):")
    print(f"{'':32s}" + "".join(f"{c:>14s}" for c in columns))
    for name, row in table.items():
        inside = sum(LOW <= c <= HIGH for c in row)
        print(f"{name:32s}" + "".join(f"{c:14.3f}" for c in row) + f"   {inside}/{len(row)}")
    print(f"{'least, equal-tailed (bound)':32s}" + "".join(f"{c:14.3f}" for c in least)
          + f"   {sum(c > HIGH for c in least)}/{len(least)} above {HIGH:.0%}")
    one = over_cases([1.0, 0.0, 1.0], ["case-1"] * 3)
    print(f"one-case cell (3 tasks of one case): value {one.value}, interval {one.ci}, "
          f"shown as {one.note!r}" + ("" if one.note == TOO_FEW else " (UNEXPECTED)"))


# ------------------------------------------------------------------ issue 45's criterion

CRITERION_STUDIES = int(os.environ.get("NMB_BENCH_STUDIES", "600"))
TARGET_SHARES = (0.03, 0.1, 0.5, 0.9, 0.97)


def mu_for(share: float, people: bool) -> float:
    """The mean log-odds whose cells' expected share is `share` (200,000 draws, seeded)."""
    rng = np.random.default_rng(98)
    noise = SD_CASE * rng.standard_normal(200_000) + SD_TASK * rng.standard_normal(200_000)
    if people:
        noise += SD_PERSON * rng.standard_normal(200_000)
    return optimize.brentq(lambda m: expit(m + noise).mean() - share, -12, 12)


def criterion_cell(cell, share: float, cases: int, studies: int, seed: int) -> dict:
    """One line of `criterion`: `studies` simulated cells of `cell` (model_cell or human_cell)
    at expected share `share` on `cases` cases, from generator `seed`. Returns the rule's
    misses above and below the truth and coverage, its mean width over that of Korn & Graubard's
    Clopper-Pearson from the same v and df (`kg`: n* not truncated; `kg_truncated`: n* at most
    the number of answers, as Korn & Graubard 1998 do), and the same figures for the rule
    without the truncation (`untruncated`), from the same cells."""
    people = cell is human_cell
    mu = mu_for(share, people)
    target = truth(mu, people)
    seen: list[tuple] = []

    def recorded(p, v, df, *, cases=None, srs_variance=None, confidence=CONFIDENCE,
                 _seen=seen):
        _seen.append((p, v, df, cases, None if not srs_variance
                      else round(p * (1 - p) / srs_variance)))
        return share_interval(p, v, df, cases=cases, srs_variance=srs_variance,
                              confidence=confidence)

    rng = np.random.default_rng(seed)
    resample.share_interval, kept = recorded, resample.share_interval
    try:
        cis = np.array([cell(rng, cases, mu).ci for _ in range(studies)])
    finally:
        resample.share_interval = kept
    plain = np.array([[round(q, 4) for q in share_interval(p, v, df, cases=c)]
                      for p, v, df, c, _ in seen])
    kg = np.array([_beta(p, v, df, 0.0) for p, v, df, _, _ in seen])
    kg_t = np.array([_beta(p, v, df, 0.0, n) for p, v, df, _, n in seen])

    def figures(intervals: np.ndarray) -> dict:
        lo, hi = intervals.T
        above, below = float(np.mean(lo > target)), float(np.mean(hi < target))
        width = float(np.mean(hi - lo))
        return {"above": above, "below": below, "coverage": 1 - above - below, "width": width,
                "kg": width / float(np.mean(kg[:, 1] - kg[:, 0])),
                "kg_truncated": width / float(np.mean(kg_t[:, 1] - kg_t[:, 0]))}

    return {"target": target, **figures(cis), "untruncated": figures(plain)}


def criterion() -> None:
    """Issue 45's coverage criterion for the result cells: each tail misses at most 2.5 % plus
    two Monte Carlo SEs, two-sided coverage at least 93 %, and a mean width at most 5 % above
    the cluster-adjusted Clopper-Pearson interval of Korn & Graubard (1998) from the same v and
    df (`_beta` with prior 0: n* = p(1-p)/v shrunk by (z/t_df)^2; where no spread was seen, as
    many trials as cases), at 5, 12 and 40 cases and shares 0.03 to 0.97, for models and human
    groups. The width is held against the Korn-Graubard interval without the truncation of n*
    at the number of answers (the wider of the two yardsticks' demands); the rule without that
    truncation, on the same cells, is printed beside it."""
    tail = (1 - CONFIDENCE) / 2
    mcse = math.sqrt(tail * (1 - tail) / CRITERION_STUDIES)
    limit = tail + 2 * mcse

    def met(f: dict) -> bool:
        return (f["above"] <= limit and f["below"] <= limit and f["coverage"] >= 0.93
                and f["kg"] <= 1.05)

    print(f"{CRITERION_STUDIES} simulated cells per line; a tail may miss at most "
          f"{tail:.3f} + 2 x {mcse:.4f} = {limit:.3f}; two-sided >= 0.930; width <= 1.05 x "
          "Korn-Graubard")
    held = held_before = total = 0
    for who, cell in (("model", model_cell), (f"human group ({PEOPLE})", human_cell)):
        for share in TARGET_SHARES:
            for cases in CASES:
                f = criterion_cell(cell, share, cases, CRITERION_STUDIES,
                                   1000 * cases + int(share * 100))
                b = f["untruncated"]
                held, held_before, total = held + met(f), held_before + met(b), total + 1
                print(f"{who:18s} share {f['target']:.3f} {cases:2d} cases: coverage "
                      f"{f['coverage']:.3f}, misses above {f['above']:.3f} below "
                      f"{f['below']:.3f}; mean width {f['width']:.3f} = {f['kg']:.2f} x "
                      f"Korn-Graubard ({f['kg_truncated']:.2f} x truncated)"
                      f"{'' if met(f) else '   criterion NOT met'}\n"
                      f"{'':18s}   without truncating n*: coverage {b['coverage']:.3f}, misses "
                      f"above {b['above']:.3f} below {b['below']:.3f}; {b['kg']:.2f} x KG"
                      f"{'' if met(b) else '   criterion NOT met'}")
    print(f"the criterion holds in {held} of {total} cells ({held_before} without truncating "
          "n* at the number of answers)")


def main() -> None:
    criterion()


if __name__ == "__main__":
    import sys

    alternatives() if sys.argv[1:] == ["alternatives"] else main()
