"""The gate's ICC(2,1) on clustered calibration data, by simulation (printed, never asserted).

10 cases x 5 items; every score component (the item's true score, the grader's error, each of
3 experts' errors) shares `within` of its variance within a case (a case part drawn once per
case, an item part per item), at 50 % and 80 %. The true ICC(2,1) of the grader against the
experts' mean is the gate's threshold, 0.75 (no rater bias; grader error variance 7/12,
expert error variance 1/4, so (7/12 + 1/12) / 2 = 1/3 and 1 / (1 + 1/3) = 0.75). Each study
goes through `stats.icc.icc_grader_vs_mean` with the cases given, as a report computes
it, and the gate's ICC check through `calibration.gate.decide` under the default rule (lower
bound of the 95 % interval at or above 0.75). Printed per design: the coverage of the
case-clustered interval (jackknife over cases, Fisher's z, t with 9 df) and of McGraw & Wong's
F interval (items taken as independent, what the gate used before issue 45), the share missing
on each side, and the gate's false-pass rate with its Monte Carlo standard error (at most
2.5 % + 2 MCSE is the target of issue 45).
"""

import math
import os

import numpy as np

from calibration.gate import decide
from calibration.protocol import LOWER_BOUND
from stats.icc import icc_grader_vs_mean

STUDIES = int(os.environ.get("NMB_BENCH_STUDIES", "2000"))
CASES, PER_CASE, EXPERTS, THRESHOLD = 10, 5, 3, 0.75
GRADER_ERROR, EXPERT_ERROR = 7 / 12, 1 / 4


def study(rng: np.random.Generator, within: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    case = np.repeat(np.arange(CASES), PER_CASE)
    n = case.size

    def part(var: float, cols: int) -> np.ndarray:
        shared = rng.standard_normal((CASES, cols))[case]
        own = rng.standard_normal((n, cols))
        return math.sqrt(var) * (math.sqrt(within) * shared + math.sqrt(1 - within) * own)

    truth = part(1.0, 1)[:, 0]
    return truth + part(GRADER_ERROR, 1)[:, 0], truth[:, None] + part(EXPERT_ERROR, EXPERTS), case


def main() -> None:
    print(f"{STUDIES} simulated studies per design, {CASES} cases x {PER_CASE} items, "
          f"{EXPERTS} experts; true ICC(2,1) of the grader vs the experts' mean = {THRESHOLD}")
    for within in (0.5, 0.8):
        rng = np.random.default_rng(45)
        found = {"clustered (jackknife over cases)": [], "F interval (items independent)": []}
        passed = 0
        for _ in range(STUDIES):
            g, e, case = study(rng, within)
            res = icc_grader_vs_mean(g, e, clusters=case)
            found["clustered (jackknife over cases)"].append(res.ci95)
            found["F interval (items independent)"].append(res.ci95_f)
            passed += decide(res.icc, res.ci95, THRESHOLD, rule=LOWER_BOUND, level=0.95,
                             undefined="")[0]
        for name, cis in found.items():
            lo, hi = np.array([c if c else [np.nan, np.nan] for c in cis], dtype=float).T
            cover = np.mean((lo <= THRESHOLD) & (THRESHOLD <= hi))
            print(f"within-case share {within:.0%}: {name:34s} coverage {cover:.3f} (MC SE "
                  f"{math.sqrt(cover * (1 - cover) / STUDIES):.3f}; above the truth "
                  f"{np.mean(lo > THRESHOLD):.3f}, below {np.mean(hi < THRESHOLD):.3f}), "
                  f"median width {np.nanmedian(hi - lo):.3f}")
        rate = passed / STUDIES
        mcse = math.sqrt(max(rate * (1 - rate), 0.025 * 0.975) / STUDIES)
        print(f"within-case share {within:.0%}: the gate's ICC check passes {rate:.3f} of studies "
              f"at the threshold (MC SE {mcse:.4f}; target <= 0.025 + 2 MCSE = "
              f"{0.025 + 2 * mcse:.3f})")


if __name__ == "__main__":
    main()
