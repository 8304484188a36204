"""Calibration report export: one self-contained HTML page (figures embedded), JSON and PNGs."""

import base64
import html
import json
from pathlib import Path
from typing import Any

from calibration.gate import GateCheck
from calibration.report import STAT_HEADER, TAG_HEADER, Report, StatRow, TagRow
from calibration.terms import ValidationTerms
from db.files import writable, write_file
from errors import UserError


def fmt(x: Any, digits: int = 3) -> str:
    """A statistic for display: 3 decimals, lists in brackets, None as a dash."""
    if x is None:
        return "–"
    if isinstance(x, bool):
        return "pass" if x else "FAIL"
    if isinstance(x, float):
        return f"{x:.{digits}f}"
    if isinstance(x, list | tuple):
        return "[" + ", ".join(fmt(v, digits) for v in x) + "]"
    return html.escape(str(x))


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


LOOK_HEADER = ["look", "config", "report", "decided", "revoked", "at"]


def look_cells(report: Report) -> list[list[Any]]:
    return [[x.number or "", f"#{x.config_id} {x.config}", x.report_id,
             "passed" if x.passed else "failed",
             "revoked" if x.revoked else "suspended: data changed after it" if x.suspended
             else "", x.at] for x in report.heldout_looks]


def _table(header: list[str], rows: list[list[Any]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{fmt(v)}</td>" for v in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def render(report: Report, figures: dict[str, bytes], *, title: str,
           terms: ValidationTerms | None = None) -> str:
    """The report's page; `terms`: the protocol's, for a held-out look (what a pass means)."""
    verdict = "PASSED" if report.passed else "FAILED"
    kind = ("held-out look under " + (f"protocol {report.protocol_id} (sha256 "
            f"{report.protocol_hash})") if report.validates else
            f"{report.part} part: exploration, never validates")
    parts = [f"<h1>{html.escape(title)}</h1>",
             f"<p>{report.n_items} items, {report.n_experts} experts; {html.escape(kind)}. "
             f"Gate: <b>{verdict}</b></p>",
             f"<p>Data sha256 {report.data_hash} (nmb calibrate --check recomputes it).</p>"]
    if terms is not None:
        parts.append(f"<p class=terms>Terms: {html.escape(terms.text())}</p>")
        if weaker := terms.weaker_text():
            parts.append(f"<p class=flag>{html.escape(weaker)}</p>")
    parts += [f"<p class=flag>{html.escape(f)}</p>" for f in report.flags]
    parts.append(_table(GATE_HEADER, gate_cells(report)))
    parts.append(f"<h2>Held-out looks ({len(report.heldout_looks)} configs)</h2>")
    parts.append(_table(LOOK_HEADER, look_cells(report)))
    parts.append("<h2>Overall score and criteria (rubric points)</h2>")
    parts.append(_table(STAT_HEADER, [stat_cells(r) for r in report.stat_rows()]))
    ceiling = report.overall.get("ceiling")
    if ceiling:
        parts.append("<h2>Human ceiling</h2>")
        keys = list(ceiling["experts_mean"])
        parts.append(_table(["", *keys], [
            ["experts vs other experts (mean)", *ceiling["experts_mean"].values()],
            ["grader vs the same experts (mean)", *ceiling["grader_mean"].values()],
            ["grader vs all experts", *ceiling["grader_vs_all"].values()]]))
    parts.append("<h2>Error classes</h2>")
    parts.append(_table(TAG_HEADER, [tag_cells(r) for r in report.tag_rows()]))
    parts.append("<h2>Breakdowns</h2>")
    for key, groups in report.breakdown.items():
        parts.append(f"<h3>by {html.escape(key)}</h3>")
        parts.append(_table([key, "n", "Pearson r", "ICC2", "bias", "MAE"], [
            [g, v.get("n_items"), v.get("pearson"), v.get("icc2"), v.get("bias"), v.get("mae")]
            for g, v in groups.items()]))
    parts.append("<h2>Protocol and statistics</h2>")
    settings = {"gate": report.gate_settings, "statistics": report.statistics}
    parts.append(f"<pre>{html.escape(json.dumps(settings, indent=1))}</pre>")
    parts.append("<h2>Figures</h2>")
    for name, png in figures.items():
        data = base64.b64encode(png).decode()
        parts.append(f'<img alt="{html.escape(name)}" src="data:image/png;base64,{data}">')
    style = ("body{font-family:sans-serif;max-width:1100px;margin:2em auto}"
             "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;"
             "padding:3px 8px;text-align:right}.flag{color:#a60}img{margin:8px}")
    return (f"<!doctype html><html><head><meta charset=utf-8><title>{html.escape(title)}"
            f"</title><style>{style}</style></head><body>{''.join(parts)}</body></html>")


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
