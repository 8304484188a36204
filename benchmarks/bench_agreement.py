"""Calibration report for one criterion: 3,200 items x 3 experts + grader, 2,000 bootstrap resamples.

Ours: `calibration.comparison.compare_to_experts` (vectorized bootstrap, one matrix product per
CI) and `agreement_from_csv` end to end. Baseline, in the same run: the same statistics with
pingouin (corr, intraclass_corr), sklearn's kappa, the krippendorff package, a Python-loop
bootstrap (np.corrcoef per resample) and a per-item loop alt-test.

Then `nmb agreement --reference` on a continuous file, 2,000 items x 6 raters with 0-1 scores
of 4 decimals, as a separate process: wall time and peak memory (max RSS) from /usr/bin/time -v
(the issue's limits: 5 s, 500 MB).
"""

import csv
import re
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks.timing import median_seconds

N_ITEMS, N_EXPERTS, BOOTSTRAP = 3200, 3, 2000
DOMAIN = [0, 1, 2, 3, 4]


def make_panel(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 5, N_ITEMS).astype(float)
    experts = np.clip(np.round(truth[:, None] + rng.normal(0, 0.7, (N_ITEMS, N_EXPERTS))), 0, 4)
    experts[rng.random(experts.shape) < 0.05] = np.nan
    grader = np.clip(np.round(truth + rng.normal(0, 0.6, N_ITEMS)), 0, 4)
    return grader, experts


def write_csv(path: Path, grader: np.ndarray, experts: np.ndarray) -> None:
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["item", "rater", "score"])
        for i in range(N_ITEMS):
            w.writerow([f"item{i}", "grader", int(grader[i])])
            for j in range(N_EXPERTS):
                v = experts[i, j]
                w.writerow([f"item{i}", f"expert{j}", "" if np.isnan(v) else int(v)])


def write_continuous_csv(path: Path, n_items: int = 2000, n_raters: int = 6) -> None:
    """0-1 scores with 4 decimals: a true score per item plus each rater's noise."""
    rng = np.random.default_rng(1)
    truth = rng.random((n_items, 1))
    scores = np.clip(truth + rng.normal(0, 0.1, (n_items, n_raters)), 0, 1)
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["item", "rater", "score"])
        for i in range(n_items):
            for j in range(n_raters):
                w.writerow([f"item{i}", f"rater{j}", f"{scores[i, j]:.4f}"])


def measure_cli(args: list[str]) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds (user + system) and max RSS (MB) of `nmb ARGS` in a fresh
    process, from /usr/bin/time -v."""
    run = subprocess.run(["/usr/bin/time", "-v", sys.executable, "-m", "cli", *args],
                         capture_output=True, text=True, check=True)

    def field(label: str) -> str:
        return re.search(rf"{label}.*: (\S+)", run.stderr).group(1)  # type: ignore[union-attr]

    *hm, sec = field(r"Elapsed \(wall clock\) time").split(":")
    wall = float(sec) + 60 * int(hm[-1]) + 3600 * (int(hm[0]) if len(hm) > 1 else 0)
    cpu = float(field("User time")) + float(field("System time"))
    return wall, cpu, int(field("Maximum resident set size")) / 1024


def baseline_report(grader: np.ndarray, experts: np.ndarray, seed: int = 0) -> dict:
    """The same statistics the usual way: pingouin per statistic, loops for bootstrap and alt-test."""
    import krippendorff
    import pingouin as pg
    from scipy import stats
    from sklearn.metrics import cohen_kappa_score

    rng = np.random.default_rng(seed)

    def versus(t: np.ndarray, others: np.ndarray) -> dict:
        with warnings.catch_warnings():  # items no other expert rated give NaN
            warnings.simplefilter("ignore", RuntimeWarning)
            ref = np.nanmean(others, axis=1)
        ok = np.isfinite(t) & np.isfinite(ref)
        a, b = t[ok], ref[ok]
        pear = pg.corr(a, b, method="pearson")
        boot = []
        for _ in range(BOOTSTRAP):
            idx = rng.integers(0, len(a), len(a))
            boot.append(np.corrcoef(a[idx], b[idx])[0, 1])
        codes = np.clip(np.round(b), 0, 4)
        d = a - b
        return {
            "r": pear["r"].iloc[0],
            "ci95": list(pear["CI95"].iloc[0]),
            "boot": list(np.percentile(boot, [2.5, 97.5])),
            "spearman": pg.corr(a, b, method="spearman")["r"].iloc[0],
            "kendall": pg.corr(a, b, method="kendall")["r"].iloc[0],
            "kappa": cohen_kappa_score(a.astype(int), codes.astype(int), weights="quadratic",
                                       labels=DOMAIN),
            "bias": d.mean(), "sd": d.std(ddof=1), "mae": np.abs(d).mean(),
            "exact": np.mean(a == codes), "within_one": np.mean(np.abs(a - codes) <= 1),
        }

    def icc_table(x: np.ndarray) -> pd.DataFrame:
        x = x[np.isfinite(x).all(axis=1)]
        long = pd.DataFrame(x).reset_index().melt(id_vars="index")
        return pg.intraclass_corr(long, targets="index", raters="variable", ratings="value")

    def alphas(x: np.ndarray) -> dict:
        return {lvl: krippendorff.alpha(reliability_data=x.T, value_domain=DOMAIN,
                                        level_of_measurement=lvl)
                for lvl in ("interval", "ordinal", "nominal")}

    def alt_test_loop(eps: float = 0.2) -> tuple[float, float]:
        p_values, rho = [], []
        for j in range(N_EXPERTS):
            wf, wh = [], []
            for i in range(N_ITEMS):
                others = [experts[i, k] for k in range(N_EXPERTS)
                          if k != j and np.isfinite(experts[i, k])]
                if not np.isfinite(experts[i, j]) or not others:
                    continue
                sf = -np.sqrt(np.mean([(grader[i] - o) ** 2 for o in others]))
                sh = -np.sqrt(np.mean([(experts[i, j] - o) ** 2 for o in others]))
                wf.append(sf >= sh)
                wh.append(sh >= sf)
            d = np.array(wh, float) - np.array(wf, float)
            p_values.append(stats.ttest_1samp(d, eps, alternative="less").pvalue)
            rho.append(np.mean(wf))
        reject = pg.multicomp(p_values, method="fdr_by")[0]
        return float(np.mean(reject)), float(np.mean(rho))

    both = np.column_stack([grader, experts])
    return {
        "grader": versus(grader, experts),
        "icc": icc_table(both),
        "icc_experts": icc_table(experts),
        "alpha": alphas(both),
        "alpha_experts": alphas(experts),
        "ceiling": [
            (versus(experts[:, j], np.delete(experts, j, 1)),
             versus(grader, np.delete(experts, j, 1)))
            for j in range(N_EXPERTS)
        ],
        "alt_test": alt_test_loop(),
    }


def main() -> None:
    from calibration.agreement_csv import agreement_from_csv
    from calibration.comparison import compare_to_experts

    grader, experts = make_panel()
    ours = compare_to_experts(grader, experts, domain=DOMAIN, bootstrap=BOOTSTRAP, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        base = baseline_report(grader, experts)
    print(f"check: r {ours.pearson.r:.4f} vs {base['grader']['r']:.4f}; "
          f"ICC2 {ours.icc.icc2.icc:.4f} vs {base['icc']['ICC'].iloc[1]:.4f}; "
          f"alt-test winning rate {ours.alt_test.winning_rate} vs {base['alt_test'][0]}")

    t_ours = median_seconds(
        lambda: compare_to_experts(grader, experts, domain=DOMAIN, bootstrap=BOOTSTRAP, seed=0),
        repeat=7, warmup=1)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "panel.csv"
        write_csv(path, grader, experts)
        t_csv = median_seconds(
            lambda: agreement_from_csv(path, reference="grader", bootstrap=BOOTSTRAP, seed=0),
            repeat=7, warmup=1)
    with warnings.catch_warnings():  # pingouin's own pandas deprecation warnings
        warnings.simplefilter("ignore")
        t_base = median_seconds(lambda: baseline_report(grader, experts), repeat=3, warmup=0)
    print(f"items={N_ITEMS} experts={N_EXPERTS}+grader bootstrap={BOOTSTRAP}")
    print(f"compare_to_experts (report)        median {t_ours:.3f} s")
    print(f"agreement_from_csv --reference     median {t_csv:.3f} s")
    print(f"baseline pingouin + loop bootstrap median {t_base:.3f} s")
    print(f"ratio baseline / ours: {t_base / t_ours:.1f}x (report), "
          f"{t_base / t_csv:.1f}x (CSV end to end)")

    if not Path("/usr/bin/time").exists():
        print("continuous CSV: /usr/bin/time missing, not measured")
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "continuous.csv"
        write_continuous_csv(path)
        runs = [measure_cli(["agreement", str(path), "--reference", "rater0"]) for _ in range(3)]
    wall, cpu = (sorted(r[i] for r in runs)[1] for i in (0, 1))
    rss = max(r[2] for r in runs)
    print(f"nmb agreement --reference, 2,000 items x 6 raters, 0-1 scores (4 decimals), "
          f"1,000 resamples: median wall {wall:.2f} s (CPU {cpu:.2f} s), max RSS {rss:.0f} MB "
          f"(limits 5 s, 500 MB)")


if __name__ == "__main__":
    main()
