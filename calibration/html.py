"""Calibration report export: one self-contained HTML page (figures embedded), JSON and PNGs."""

import base64
import html
import json
from pathlib import Path
from typing import Any

from calibration.plots import all_figures
from calibration.report import CalibrationData


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


def _table(header: list[str], rows: list[list[Any]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{fmt(v)}</td>" for v in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _stats_row(name: str, res: dict) -> list[Any]:
    ba = res["bland_altman"]
    return [name, res["n_items"], res["pearson"]["r"], res["pearson"].get("ci95_bootstrap"),
            (res["icc"].get("ICC2") or {}).get("icc"), res["krippendorff_alpha"].get("interval"),
            res["weighted_kappa"], ba["bias"], ba["loa"], res["mae"], res["within_one"]]


def stat_rows(results: dict) -> list[list[Any]]:
    """One row of agreement statistics for the overall score, then one per criterion."""
    return [_stats_row("overall", results["overall"]),
            *(_stats_row(k, v) for k, v in results["criteria"].items())]


STAT_HEADER = ["", "n", "Pearson r", "r 95% CI (bootstrap)", "ICC2", "alpha (interval)",
               "weighted kappa", "bias", "limits of agreement", "MAE", "within one"]


TAG_HEADER = ["error class", "prevalence", "kappa", "kappa 95% CI", "AC1", "AC1 95% CI", "F1",
              "experts' AC1 (ceiling)", "alpha, experts", "alpha, experts + grader"]


def tag_rows(results: dict) -> list[list[Any]]:
    """One row per error class: the grader against the experts' majority (with bootstrap
    intervals), the experts' own agreement, and Krippendorff's nominal alpha without and with
    the grader."""
    rows = []
    for c, v in results["error_tags"]["classes"].items():
        g, ci = v["grader"], v["grader"].get("ci95") or {}
        rows.append([c, v["prevalence"], g["kappa"], ci.get("kappa"), g["ac1"], ci.get("ac1"),
                     g["f1"], (v["ceiling_mean"] or {}).get("ac1"), v["alpha_experts"],
                     v["alpha_with_grader"]])
    return rows


def render(results: dict, figures: dict[str, bytes], *, title: str) -> str:
    gate = results["gate"]
    parts = [f"<h1>{html.escape(title)}</h1>",
             f"<p>{results['n_items']} items, {results['n_experts']} experts. "
             f"Gate: <b>{'PASSED' if results['passed'] else 'FAILED'}</b></p>"]
    parts += [f"<p class=flag>{html.escape(f)}</p>" for f in results["flags"]]
    parts.append(_table(["gate", "value", "threshold", "verdict"], [
        ["Pearson r", gate["pearson"]["value"], gate["pearson"]["threshold"],
         gate["pearson"]["passed"]],
        ["ICC2 (absolute agreement)", gate["icc2"]["value"], gate["icc2"]["threshold"],
         gate["icc2"]["passed"]],
        ["Alternative Annotator Test winning rate", gate["alt_test"]["winning_rate"], 0.5,
         gate["alt_test"]["passed"]]]))
    parts.append("<h2>Overall score and criteria (rubric points)</h2>")
    parts.append(_table(STAT_HEADER, stat_rows(results)))
    ceiling = results["overall"].get("ceiling")
    if ceiling:
        parts.append("<h2>Human ceiling</h2>")
        keys = list(ceiling["experts_mean"])
        parts.append(_table(["", *keys], [
            ["experts vs other experts (mean)", *ceiling["experts_mean"].values()],
            ["grader vs the same experts (mean)", *ceiling["grader_mean"].values()],
            ["grader vs all experts", *ceiling["grader_vs_all"].values()]]))
    parts.append("<h2>Error classes</h2>")
    parts.append(_table(TAG_HEADER, tag_rows(results)))
    parts.append("<h2>Breakdowns</h2>")
    for key, groups in results["breakdown"].items():
        parts.append(f"<h3>by {html.escape(key)}</h3>")
        parts.append(_table([key, "n", "Pearson r", "ICC2", "bias", "MAE"], [
            [g, v.get("n_items"), v.get("pearson"), v.get("icc2"), v.get("bias"), v.get("mae")]
            for g, v in groups.items()]))
    parts.append("<h2>Figures</h2>")
    for name, png in figures.items():
        data = base64.b64encode(png).decode()
        parts.append(f'<img alt="{name}" src="data:image/png;base64,{data}">')
    style = ("body{font-family:sans-serif;max-width:1100px;margin:2em auto}"
             "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;"
             "padding:3px 8px;text-align:right}.flag{color:#a60}img{margin:8px}")
    return (f"<!doctype html><html><head><meta charset=utf-8><title>{html.escape(title)}"
            f"</title><style>{style}</style></head><body>{''.join(parts)}</body></html>")


def export(data: CalibrationData, results: dict, out: Path, *, title: str) -> list[Path]:
    """Write report.html, report.json and one PNG per figure into `out`."""
    out.mkdir(parents=True, exist_ok=True)
    figures = all_figures(data, results)
    written = [out / "report.html", out / "report.json"]
    written[0].write_text(render(results, figures, title=title))
    written[1].write_text(json.dumps(results, indent=1))
    for name, png in figures.items():
        (out / f"{name}.png").write_bytes(png)
        written.append(out / f"{name}.png")
    return written
