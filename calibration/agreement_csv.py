"""`nmb agreement FILE.csv`: agreement statistics from a long-format CSV (item, rater, score)."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np

from calibration import agreement
from errors import UserError

REQUIRED = ("item", "rater", "score")
MISSING = {"", "na", "nan", "null", "none"}


def read_ratings(path: Path) -> tuple[list[str], list[str], np.ndarray]:
    """Items, raters (in order of first appearance) and an items x raters score matrix with
    NaN for a missing rating. Columns other than item, rater and score are ignored."""
    path = Path(path)
    try:
        handle = path.open(newline="", encoding="utf-8-sig")
    except OSError as exc:
        raise UserError(f"{path}: cannot read ({exc.strerror or exc})") from None
    with handle:
        reader = csv.DictReader(handle)
        header = [h.strip() for h in (reader.fieldnames or [])]
        missing = [c for c in REQUIRED if c not in header]
        if missing:
            raise UserError(
                f"{path}: missing column {', '.join(repr(c) for c in missing)} "
                f"(need item,rater,score; found {','.join(header) or 'no header'})"
            )
        reader.fieldnames = header
        items: dict[str, int] = {}
        raters: dict[str, int] = {}
        cells: dict[tuple[int, int], float] = {}
        for row in reader:
            line = reader.line_num
            item, rater = (row.get("item") or "").strip(), (row.get("rater") or "").strip()
            raw = (row.get("score") or "").strip()
            if not item or not rater:
                raise UserError(f"{path}: line {line}: empty 'item' or 'rater' value")
            i = items.setdefault(item, len(items))
            r = raters.setdefault(rater, len(raters))
            if raw.lower() in MISSING:
                continue
            try:
                score = float(raw)
            except ValueError:
                raise UserError(
                    f"{path}: line {line}: column 'score' has non-numeric value {raw!r}"
                ) from None
            if not math.isfinite(score):
                raise UserError(f"{path}: line {line}: column 'score' has non-finite value {raw!r}")
            if (i, r) in cells:
                raise UserError(
                    f"{path}: line {line}: second score for item {item!r} by rater {rater!r}"
                )
            cells[(i, r)] = score
    matrix = np.full((len(items), len(raters)), np.nan)
    if cells:
        idx = np.array(list(cells.keys()))
        matrix[idx[:, 0], idx[:, 1]] = list(cells.values())
    return list(items), list(raters), matrix


def agreement_from_csv(
    path: Path, *, reference: str | None = None, bootstrap: int = 1000, seed: int = 0
) -> dict:
    """The `nmb agreement` report: ICC (six forms) and Krippendorff's alpha over all raters and,
    with `reference`, that rater against the per-item mean of the others (bias = reference minus
    others), its human ceiling and the alt-test. The value domain is the set of observed scores.
    Raises UserError (one line naming file, column, value) for bad input."""
    path = Path(path)
    items, raters, x = read_ratings(path)
    rated = np.isfinite(x).any(axis=0)
    if rated.sum() < 2:
        raise UserError(
            f"{path}: column 'rater' has {int(rated.sum())} rater(s) with scores; need at least 2"
        )
    if bootstrap < 0:
        raise UserError(f"--bootstrap must be >= 0, got {bootstrap}")
    domain = np.unique(x[np.isfinite(x)]).tolist()
    report: dict = {
        "file": str(path),
        "n_items": len(items),
        "n_raters": len(raters),
        "raters": raters,
        "n_ratings": int(np.isfinite(x).sum()),
        "domain": domain,
    }
    iccs = agreement.icc(x)
    report["icc_items_complete"] = iccs["n_items"]
    report["icc"] = {
        k: v if v is None else {"icc": v["icc"], "ci95": v["ci95"]}
        for k, v in iccs.items()
        if k.startswith("ICC")
    }
    if len(domain) >= 2:
        report["krippendorff_alpha"] = agreement.krippendorff_alpha(x, domain=domain)
    else:
        report["krippendorff_alpha"] = {"interval": None, "ordinal": None, "nominal": None}
    if reference is not None:
        if reference not in raters:
            raise UserError(
                f"{path}: column 'rater' has no value {reference!r} (raters: {', '.join(raters)})"
            )
        j = raters.index(reference)
        ref, others = x[:, j], np.delete(x, j, axis=1)
        if not np.isfinite(ref).any():
            raise UserError(f"{path}: rater {reference!r} has no numeric score")
        full = agreement.compare_to_experts(
            ref, others, domain=domain, bootstrap=bootstrap, seed=seed
        )
        ci = full["pearson"]["ci95_bootstrap"] if bootstrap > 0 else full["pearson"]["ci95_fisher"]
        report["reference"] = {
            "rater": reference,
            "n_items": full["n_items"],
            "pearson": {
                "r": full["pearson"]["r"],
                "ci95": ci,
                "ci95_fisher": full["pearson"]["ci95_fisher"],
            },
            "spearman": full["spearman"]["rho"],
            "kendall": full["kendall"]["tau_b"],
            "weighted_kappa": full["weighted_kappa"],
            "bland_altman": full["bland_altman"],
            "mae": full["mae"],
            "exact": full["exact"],
            "within_one": full["within_one"],
            "alt_test": full["alt_test"],
            "ceiling": full["ceiling"],
        }
    return report
