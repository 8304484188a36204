"""The results as tables, and the tables as Markdown, CSV, LaTeX (booktabs) and HTML.

`tables(results)` is the one place that decides what each table shows; every format, the page
and the HTML report render those tables. An `Estimate` cell reads "0.600 [0.517, 0.700]" (the
95% interval in brackets), or "0.600 (too few cases)" where the interval rule gives none; in
CSV it becomes three columns (value, low, high) so a script can read it, low and high reading
"too few cases" where there is no interval. Text from the study (model names, people's names)
is escaped for each format (in CSV, text a spreadsheet would run as a formula is quoted, as
`nmb export` does).
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from calibration.templating import environment
from db.export import neutralise
from errors import counted
from results.anchoring import LABELS
from results.anchoring import MEASURES as ANCHORING
from results.compare import Comparison
from results.judgments import ALL_MODELS
from results.leaderboard import Cell
from results.results import Results
from results.sensitivity import SELECTIONS
from stats.resample import MIN_CASES, Estimate

SOURCE_COLUMNS = ["from experts", "from grader"]


@dataclass
class Table:
    name: str  # file stem: overall, matrix, cells, people, errors, anchoring, compare, cost, ...
    title: str
    header: list[str]
    rows: list[list[Any]]
    note: str = ""


def fmt(v: Any, digits: int = 3) -> str:
    """A value as text: an estimate with its interval, None as a dash."""
    if isinstance(v, Estimate):
        if v.value is None:
            return "–"
        ci = (f" [{v.ci[0]:.{digits}f}, {v.ci[1]:.{digits}f}]" if v.ci is not None
              else f" ({v.note})" if v.note else "")
        return f"{v.value:.{digits}f}{ci}"
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:.{digits}f}" if abs(v) >= 10 ** -digits or v == 0 else f"{v:.2g}"
    return str(v)


BERTSCORE = "BERTScore (secondary)"


def _measures(results: Results) -> list[str]:
    return ([f"pass@{k}" for k in results.ks] + [f"top-{k}" for k in results.ks]
            + ["rubric score"] + ([BERTSCORE] if results.bertscore else []))


def _estimates(c: Cell) -> list[Estimate]:
    return [*c.pass_at.values(), *c.top.values(), c.score, *([c.bertscore] if c.bertscore else [])]


def _sources(c: Cell) -> list[int]:
    return [c.sources.get("experts", 0), c.sources.get("grader", 0)]


SELF_GRADED = "self-graded"
MISSING_COLUMN = "missing"


def self_graded(r: Results, who: str, group: str) -> str | None:
    """A row's self-grading mark (results.fairness): "same model" or "same family (..)" for
    a model graded by its own family; for all models together, the models it includes."""
    if group != "model":
        return None
    if who == ALL_MODELS:
        return f"includes {', '.join(r.self_graded)}" if r.self_graded else None
    return r.self_graded.get(who)


#: One plain line per measure, for a clinician reading the results (the page and the report).
MEASURE_LINES = (
    ("pass@k", "the chance that at least one of k sampled answers to a task is judged correct, "
               "averaged over tasks (the unbiased estimator of Chen et al. 2021); pass@1 is the "
               "plain accuracy of one answer"),
    ("top-k", "differential-diagnosis tasks whose correct diagnosis is among the first k "
              "diagnoses of the answer's differential"),
    ("rubric score", "the mean of the rubric's criteria (0-4), as the judge scored them"),
    ("correct diagnosis", "the judge's yes/no on whether the answer's final diagnosis is the "
                          "reference one: what pass@k counts"),
    ("[a, b]", "the 95% interval, from resamples of cases (and, for human groups, people); "
               "\"n < 10\" where fewer cases give none"),
)


def headline_table(results: Results) -> Table:
    """The results' first table: per model and human group, pass@ks[0] with its interval in
    each split (or over every task when the results have no splits); "n < MIN_CASES" instead of
    an interval where there are too few cases (the compact form of "too few cases")."""
    k = results.ks[0]

    def short(e: Estimate | None) -> str:
        if e is None or e.value is None:
            return "–"
        return (f"{e.value:.2f} [{e.ci[0]:.2f}, {e.ci[1]:.2f}]" if e.ci is not None
                else f"{e.value:.2f} (n < {MIN_CASES})")

    columns = [(sp.title, {c.who: c for c in sp.cells}) for sp in results.splits] or [
        ("all tasks", {c.who: c for c in results.overall})]
    header = ["who", "group", *[f"pass@{k} · {title}" for title, _ in columns]]
    rows = [[c.who, c.group, *[short(cs[c.who].pass_at.get(k) if c.who in cs else None)
                               for _, cs in columns]] for c in results.overall]
    return Table("headline", f"pass@{k} per model and human group"
                 + (" by split" if results.splits else ""), header, rows,
                 f"Judge: {results.judge} ({results.judged_by}); rows stand on {results.view}.")


def tables(results: Results) -> list[Table]:
    """Every table of the results, in reading order."""
    r, measures = results, _measures(results)
    judged = (f"Judge: {r.judge} ({r.judged_by}; grader config #{r.grader['id']}): "
              f"{counted(r.sources[r.judge], 'response')}, {r.unjudged} not judged by it. "
              f"Rows stand on {r.view}.")
    if r.bertscore:
        judged += " " + bertscore_note(r)
    out = [Table("overall", "Overall, per model and human group",
                 ["who", "group", "tasks", "cases", "people", *measures, *SOURCE_COLUMNS,
                  MISSING_COLUMN, SELF_GRADED],
                 [[c.who, c.group, c.tasks, c.cases, c.people, *_estimates(c), *_sources(c),
                   c.missing, c.self_graded] for c in r.overall], judged)]
    if r.cells:
        keys = r.by
        cell_ids = sorted({tuple(c.keys[k] for k in keys) for c in r.cells}, key=str)
        by_who = {(c.who, tuple(c.keys[k] for k in keys)): c for c in r.cells}
        first = f"pass@{r.ks[0]}"
        out.append(Table(
            "matrix", f"{first} per {' x '.join(keys)}",
            ["who", *(" ".join(str(x) for x in cid) for cid in cell_ids), SELF_GRADED],
            [[c.who, *((by_who[(c.who, cid)].pass_at[r.ks[0]] if (c.who, cid) in by_who
                        else None) for cid in cell_ids), c.self_graded] for c in r.overall],
            f"{first} with its 95% interval in each cell (none from fewer than {MIN_CASES} "
            "cases: 'too few cases'). " + judged))
        out.append(Table(
            "cells", f"Per {' x '.join(keys)}",
            ["who", "group", *keys, "tasks", "cases", "people", *measures, *SOURCE_COLUMNS,
             MISSING_COLUMN, SELF_GRADED],
            [[c.who, c.group, *(c.keys[k] for k in keys), c.tasks, c.cases, c.people,
              *_estimates(c), *_sources(c), c.missing, c.self_graded] for c in r.cells],
            judged))
    one = [1] if 1 in r.ks else []  # one answer per task: pass@1 only
    out.append(Table(
        "people", "One row per person",
        ["person", "group", "tasks", *(f"pass@{k}" for k in one),
         *(f"top-{k}" for k in r.ks), "rubric score", *SOURCE_COLUMNS, MISSING_COLUMN],
        [[c.who, c.keys["role"], c.tasks, *(c.pass_at[k] for k in one), *c.top.values(),
          c.score, *_sources(c), c.missing] for c in r.people],
        "People are pseudonymised (user-<id>) unless revealed; intervals resample their cases. "
        + judged))
    classes = [*r.error_classes, "untagged"]
    out.append(Table(
        "errors", "Error classes among wrong responses",
        ["who", "tagged by", "wrong responses", *classes, SELF_GRADED],
        [[e.who, e.source, e.wrong, *(e.shares[c] for c in classes),
          self_graded(r, e.who, e.group)] for e in r.errors],
        "Share of the wrong responses (each split equally among its tags) with a 95% interval "
        f"resampling cases; wrong and tagged by the judge ({r.judge}); missing answers are not "
        "wrong responses here (nothing to tag)."))
    out.append(Table(
        "errors_compared", "Error classes: experts and grader on the same responses",
        ["who", "tagged by", "wrong responses", "disputed", *classes, SELF_GRADED],
        [[e.who, e.source, e.wrong, e.disputed, *(e.shares[c] for c in classes),
          self_graded(r, e.who, e.group)] for e in r.errors_compared],
        "Only the responses both the experts and the grader judged, and both judged wrong; "
        "disputed: both judged, only one of them wrong (not compared)."))
    out.append(Table(
        "anchoring", "Anchoring on multi-turn tasks",
        ["who", "conversations", "tasks", "people", "final correct",
         *(f"{LABELS[m]}{suffix}" for m in ANCHORING for suffix in ("", " k/n")),
         "on marked tasks", "without stage judgments", MISSING_COLUMN, SELF_GRADED],
        [[a.who, a.conversations, a.tasks, a.people, a.final_correct,
          *(x for m in ANCHORING for x in (a.shares[m].estimate,
                                           f"{a.shares[m].k}/{a.shares[m].n}")),
          a.marked, a.unjudged, a.missing, self_graded(r, a.who, a.group)]
         for a in r.anchoring],
        f"Judge: {r.judge}; change of the leading diagnosis: the grader's. Final correct is "
        "pass@1 on these tasks (the final answer is the last stage, judged by the response's "
        "correct-diagnosis judgment; missing answers counted as pass@1 counts them). Each share "
        "is its k/n (conversations with the outcome / in the condition, pooled), its 95% "
        "interval resampling cases (a human group's people too) "
        "(docs/results.md: definitions and a worked example)."))
    out.append(Table(
        "final_answer_check", "Final-answer check: grades contradicting their last stage",
        ["response", "who", "person", "task", "correct_diagnosis", "last stage"],
        [[c.response_id, c.who, c.person, c.task_id, c.correct_diagnosis, c.last_stage]
         for c in r.conflicts],
        f"Grades of config #{r.grader['id']} whose correct_diagnosis differs from their own "
        "judgment of the last answer; the results count correct_diagnosis."))
    out.append(Table(
        "stage_agreement", "Grader and experts on the same stage answers",
        ["answers", "pairs", "responses", "both correct", "both wrong", "grader only correct",
         "experts only correct", "agreement", "Cohen's kappa"],
        [[a.answers, a.pairs, a.responses, a.both_correct, a.both_wrong,
          a.grader_only_correct, a.experts_only_correct, a.agreement, a.kappa]
         for a in r.stage_agreement],
        "Multi-turn responses both judged; 95% intervals resample cases."))
    out.append(Table(
        "sensitivity", "Sensitivity to the judge",
        ["who", "group", "measure", *(x for how in SELECTIONS for x in (how, f"n ({how})")),
         SELF_GRADED],
        [[v.who, v.group, v.measure,
          *(x for how in SELECTIONS for x in (v.estimates[how], v.responses[how])),
          self_graded(r, v.who, v.group)] for v in r.sensitivity],
        "Each estimate under every way of judging; the last two columns judge the same "
        "responses (those experts scored), so they differ by the instrument alone."))
    g = r.grader_cost
    out.append(Table(
        "cost", "Cost and size per model, and the grader's cost",
        ["who", "responses", "with usage", "prompt tokens", "completion tokens", "images",
         "priced", "USD per response", "USD per task"],
        [[m.model, m.responses, m.with_usage, m.prompt_tokens, m.completion_tokens, m.images,
          m.priced, m.cost_per_response, m.cost_per_task] for m in r.model_costs]
        + [[f"grader #{g.config_id}", g.graded, g.priced, g.prompt_tokens, g.completion_tokens,
            None, g.priced, g.cost_per_graded_response, None]],
        "Means per response over the responses where known; USD per task = USD per response "
        "x responses per task. Grader: per graded response whose request was sent and priced."))
    if r.coverage:
        out.append(Table(
            "coverage", "Coverage: the answers each row should stand on",
            ["who", "group", "answers", "missing", "without a response", "not graded",
             "missing answers", SELF_GRADED],
            [[c.who, c.group, c.expected, c.missing, c.no_response, c.not_graded,
              ("left out" if r.answered_only else "counted wrong") if c.missing else None,
              self_graded(r, c.who, c.group)] for c in r.coverage],
            "A model's answers: every task of the study x its samples per task (the most it "
            "has on any task); a human group's: its responses. Missing: no response, or not "
            f"graded by grader config #{r.grader['id']}. Rows stand on {r.view}."))
    if r.retired:
        out.append(Table(
            "retired", "Retired: left out of every table",
            ["kind", "item", "reason", "by", "at"],
            [[x.kind, x.item_id, x.reason, x.actor, x.at] for x in r.retired],
            "Retired with nmb retire (a case takes its tasks and their responses, a model or a "
            "collection run its responses, a grader run its grades); their scores stay in the "
            "database and in the exports, marked in the column 'retired'."))
    if r.comparisons:
        out.append(compare_table(r.comparisons, r))
    return out


def compare_table(comparisons: list[Comparison], results: Results | None = None) -> Table:
    """The paired differences of `nmb results --compare` (and /results), the self-grading
    mark of each side (A, B) where `results` gives them."""
    def marked(c: Comparison) -> str | None:
        if results is None:
            return None
        sides = [f"{side}: {mark}" for side, who, group in (("A", c.a, c.a_group),
                                                            ("B", c.b, c.b_group))
                 if (mark := self_graded(results, who, group))]
        return "; ".join(sides) or None

    return Table(
        "compare", "Paired differences (A - B) on the tasks both answered",
        ["A", "B", "measure", "tasks", "cases", "A's estimate", "B's estimate", "A - B",
         SELF_GRADED],
        [[c.a, c.b, m, d.tasks, d.cases, d.a, d.b, d.difference, marked(c)]
         for c in comparisons for m, d in c.differences.items()],
        "Each side estimated as in the main tables, on the tasks both answered; 95% interval "
        "from the same cases drawn for both sides (a human group's people drawn too): "
        f"difference +/- t sqrt(variance); none from fewer than {MIN_CASES} cases "
        "(docs/results.md).")


def bertscore_note(r: Results) -> str:
    b = r.bertscore
    return "" if b is None else (
        f"{BERTSCORE}: F1 against the reference answer with model {b.model} "
        f"(key {b.model_key[:12]}, layer {b.layer}, {'rescaled' if b.rescaled else 'not rescaled'}"
        f"), {counted(b.scored, 'response')}; a similarity, not a judgment, never part of the gate.")


# ------------------------------------------------------------------ formats


def _md_cell(v: Any) -> str:
    return re.sub(r"([\\`*_\[\]<>|#!])", r"\\\1", fmt(v))  # no links, images, HTML


def markdown(ts: list[Table], results: Results) -> str:
    g = results.grader
    terms = f" Validated under {_md_cell(g['validation_terms'])}." if g.get(
        "validation_terms") else ""
    out = [f"Grader config #{g['id']} ({_md_cell(g['name'])}, "
           f"prompt {g['prompt_version']}). Judge: {results.judge} "
           f"({_md_cell(results.judged_by)}).{terms}", ""]
    out += [f"> {_md_cell(f)}" for f in results.flags]
    for t in ts:
        out += ["", f"### {t.title}", ""]
        out += ["| " + " | ".join(t.header) + " |", "|" + "---|" * len(t.header)]
        out += ["| " + " | ".join(_md_cell(v) for v in row) + " |" for row in t.rows]
        if t.note:
            out += ["", _md_cell(t.note)]
    return "\n".join(out) + "\n"


def csv_text(t: Table) -> str:
    """One table as CSV; each estimate as value, low, high."""
    estimate = [any(isinstance(row[i], Estimate) for row in t.rows) for i in range(len(t.header))]
    header = []
    for name, est in zip(t.header, estimate, strict=True):
        header += [name, f"{name} low", f"{name} high"] if est else [name]
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    for row in t.rows:
        cells: list[Any] = []
        for v, est in zip(row, estimate, strict=True):
            if est:
                e = v if isinstance(v, Estimate) else Estimate(None)
                cells += [e.value, *(e.ci or [e.note, e.note])]
            else:
                cells.append(v)
        w.writerow(["" if v is None else neutralise(v) for v in cells])
    return buf.getvalue()


_TEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
        "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
        "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}"}


def _tex(text: str) -> str:
    return "".join(_TEX.get(ch, ch) for ch in text)


def _tex_cell(v: Any) -> str:
    if isinstance(v, Estimate) and v.value is not None:
        ci = (rf" {{\footnotesize[{v.ci[0]:.2f}, {v.ci[1]:.2f}]}}" if v.ci is not None
              else rf" {{\footnotesize({_tex(v.note)})}}" if v.note else "")
        return f"{v.value:.2f}{ci}"
    return _tex(fmt(v)).replace("–", "--")


def latex(ts: list[Table]) -> str:
    """Every table as a booktabs `table` environment (needs \\usepackage{booktabs})."""
    out = []
    for t in ts:
        cols = "l" + "r" * (len(t.header) - 1)
        out += [r"\begin{table}[ht]", r"\centering",
                rf"\caption{{{_tex(t.title)}. {_tex(t.note)}}}", rf"\label{{tab:{t.name}}}",
                r"\resizebox{\linewidth}{!}{%", rf"\begin{{tabular}}{{{cols}}}", r"\toprule",
                " & ".join(_tex(h) for h in t.header) + r" \\", r"\midrule"]
        out += [" & ".join(_tex_cell(v) for v in row) + r" \\" for row in t.rows]
        out += [r"\bottomrule", r"\end{tabular}}", r"\end{table}", ""]
    return "\n".join(out)


PAGES = environment(Path(__file__).with_name("templates"))
PAGES.filters["estimate"] = fmt


def html_table(t: Table) -> str:
    return PAGES.get_template("table.html").render(t=t)
