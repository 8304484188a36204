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
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
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
from results.publish.plots import breadth_scatter, leaderboard_chart
from results.publish.tables import (
    BERTSCORE,
    MISSING_COLUMN,
    PAGES,
    SELF_GRADED,
    Table,
    csv_text,
    fmt,
)
from results.results import Results, results_key
from stats.intervals import MIN_CASES
from stats.resample import Estimate

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
.badge{display:inline-block;border-radius:3px;padding:0 4px;margin-left:4px;font-size:11px;color:#fff}
.new{background:#2a7ae2}.validated{background:#2e8540}.unvalidated{background:#a60}
#search{font:inherit;padding:4px 8px;width:20em}.downloads a{margin-right:1em}
tr[hidden]{display:none}section{overflow-x:auto}
""".strip()

SCRIPT = """
var search = document.getElementById("search");
search.addEventListener("input", function () {
  var q = search.value.trim().toLowerCase();
  document.querySelectorAll("table.sortable tbody tr").forEach(function (row) {
    row.hidden = q !== "" && row.textContent.toLowerCase().indexOf(q) < 0;
  });
});
document.querySelectorAll(".downloads a").forEach(function (link) {
  link.addEventListener("click", function (event) {
    var data = JSON.parse(document.getElementById("downloads").textContent);
    var text = (data[link.getAttribute("data-table")] || {})[link.getAttribute("data-kind")];
    if (text === undefined) { return; }
    event.preventDefault();
    var type = link.getAttribute("data-kind") === "csv" ? "text/csv" : "application/json";
    var a = document.createElement("a");
    a.href = URL.createObjectURL(new Blob([text], {type: type}));
    a.download = link.getAttribute("download");
    document.body.appendChild(a);
    a.click();
    a.remove();
  });
});
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


@dataclass(frozen=True)
class Percent:
    """An estimate on 0-1 shown as a percentage with its interval."""

    estimate: Estimate | None

    @property
    def value(self) -> float | None:
        return None if self.estimate is None else self.estimate.value


@dataclass(frozen=True)
class Released:
    """A model's release date, with the badge "new" when it is recent."""

    date: str | None
    new: bool = False

    @property
    def value(self) -> str | None:
        return self.date


def _sort_value(v: Any) -> str:
    value = getattr(v, "value", v)
    return "" if value is None else str(value)


def _cell(v: Any) -> tuple[str, str]:
    """A cell's text, and an estimate's interval apart (shown smaller)."""
    if isinstance(v, Percent):
        e = v.estimate
        if e is None or e.value is None:
            return "–", ""
        interval = (f"[{e.ci[0] * 100:.1f}, {e.ci[1] * 100:.1f}]" if e.ci
                    else f"({e.note})" if e.note else "")
        return f"{e.value * 100:.1f}%", interval
    if isinstance(v, Released):
        return v.date or "–", ""
    text = fmt(v, 2)
    value, _, interval = text.partition(" ") if " [" in text else (text, "", "")
    return value, interval


def _is_new(v: Any) -> bool:
    return isinstance(v, Released) and v.new


PAGES.filters["cell"], PAGES.filters["sort_value"] = _cell, _sort_value
PAGES.tests["new"] = _is_new
NEW_DAYS = 90  # a model released this many days before the site was generated is "new"
SITE_COLUMNS = ["rank", "who", "group", "maker", "size", "released", "kind", "tasks", "people"]


def _ranks(values: list[float | None]) -> list[int | None]:
    """Competition ranks (1, 2, 2, 4) of the values, best (largest) first; None for None."""
    known = sorted(v for v in values if v is not None)[::-1]
    return [None if v is None else 1 + sum(1 for k in known if k > v) for v in values]


def site_tables(results: Results, today: date) -> list[Table]:
    """One table per split as the site shows it: rank (models, by pass@k of the first k),
    the model card's columns, pass@k and the rubric score as percentages with intervals."""
    out = []
    for sp in results.splits:
        k = results.ks[0]
        first = [c.pass_at[k].value if c.group == "model" else None for c in sp.cells]
        rows = []
        for rank, c in zip(_ranks(first), sp.cells, strict=True):
            card = results.cards.get(c.who, {}) if c.group == "model" else {}
            released = card.get("released")
            new = bool(released) and 0 <= (today - date.fromisoformat(released)).days <= NEW_DAYS
            rows.append([rank, c.who, c.group, card.get("maker"), card.get("params"),
                         Released(released, new), card.get("kind"), c.tasks, c.people,
                         *(Percent(e) for e in c.pass_at.values()), c.bertscore,
                         Percent(c.score), c.missing, c.self_graded])
        header = [*SITE_COLUMNS, *(f"pass@{k} %" for k in results.ks), BERTSCORE,
                  "rubric score %", MISSING_COLUMN, SELF_GRADED]
        out.append(Table(f"split-{sp.name}",
                         f"{sp.title} (level {'+'.join(map(str, sp.levels))})", header, rows))
    return out


def _plain(v: Any) -> Any:
    """A site cell as a download holds it: the number, not its rendering."""
    if isinstance(v, Percent):
        e = v.estimate
        return None if e is None else {"value": e.value, "ci": e.ci, "note": e.note}
    if isinstance(v, Released):
        return v.date
    if isinstance(v, Estimate):
        return {"value": v.value, "ci": v.ci, "note": v.note}
    return v


def split_downloads(t: Table) -> dict[str, str]:
    """A split table as CSV (an estimate as value, low, high: `tables.csv_text`) and JSON."""
    flat = Table(t.name, t.title, [h.removesuffix(" %") for h in t.header],
                 [[v.estimate if isinstance(v, Percent) else _plain(v) for v in row]
                  for row in t.rows])
    rows = [dict(zip((h.removesuffix(" %") for h in t.header), (_plain(v) for v in row),
                     strict=True)) for row in t.rows]
    return {"csv": csv_text(flat), "json": json.dumps({"split": t.name.removeprefix("split-"),
                                                       "title": t.title, "rows": rows},
                                                      indent=1)}


Switch = Sequence[tuple[str, str | None]]  # (label, link to its page; None: this page)
VERSIONS = "versions"  # the site's folder of the benchmark versions' pages


def render(results: Results, study: dict[str, Any], figures: dict[str, str],
           breadth: list[tuple[str, str]] = (), switch: Switch = ()) -> str:
    """index.html: the study's version, the grader's validation state, the split tables;
    `switch`: the benchmark versions' pages (`version_switch`)."""
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
              "(physicians, students).")
    notes = {t.name: t.note for t in split_tables(results)}
    ts = site_tables(results, datetime.strptime(study["generated"][:10], "%Y-%m-%d").date())
    for t in ts:
        t.note = (notes[t.name] + " Rank: models by pass@" + str(results.ks[0]) + " (ties share "
                  "a rank; human baselines unranked). Percentages with their 95% interval; "
                  f"'new': released within {NEW_DAYS} days of the site's date (model cards).")
    embedded = json.dumps({t.name: split_downloads(t) for t in ts})
    for raw, escaped in (("&", "\\u0026"), ("<", "\\u003c"), (">", "\\u003e")):
        embedded = embedded.replace(raw, escaped)  # no "</script>" can close the data block
    badge = ("validated", "grader validated") if g["validated"] else (
        "unvalidated", "grader not validated")
    return PAGES.get_template("site.html").render(
        csp=CSP, style=STYLE, script=SCRIPT, meta=meta, grader=grader, results=results,
        tables=ts, charts=[(f"{t.title}: pass@1 chart", figures[t.name]) for t in ts
                           if t.name in figures] + list(breadth),
        badge=badge, terms=g.get("validation_terms") or "", downloads=embedded, switch=switch)


def data(results: Results, study: dict[str, Any]) -> dict[str, Any]:
    """leaderboard.json: the study's version, the grader, BERTScore's model, the splits."""
    full = results.to_json()
    return {"study": study, "grader": full["grader"], "judged_by": full["judged_by"],
            "view": results.view, "self_graded": full["self_graded"],
            "coverage": full["coverage"],
            "ks": full["ks"], "flags": full["flags"], "columns": columns(results),
            "bertscore": full["bertscore"], "splits": full["splits"], "cards": full["cards"],
            "breadth": full["breadth"]}


def version_switch(names: Sequence[str], here: str | None) -> Switch:
    """The links between the site's pages: the study now (index.html) and each benchmark
    version's (versions/NAME/index.html), from the page of `here` (None: the study now)."""
    up = "../../" if here is not None else ""
    return [("now", None if here is None else f"{up}index.html"),
            *((name, None if name == here else
               f"{up}{VERSIONS}/{name}/index.html" if here is None else f"../{name}/index.html")
              for name in names)]


def write_site(out: Path, results: Results, study: dict[str, Any],
               switch: Switch = ()) -> list[Path]:
    """Write index.html, leaderboard.json, figures/split-*.png and downloads/split-*.csv and
    .json into `out`; `switch`: the links to the other benchmark versions' pages."""
    prepare_out(out)
    (out / "figures").mkdir(exist_ok=True)
    (out / "downloads").mkdir(exist_ok=True)
    written, figures = [], {}
    today = datetime.strptime(study["generated"][:10], "%Y-%m-%d").date()
    for t in site_tables(results, today):
        for ext, text in split_downloads(t).items():
            written.append(write_file(out / "downloads" / f"{t.name}.{ext}", text))
    for sp in results.splits:
        fig = leaderboard_chart([c.row() for c in sp.cells], tuple(results.ks))
        if fig is not None:
            name = f"split-{sp.name}.png"
            written.append(write_file(out / "figures" / name, png(fig)))
            figures[f"split-{sp.name}"] = name
    breadth = []
    for i, axis in enumerate(results.breadth, 1):
        if (fig := breadth_scatter(axis)) is not None:
            written.append(write_file(out / "figures" / f"breadth-{i}.png", png(fig)))
            breadth.append((f"Breadth ({axis.benchmark}) against depth", f"breadth-{i}.png"))
    for name, text in (("leaderboard.json", json.dumps(data(results, study), indent=1)),
                       ("index.html", render(results, study, figures, breadth, switch))):
        written.append(write_file(out / name, text))
    return written
