"""`nmb results --site DIR`: the public leaderboard as a self-contained static folder that a
maintainer publishes as it is (any static host, or opened from disk).

The folder holds `index.html` (the three split tables of `results.publish.leaderboard_layout`, rendered
and escaped here, so the page reads without JavaScript; a small inline script sorts a table by
a click on a column's header), `leaderboard.json` (the same numbers, from `Results`), and
`figures/*.png` (one chart per split, shown below the tables: `results.publish.plots.leaderboard_chart`).
Nothing is loaded from elsewhere: the page's Content-Security-Policy allows only its own inline
style and script (by hash) and images from its folder, so even a name that got through escaping
could not load or run anything. Every number is the `Results` object's, the one `nmb results`
prints.
"""

from __future__ import annotations

import base64
import hashlib
import json
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from sqlalchemy import func
from sqlmodel import Session, select

from calibration.html import prepare_out
from calibration.plots import png
from calibration.terms import TERMS_NOT_RECORDED
from db.files import write_file
from db.models import Case, Response, Task
from errors import counted
from results.publish.leaderboard_layout import columns, split_tables
from results.publish.plots import leaderboard_chart
from results.publish.tables import PAGES, fmt, human_limitation
from results.results import Results, results_key
from stats.intervals import MIN_CASES

STYLE = """
body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:.5em 0 .3em;font-size:14px;width:100%}
th,td{border-bottom:1px solid #ddd;padding:4px 8px;text-align:right;white-space:nowrap}
th:first-child,td:first-child,th:nth-child(2),td:nth-child(2){text-align:left}
th button{font:inherit;font-weight:600;background:none;border:0;cursor:pointer;padding:0}
th[aria-sort=ascending] button::after{content:" \\25B2"}
th[aria-sort=descending] button::after{content:" \\25BC"}
tr.human td{background:#fff7e6}.ci{color:#777;font-size:12px}.note,.meta{color:#555;font-size:13px}
.flag{color:#a60}img{max-width:100%;width:640px}figure{margin:1em 0}
""".strip()

SCRIPT = """
document.querySelectorAll("table.sortable").forEach(function (table) {
  table.querySelectorAll("th button").forEach(function (button, col) {
    button.addEventListener("click", function () {
      var th = button.parentNode, desc = th.getAttribute("aria-sort") !== "descending";
      table.querySelectorAll("th").forEach(function (h) { h.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", desc ? "descending" : "ascending");
      var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
      function key(row) { var v = row.cells[col].getAttribute("data-v"); return v; }
      rows.sort(function (a, b) {
        var x = key(a), y = key(b);
        if (x === "" || y === "") { return (x === "") - (y === ""); }
        var nx = Number(x), ny = Number(y), c;
        c = isNaN(nx) || isNaN(ny) ? x.localeCompare(y) : nx - ny;
        return desc ? -c : c;
      });
      rows.forEach(function (row) { body.appendChild(row); });
    });
  });
});
""".strip()


def _sha(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


CSP = (f"default-src 'none'; img-src 'self'; style-src {_sha(STYLE)}; script-src {_sha(SCRIPT)}; "
       "base-uri 'none'; form-action 'none'")


def study_version(s: Session, results: Results) -> dict[str, Any]:
    """What the site was generated from: the bundles, counts, a fingerprint of the judgments
    (`results_key`: changes whenever a grade, response or expert score does) and the tool."""
    try:
        tool = version("neural-medbench-studio")
    except PackageNotFoundError:  # pragma: no cover (run from a tree that is not installed)
        tool = "unknown"
    key = repr(results_key(s, config_id=results.grader["id"])).encode()
    return {"bundles": sorted(s.exec(select(Case.bundle).distinct()).all()),
            "cases": s.exec(select(func.count()).select_from(Case)).one(),
            "tasks": s.exec(select(func.count()).select_from(Task)).one(),
            "responses": s.exec(select(func.count()).select_from(Response)).one(),
            "fingerprint": hashlib.sha256(key).hexdigest()[:16], "tool": tool,
            "generated": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")}


def _sort_value(v: Any) -> str:
    value = getattr(v, "value", v)
    return "" if value is None else str(value)


def _cell(v: Any) -> tuple[str, str]:
    """A cell's text, and an estimate's interval apart (shown smaller)."""
    text = fmt(v, 2)
    value, _, interval = text.partition(" ") if " [" in text else (text, "", "")
    return value, interval


PAGES.filters["cell"], PAGES.filters["sort_value"] = _cell, _sort_value


def render(results: Results, study: dict[str, Any], figures: dict[str, str]) -> str:
    """index.html: the study's version, the grader's validation state, the split tables."""
    g = results.grader
    state = (f"validated (a passing held-out look) under "
             f"{g.get('validation_terms') or TERMS_NOT_RECORDED}" if g["validated"]
             else "NOT validated: its grades are not a validated measure")
    meta = (f"Study: bundles {', '.join(study['bundles']) or '–'}; "
            f"{counted(study['cases'], 'case')}, {counted(study['tasks'], 'task')}, "
            f"{counted(study['responses'], 'response')}; data fingerprint "
            f"{study['fingerprint']}; generated {study['generated']} by Neural-MedBench Studio "
            f"{study['tool']}.")
    grader = (f"Grader: config #{g['id']} {g['name']} (model {g['model']}, prompt "
              f"{g['prompt_version']}), {state}. Judgments: {results.judged_by}; rows stand "
              f"on {results.view}. Intervals: "
              "95%, from resamples of cases (with their tasks; for human groups, people and "
              f"cases), none from fewer than {MIN_CASES} cases. Rows shaded are human baselines "
              "(physicians, students). " + human_limitation(results)).strip()
    ts = split_tables(results)
    return PAGES.get_template("site.html").render(
        csp=CSP, style=STYLE, script=SCRIPT, meta=meta, grader=grader, results=results,
        tables=ts, charts=[(t.title, figures[t.name]) for t in ts if t.name in figures])


def data(results: Results, study: dict[str, Any]) -> dict[str, Any]:
    """leaderboard.json: the study's version, the grader, BERTScore's model, the splits."""
    full = results.to_json()
    return {"study": study, "grader": full["grader"], "judged_by": full["judged_by"],
            "view": results.view, "self_graded": full["self_graded"],
            "coverage": full["coverage"],
            "ks": full["ks"], "flags": full["flags"], "columns": columns(results),
            "bertscore": full["bertscore"], "splits": full["splits"]}


def write_site(out: Path, results: Results, study: dict[str, Any]) -> list[Path]:
    """Write index.html, leaderboard.json and figures/split-*.png into `out`."""
    prepare_out(out)
    (out / "figures").mkdir(exist_ok=True)
    written, figures = [], {}
    for sp in results.splits:
        fig = leaderboard_chart([c.row() for c in sp.cells], tuple(results.ks))
        if fig is not None:
            name = f"split-{sp.name}.png"
            written.append(write_file(out / "figures" / name, png(fig)))
            figures[f"split-{sp.name}"] = name
    for name, text in (("leaderboard.json", json.dumps(data(results, study), indent=1)),
                       ("index.html", render(results, study, figures))):
        written.append(write_file(out / name, text))
    return written
