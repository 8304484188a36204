"""Run the suite in lanes and report their times (`make check`, `make test`, `.ci/run`).

    python -m tests.lanes fast          # the fast lane: tests not marked slow
    python -m tests.lanes fast slow     # everything, lane by lane

Each lane is one pytest run (`-n NMB_TEST_WORKERS` processes, default 2) writing a JUnit XML
report; afterwards the lanes' wall times and the 30 slowest tests are printed. The exit code is
pytest's first non-zero one, or 1 when the lanes together took longer than `NMB_TEST_BUDGET_S`
(default 2700 s, 45 minutes): a suite that outgrows its budget fails rather than creeping up.
"""

import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

LANES = {"fast": "not slow", "slow": "slow"}
ROOT = Path(__file__).resolve().parents[1]


def _slowest(reports: list[Path], n: int = 30) -> list[tuple[float, str]]:
    cases = []
    for report in reports:
        if report.is_file():
            for case in ET.parse(report).iter("testcase"):
                name = f"{case.get('classname', '')}::{case.get('name', '')}"
                cases.append((float(case.get("time") or 0), name))
    return sorted(cases, reverse=True)[:n]


def main(lanes: list[str]) -> int:
    workers = os.environ.get("NMB_TEST_WORKERS", "2")
    budget = float(os.environ.get("NMB_TEST_BUDGET_S", "2700"))
    code, times, reports = 0, {}, []
    with tempfile.TemporaryDirectory(prefix="nmb-lanes-") as tmp:
        for lane in lanes:
            report = Path(tmp) / f"{lane}.xml"
            reports.append(report)
            start = time.monotonic()
            rc = subprocess.call([sys.executable, "-m", "pytest", "-q", "-m", LANES[lane],
                                  "-n", workers, f"--junitxml={report}"], cwd=ROOT)
            times[lane] = time.monotonic() - start
            code = code or (rc if rc != 5 else 0)  # 5: the lane selected no test
        print("\n30 slowest tests:")
        for seconds, name in _slowest(reports):
            print(f"  {seconds:7.1f} s  {name}")
    total = sum(times.values())
    print("\nlanes: " + ", ".join(f"{lane} {t:.0f} s" for lane, t in times.items())
          + f"; total {total:.0f} s (budget {budget:.0f} s)")
    if total > budget:
        print(f"the suite took {total:.0f} s, over its budget of {budget:.0f} s", file=sys.stderr)
        code = code or 1
    return code


if __name__ == "__main__":
    args = sys.argv[1:] or ["fast", "slow"]
    unknown = [a for a in args if a not in LANES]
    if unknown:
        sys.exit(f"unknown lane {unknown[0]!r}: choose from {', '.join(LANES)}")
    sys.exit(main(args))
