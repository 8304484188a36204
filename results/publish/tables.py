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
from stats.rank_correlation import MIN_UNITS, RankCorrelation
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


#: A human group of fewer people than this is named a small sample where it is shown.
FEW_PEOPLE = 10


def human_limitation(r: Results) -> str:
    """The small-sample limitation of the human baselines shown, in one sentence ("" when every
    human group has `FEW_PEOPLE` people or more)."""
    small = [(c.who, c.people) for c in r.overall
             if c.group == "human" and c.people is not None and c.people < FEW_PEOPLE]
    if not small:
        return ""
    named = ", ".join(f"{who}: {counted(n, 'person', 'people')}" for who, n in small)
    return (f"Limitation: the human baselines stand on few people ({named}); their intervals "
            "carry the spread between these people and cases, and a group this small says "
            "little about its profession at large.")


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
                   c.missing, c.self_graded] for c in r.overall],
                 " ".join(x for x in (judged, human_limitation(r)) if x))]
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
        "Share of the wrong responses (each split equally among its tags) with an unadjusted "
        "95% interval (each on its own, no multiplicity adjustment) resampling cases; "
        f"wrong and tagged by the judge ({r.judge}); missing answers are not "
        "wrong responses here (nothing to tag)."))
    out.append(Table(
        "errors_compared", "Error classes: experts and grader on the same responses",
        ["who", "tagged by", "wrong responses", "disputed", *classes, SELF_GRADED],
        [[e.who, e.source, e.wrong, e.disputed, *(e.shares[c] for c in classes),
          self_graded(r, e.who, e.group)] for e in r.errors_compared],
        "Only the responses both the experts and the grader judged, and both judged wrong; "
        "disputed: both judged, only one of them wrong (not compared). Intervals unadjusted "
        "for multiplicity."))
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
        "Each estimate under every way of judging, with an unadjusted 95% interval (no "
        "multiplicity adjustment); the last two columns judge the same responses (those "
        "experts scored), so they differ by the instrument alone."))
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
    out += beside_tables(r)
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


CARD_COLUMNS = ["maker", "version", "released", "training cutoff", "web access", "size", "kind"]
CARD_KEYS = ["maker", "version", "released", "training_cutoff", "web_access", "params", "kind"]


def _correlation(c: RankCorrelation | None, which: str) -> list[Any]:
    """[estimate with interval, p] of Spearman or Kendall."""
    if c is None:
        return [None, None]
    value = c.spearman if which == "spearman" else c.kendall
    ci = c.spearman_ci if which == "spearman" else c.kendall_ci
    p = c.spearman_p if which == "spearman" else c.kendall_p
    return [Estimate(value, ci, c.note if ci is None else None), p]


def beside_tables(r: Results) -> list[Table]:
    """The tables beside the main ones: efficiency (one full run), model cards, conditions,
    breadth against depth (a summary and one table per benchmark)."""
    out = []
    if r.efficiency:
        out.append(Table(
            "efficiency", "Efficiency: one full run per model",
            ["who", "tasks", "images", "image tokens (est.)", "text tokens in", "tokens out",
             "USD per run", "pass@1", "responses with usage", "priced", SELF_GRADED],
            [[e.model, e.tasks, e.images, e.image_tokens, e.text_tokens_in, e.tokens_out,
              e.cost_usd, e.pass_at_1, e.with_usage, e.priced, r.self_graded.get(e.model)]
             for e in r.efficiency],
            "One answer to every task of the study: the means per response (over the responses "
            "with usage) times the tasks. Image tokens are estimated at 255 per image (OpenAI, "
            "high detail, one tile); text tokens in are the prompt tokens less that estimate; "
            "'–' where no response recorded usage or a price (docs/results.md)."))
    if r.cards:
        out.append(Table(
            "model_cards", "Model cards", ["who", *CARD_COLUMNS],
            [[who, *(card.get(k) for k in CARD_KEYS)] for who, card in r.cards.items()],
            "From nmb models set (a MODEL@CONDITION shows its model's card); '–': not recorded."))
    if r.conditions:
        out.append(Table(
            "conditions", "Conditions: what each added to the exam, verbatim",
            ["who", "model", "condition", "strategy", "answers per turn", "added text"],
            [[c.label, c.model, c.condition, c.strategy, c.votes, c.added_text or "(nothing)"]
             for c in r.conditions],
            "The exam is the human exam; a condition appends its text to the system message "
            "only (docs/collect.md, Conditions). Self-consistency: the majority final answer "
            "of that many answers per turn."))
    if r.breadth:
        out.append(Table(
            "breadth", "Breadth against depth: rank correlation across models",
            ["benchmark", "models", "Spearman (pass@1)", "p (Spearman)",
             "Kendall tau-b (pass@1)", "p (Kendall)", "Spearman (rubric score)",
             "p (rubric score)", "p from", "no depth row"],
            [[a.benchmark, a.models, *_correlation(a.pass_at_1, "spearman"),
              *_correlation(a.pass_at_1, "kendall"), *_correlation(a.rubric, "spearman"),
              a.pass_at_1.p_method, ", ".join(a.unmatched) or None] for a in r.breadth],
            "Breadth: each model's published score on the benchmark (nmb breadth import); "
            "depth: its pass@1 (and rubric score) here. 95% interval: percentile bootstrap over "
            f"models, none from fewer than {MIN_UNITS} models; p: permutation test of no "
            "association, exact up to 8 models (docs/results.md)."))
        for i, a in enumerate(r.breadth, 1):
            out.append(Table(
                f"breadth_{i}", f"Breadth ({a.benchmark}) against depth, per model",
                ["who", "breadth score", "breadth rank", "pass@1", "depth rank", "rank gap",
                 "rubric score", "source", SELF_GRADED],
                [[x.model, x.breadth, x.breadth_rank, x.depth, x.depth_rank, x.rank_gap,
                  x.rubric, x.source, r.self_graded.get(x.model)] for x in a.rows],
                "Rank 1 = best on that axis (ties share their mean rank); rank gap = breadth "
                "rank - depth rank (positive: better in depth than in breadth)."))
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

    family = sum(d.holm is not None for c in comparisons for d in c.differences.values())
    return Table(
        "compare", "Paired differences (A - B) on the tasks both answered",
        ["A", "B", "measure", "tasks", "cases", "A's estimate", "B's estimate",
         "A - B (unadjusted 95%)", "A - B (Holm-adjusted)", "p", "p (Holm)", SELF_GRADED],
        [[c.a, c.b, m, d.tasks, d.cases, d.a, d.b, d.difference, d.holm, d.p, d.p_holm,
          marked(c)]
         for c in comparisons for m, d in c.differences.items()],
        "Each side estimated as in the main tables, on the tasks both answered; 95% interval "
        "from the same cases drawn for both sides (a human group's people drawn too): "
        f"difference +/- t sqrt(variance); none from fewer than {MIN_CASES} cases "
        "(docs/results.md). Unadjusted: each interval on its own. Holm-adjusted (Holm 1979): "
        f"over the {family} differences in this table with an interval, family-wise 95%; "
        "the interval at its step's level leaves out 0 exactly when Holm's procedure "
        "rejects.")


def bertscore_note(r: Results) -> str:
    b = r.bertscore
    return "" if b is None else (
        f"{BERTSCORE}: F1 against the reference answer with model {b.model} "
        f"(key {b.model_key[:12]}, layer {b.layer}, {'rescaled' if b.rescaled else 'not rescaled'}"
        f"), {counted(b.scored, 'response')}; a similarity, not a judgment, never part of the gate.")


# ------------------------------------------------------------------ formats


def _md_cell(v: Any) -> str:
    """`v` as Markdown text: on one line (a line break typed into a reason would end a table
    row or a quote), no links, images, HTML or headings."""
    return re.sub(r"([\\`*_\[\]<>|#!])", r"\\\1", " ".join(fmt(v).split()))


def markdown(ts: list[Table], results: Results) -> str:
    g = results.grader
    terms = f" Validated under {_md_cell(g['validation_terms'])}." if g.get(
        "validation_terms") else ""
    out = [f"Grader config #{g['id']} ({_md_cell(g['name'])}, "
           f"prompt {g['prompt_version']}). Judge: {results.judge} "
           f"({_md_cell(results.judged_by)}).{terms}", ""]
    out += [f"> {_md_cell(f)}" for f in results.flags]
    for t in ts:
        out += ["", f"### {_md_cell(t.title)}", ""]  # a benchmark's name is in some titles
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
