"""`nmb agreement FILE.csv`: agreement statistics from a long-format CSV (item, rater, score)."""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

import numpy as np

from calibration import comparison
from errors import UserError, one_line, read_at_most
from stats.agreement_types import plain
from stats.chance_agreement import CONTINUOUS, krippendorff_alpha
from stats.icc import ICC_FORMS, icc

REQUIRED = ("item", "rater", "score")
MISSING = {"", "na", "nan", "null", "none"}
MAX_BOOTSTRAP = 100_000  # as a protocol's resamples (calibration.protocol.check_values)
MAX_BYTES = 64 * 2**20  # a 2,000 x 6 panel is 0.2 MB
MAX_ROWS = 1_000_000  # rows read into memory before the matrix is built
MAX_CELLS = 10_000_000  # items x raters, the dense matrix the statistics work on (80 MB)
MAX_ABS_SCORE = 1e15  # beyond this, doubles no longer hold every integer (2^53 ~ 9.0e15)
MAX_LEVELS = 21  # integer scores spanning at most this many levels form a rating scale


def _shown(value: str) -> str:
    """A value quoted for a one-line message, cut to a readable length."""
    return one_line(repr(value), 60)


def _text(path: Path) -> str:
    """The file's text, size-capped before reading, as UTF-8 (a byte-order mark is allowed)."""
    try:
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise UserError(f"{path}: {size} bytes, more than the {MAX_BYTES // 2**20} MiB allowed")
        if (data := read_at_most(path, MAX_BYTES)) is None:
            raise UserError(f"{path}: more than the {MAX_BYTES // 2**20} MiB allowed")
    except OSError as exc:
        raise UserError(f"{path}: cannot read ({exc.strerror or exc})") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UserError(f"{path}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset "
                        f"{exc.start})") from None


def _score(path: Path, line: int, raw: str) -> float:
    """The parsed score of one row; UserError naming line and value when it is not usable."""
    try:
        score = float(raw)
    except ValueError:
        raise UserError(
            f"{path}: line {line}: column 'score' has non-numeric value {_shown(raw)}"
        ) from None
    if not math.isfinite(score):
        raise UserError(f"{path}: line {line}: column 'score' has non-finite value {_shown(raw)}")
    if abs(score) > MAX_ABS_SCORE:
        raise UserError(f"{path}: line {line}: column 'score' has {_shown(raw)}, outside "
                        f"+/-{MAX_ABS_SCORE:g}")
    return score


def read_ratings(path: Path) -> tuple[list[str], list[str], np.ndarray]:
    """Items, raters (in order of first appearance) and an items x raters score matrix with
    NaN for a missing rating. Columns other than item, rater and score are ignored. Every
    problem is a UserError of one line naming the file, line, column or value."""
    path = Path(path)
    reader = csv.DictReader(io.StringIO(_text(path), newline=""))
    items: dict[str, int] = {}
    raters: dict[str, int] = {}
    cells: dict[tuple[int, int], float] = {}
    try:
        header = [(h or "").strip() for h in (reader.fieldnames or [])]
        missing = [c for c in REQUIRED if c not in header]
        if missing:
            found = _shown(",".join(header)) if header else "no header"
            raise UserError(f"{path}: missing column {', '.join(repr(c) for c in missing)} "
                            f"(need item,rater,score; found {found})")
        reader.fieldnames = header
        for count, row in enumerate(reader, 1):
            line = reader.line_num
            if count > MAX_ROWS:
                raise UserError(f"{path}: line {line}: more than {MAX_ROWS:,} rows")
            item, rater = (row.get("item") or "").strip(), (row.get("rater") or "").strip()
            raw = (row.get("score") or "").strip()
            if not item or not rater:
                empty = "item" if not item else "rater"
                raise UserError(f"{path}: line {line}: column {empty!r} is empty")
            i = items.setdefault(item, len(items))
            r = raters.setdefault(rater, len(raters))
            if raw.lower() in MISSING:
                continue
            if (i, r) in cells:
                raise UserError(f"{path}: line {line}: second score for item {_shown(item)} by "
                                f"rater {_shown(rater)}")
            cells[(i, r)] = _score(path, line, raw)
    except csv.Error as exc:
        raise UserError(f"{path}: line {reader.line_num}: not valid CSV ({exc})") from None
    if len(items) * len(raters) > MAX_CELLS:
        raise UserError(f"{path}: {len(items)} items x {len(raters)} raters is more than "
                        f"{MAX_CELLS:,} cells")
    matrix = np.full((len(items), len(raters)), np.nan)
    if cells:
        idx = np.array(list(cells.keys()))
        matrix[idx[:, 0], idx[:, 1]] = list(cells.values())
    return list(items), list(raters), matrix


def rating_scale(scores: np.ndarray) -> tuple[list[float] | None, str | None]:
    """The finite scale the observed scores lie on, or None and why they count as continuous.

    A scale: every score is an integer and they span at most MAX_LEVELS levels; the scale is
    every integer from the lowest to the highest score (a level nobody used still counts for
    weighted kappa and within-one). Anything else (0-1 fractions, 0-100 points) is continuous.
    """
    values = scores[np.isfinite(scores)]
    if values.size == 0:
        return None, "no score"
    if not np.all(values == np.round(values)):
        return None, f"{CONTINUOUS} (not every score is an integer)"
    lo, hi = int(values.min()), int(values.max())
    if hi - lo + 1 > MAX_LEVELS:
        return None, (f"{CONTINUOUS} (integer scores span {hi - lo + 1} levels, more "
                      f"than {MAX_LEVELS})")
    return [float(v) for v in range(lo, hi + 1)], None


def agreement_from_csv(
    path: Path, *, reference: str | None = None, bootstrap: int = 1000, seed: int = 0
) -> dict:
    """The `nmb agreement` report: ICC (six forms) and Krippendorff's alpha over all raters and,
    with `reference`, that rater against the per-item mean of the others (bias = reference minus
    others), its human ceiling and the alt-test. Kappa, exact/within-one and nominal alpha need
    a finite scale (`rating_scale`); for continuous scores they are null with a reason.
    Raises UserError (one line naming file, column, value) for bad input."""
    path = Path(path)
    if not 0 <= bootstrap <= MAX_BOOTSTRAP:
        raise UserError(f"--bootstrap must be 0 to {MAX_BOOTSTRAP}, got {bootstrap}")
    items, raters, x = read_ratings(path)
    rated = np.isfinite(x).any(axis=0)
    if rated.sum() < 2:
        raise UserError(
            f"{path}: column 'rater' has {int(rated.sum())} rater(s) with scores; need at least 2"
        )
    scale, scale_note = rating_scale(x)
    iccs = icc(x, raters=raters)
    report: dict = {
        "file": str(path),
        "n_items": len(items),
        "n_raters": len(raters),
        "raters": raters,
        "n_ratings": int(np.isfinite(x).sum()),
        "scale": scale,
        "scale_note": scale_note,
        "icc_items_complete": iccs.n_items,
        "icc": {
            **{k: None if (f := iccs.form(k)) is None else {"icc": f.icc, "ci95": f.ci95}
               for k in ICC_FORMS},
            "notes": iccs.notes,
            "reasons": iccs.reasons,
        },
        "krippendorff_alpha": krippendorff_alpha(x, domain=scale).to_dict(),
    }
    if reference is None:
        return report
    if reference not in raters:
        raise UserError(f"{path}: column 'rater' has no value {_shown(reference)} "
                        f"(raters: {one_line(', '.join(raters), 120)})")
    j = raters.index(reference)
    ref, others = x[:, j], np.delete(x, j, axis=1)
    if not np.isfinite(ref).any():
        raise UserError(f"{path}: rater {_shown(reference)} has no numeric score")
    full = comparison.compare_to_experts(ref, others, domain=scale, bootstrap=bootstrap, seed=seed,
                                        expert_names=raters[:j] + raters[j + 1:])
    pearson = full.pearson
    report["reference"] = {
        "rater": reference,
        "n_items": full.n_items,
        "pearson": {
            "r": pearson.r,
            "ci95": pearson.ci95_bootstrap if bootstrap > 0 else pearson.ci95_fisher,
            "ci95_method": full.bootstrap.interval if bootstrap > 0 else "fisher",
            "ci95_fisher": pearson.ci95_fisher,
            "warning": pearson.warning,
        },
        "spearman": full.spearman.rho,
        "kendall": full.kendall.tau_b,
        **{k: plain(getattr(full, k)) for k in (
            "weighted_kappa", "weighted_kappa_linear", "bland_altman", "mae", "exact",
            "within_one", "alt_test", "ceiling", "reasons")},
    }
    return report
