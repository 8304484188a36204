"""The gate's verdict: the checks of a registered protocol's gate (`calibration.protocol.Gate`)
on a calibration report's statistics, and whether the config passes (every required check)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from calibration.protocol import Gate


@dataclass
class GateCheck:
    """One check of the gate: the value, its threshold, and in plain words why it failed."""

    name: str
    label: str
    value: float | None
    threshold: float
    passed: bool
    required: bool
    interval: list[float | None] | None = None
    reason: str | None = None



def gate_checks(gate: Gate, overall: dict[str, Any], *, pearson_ci: list | None,
                min_items: int) -> list[GateCheck]:
    """Each check of the registered `gate` on a report's overall comparison (the grader
    against the experts, `calibration.comparison.compare_to_experts`): Pearson r and ICC(2,1) at or
    above their thresholds, the Alternative Annotator Test passed (Calderon et al. 2025)."""
    r = overall["pearson"]["r"]
    icc2 = (overall["icc"].get("ICC2") or {}).get("icc")
    alt = overall.get("alt_test") or {}
    rate = alt.get("winning_rate")

    def below(value: float | None, threshold: float, undefined: str) -> str | None:
        if value is None:
            return undefined
        return None if value >= threshold else f"{value:.3f} is below {threshold:g}"

    alt_reason = None
    if not alt:
        alt_reason = "needs at least two experts"
    elif not alt.get("passed"):
        alt_reason = (f"winning rate {rate:.2f} is below 0.5" if rate is not None else
                      f"no expert has {min_items} items shared with another expert")
    checks = [
        GateCheck("pearson", "Pearson r", r, gate.pearson_min,
                  r is not None and r >= gate.pearson_min, "pearson" in gate.required,
                  pearson_ci, below(r, gate.pearson_min, "undefined (no variance)")),
        GateCheck("icc2", "ICC(2,1), absolute agreement", icc2, gate.icc2_min,
                  icc2 is not None and icc2 >= gate.icc2_min, "icc2" in gate.required, None,
                  below(icc2, gate.icc2_min, "undefined")),
        GateCheck("alt_test", f"Alt-Test winning rate (epsilon {gate.alt_test_epsilon:g}, "
                  f"q {gate.alt_test_q:g})", rate, 0.5, bool(alt.get("passed")),
                  "alt_test" in gate.required, None, alt_reason),
    ]
    return checks


def gate_passed(checks: list[GateCheck]) -> bool:
    """The verdict: every required check passed."""
    return all(c.passed for c in checks if c.required)
