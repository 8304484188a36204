"""Calibration report export: one self-contained HTML page (figures embedded), JSON and PNGs."""

import base64
import json
from pathlib import Path
from typing import Any

from calibration import grras
from calibration.gate import GateCheck
from calibration.report import STAT_HEADER, TAG_HEADER, Report, StatRow, TagRow
from calibration.templating import environment
from calibration.terms import ValidationTerms
from db.files import writable, write_file
from errors import UserError


def fmt(x: Any, digits: int = 3) -> str:
    """A statistic as text: 3 decimals, lists in brackets, None as a dash (escaped where shown)."""
    if x is None:
        return "–"
    if isinstance(x, bool):
        return "pass" if x else "FAIL"
    if isinstance(x, float):
        return f"{x:.{digits}f}"
    if isinstance(x, list | tuple):
        return "[" + ", ".join(fmt(v, digits) for v in x) + "]"
    return str(x)


def stat_cells(row: StatRow) -> list[Any]:
    return [row.name, row.n, row.pearson, row.pearson_ci, row.icc2, row.alpha_interval,
            row.kappa_linear, row.kappa_quadratic, row.bias, row.limits, row.mae, row.within_one]


def tag_cells(row: TagRow) -> list[Any]:
    return [row.name, row.prevalence, row.kappa, row.kappa_ci, row.ac1, row.ac1_ci, row.f1,
            row.ceiling_ac1, row.alpha_experts, row.alpha_with_grader]


GATE_HEADER = ["gate", "value", "interval", "decided on", "threshold", "required", "verdict",
               "why"]


def _decided_on(g: GateCheck) -> str:
    if g.name == "alt_test":
        return "the test"
    if g.rule == "lower_bound":
        return f"lower bound ({g.level:.1%} interval)"
    return "the estimate"


def gate_cells(report: Report) -> list[list[Any]]:
    return [[g.label, g.value, g.interval, _decided_on(g), g.threshold,
             "yes" if g.required else "no", g.passed, g.reason or ""] for g in report.gate]


ALT_HEADER = ["epsilon", "winning rate", "verdict"]

LOOK_HEADER = ["look", "config", "report", "decided", "revoked", "at"]


def look_cells(report: Report) -> list[list[Any]]:
    return [[x.number or "", f"#{x.config_id} {x.config}", x.report_id,
             "passed" if x.passed else "failed",
             "revoked" if x.revoked else "suspended: data changed after it" if x.suspended
             else "", x.at] for x in report.heldout_looks]


STYLE = ("body{font-family:sans-serif;max-width:1100px;margin:2em auto}"
         "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;"
         "padding:3px 8px;text-align:right}.flag{color:#a60}img{margin:8px}")
_PAGES = environment(Path(__file__).with_name("templates"))
_PAGES.filters["stat"] = fmt


def render(report: Report, figures: dict[str, bytes], *, title: str,
           terms: ValidationTerms | None = None) -> str:
    """The report's page; `terms`: the protocol's, for a held-out look (what a pass means)."""
    ceiling = report.overall.get("ceiling")
    return _PAGES.get_template("report.html").render(
        title=title, style=STYLE, report=report, terms=terms,
        verdict="PASSED" if report.passed else "FAILED",
        kind=("held-out look under " + (f"protocol {report.protocol_id} (sha256 "
              f"{report.protocol_hash})") if report.validates else
              f"{report.part} part: exploration, never validates"),
        gate_header=GATE_HEADER, gate_rows=gate_cells(report),
        clustering=report.clustering(), icc_items=report.icc_items(),
        alt_header=ALT_HEADER, alt_rows=report.alt_sensitivity_rows(),
        grras_header=grras.HEADER, grras_rows=grras.rows(),
        look_header=LOOK_HEADER, look_rows=look_cells(report),
        stat_header=STAT_HEADER, stat_rows=[stat_cells(r) for r in report.stat_rows()],
        tag_header=TAG_HEADER, tag_rows=[tag_cells(r) for r in report.tag_rows()],
        ceiling=ceiling and (["", *ceiling["experts_mean"]], [
            ["experts vs other experts (mean)", *ceiling["experts_mean"].values()],
            ["grader vs the same experts (mean)", *ceiling["grader_mean"].values()],
            ["grader vs all experts", *ceiling["grader_vs_all"].values()]]),
        breakdowns=[(key, [key, "n", "Pearson r", "ICC2", "bias", "MAE"],
                     [[g, v.get("n_items"), v.get("pearson"), v.get("icc2"), v.get("bias"),
                       v.get("mae")] for g, v in groups.items()])
                    for key, groups in report.breakdown.items()],
        settings=json.dumps({"gate": report.gate_settings, "statistics": report.statistics},
                            indent=1),
        figures=[(name, base64.b64encode(data).decode()) for name, data in figures.items()])


def prepare_out(out: Path) -> Path:
    """Create the output folder, or refuse in one line, before any report is saved."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        writable(out / "report")  # a new file of its own: never through a link
    except OSError as e:
        raise UserError(f"cannot write the report to {out}: {e.strerror or e}") from None
    return out


def export(out: Path, report: Report, page: str, figures: dict[str, bytes]) -> list[Path]:
    """Write report.html, report.json and one PNG per figure into `out`."""
    prepare_out(out)
    files = {"report.html": page, "report.json": json.dumps(report.to_json(), indent=1),
             **{f"{name}.png": png for name, png in figures.items()}}
    return [write_file(out / name, data) for name, data in files.items()]
