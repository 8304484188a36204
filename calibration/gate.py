"""The gate's verdict: the checks of a registered protocol's gate (`calibration.protocol.Gate`)
on a calibration report's statistics, and whether the config passes (every required check).

The decision rule is the protocol's. "lower_bound" (the default): Pearson r and ICC(2,1) (the
grader against the experts' mean) pass when the lower bound of their case-clustered interval
(at the protocol's per-look level) is at or above the threshold, a one-sided test of
H0: rho < threshold at (1 - level) / 2 (the confidence-interval form of a test, Casella &
Berger 2002, sec. 9.2). "point_estimate": the estimates themselves (a grader whose true r
equals the threshold passes about half the time). The Alternative Annotator Test is a test
already (Calderon et al. 2025) and is the same under both rules.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from calibration.protocol import LOWER_BOUND, Gate
from stats.agreement_types import AltTest, GraderICC, Pearson


@dataclass
class GateCheck:
    """One check of the gate: the value, its threshold, and in plain words why it failed.
    `rule` and `level` say what was compared with the threshold (the estimate, or the lower
    bound of the `level` interval)."""

    name: str
    label: str
    value: float | None
    threshold: float
    passed: bool
    required: bool
    interval: list[float | None] | None = None
    reason: str | None = None
    rule: str = "point_estimate"
    level: float | None = None


def _lower(interval: list | None) -> float | None:
    lo = interval[0] if interval else None
    return lo if lo is not None and math.isfinite(lo) else None


def decide(value: float | None, interval: list | None, threshold: float, *, rule: str,
           level: float, undefined: str) -> tuple[bool, str | None]:
    """(passed, why not) of one estimate under `rule`."""
    if value is None:
        return False, undefined
    if rule != LOWER_BOUND:
        return (True, None) if value >= threshold else (
            False, f"{value:.3f} is below {threshold:g}")
    lo = _lower(interval)
    if lo is None:
        return False, f"{value:.3f} has no {level:.1%} interval, so no lower bound to decide on"
    if lo >= threshold:
        return True, None
    return False, (f"the lower bound {lo:.3f} of its {level:.1%} interval is below "
                   f"{threshold:g} (estimate {value:.3f})")


def gate_checks(gate: Gate, pearson: Pearson, icc2: GraderICC | None, alt: AltTest | None, *,
                pearson_ci: list | None, min_items: int, level: float = 0.95) -> list[GateCheck]:
    """Each check of the registered `gate` on a report's overall comparison (the grader
    against the experts, `calibration.comparison.compare_to_experts`, with intervals at `level`):
    Pearson r and ICC(2,1) of the grader against the experts' mean against their thresholds
    under the gate's rule, each on its case-clustered interval, and the Alternative Annotator
    Test passed (Calderon et al. 2025; its tests cluster-robust over cases); `alt` is None with
    fewer than two experts."""
    r = pearson.r
    icc2_value, icc2_ci = (icc2.icc, icc2.ci95) if icc2 is not None else (None, None)
    rate = alt.winning_rate if alt is not None else None
    rule = gate.rule
    r_pass, r_why = decide(r, pearson_ci, gate.pearson_min, rule=rule, level=level,
                           undefined="undefined (no variance)")
    icc_pass, icc_why = decide(icc2_value, icc2_ci, gate.icc2_min, rule=rule, level=level,
                               undefined="undefined")
    alt_reason = None
    if alt is None:
        alt_reason = "needs at least two experts"
    elif not alt.passed:
        alt_reason = (f"winning rate {rate:.2f} is below 0.5" if rate is not None else
                      f"no expert has {min_items} items shared with another expert")
    return [
        GateCheck("pearson", "Pearson r", r, gate.pearson_min, r_pass,
                  "pearson" in gate.required, pearson_ci, r_why, rule, level),
        GateCheck("icc2", "ICC(2,1), absolute agreement, grader vs experts' mean", icc2_value,
                  gate.icc2_min, icc_pass,
                  "icc2" in gate.required, icc2_ci, icc_why, rule, level),
        GateCheck("alt_test", f"Alt-Test winning rate (epsilon {gate.alt_test_epsilon:g}, "
                  f"q {gate.alt_test_q:g})", rate, 0.5, alt is not None and alt.passed,
                  "alt_test" in gate.required, None, alt_reason, rule, None),
    ]


def gate_passed(checks: list[GateCheck]) -> bool:
    """The verdict: every required check passed."""
    return all(c.passed for c in checks if c.required)
