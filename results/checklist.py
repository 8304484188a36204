"""Reporting checklists written from the study's records (`nmb report checklist --out DIR`):
MI-CLEAR-LLM, the TRIPOD-LLM items that apply to an evaluation study, and GRRAS, each as
Markdown and JSON, and `methods.md`, a plain draft of the methods paragraphs.

Each item is filled from the records with its source (a table, a command or a file), or marked
missing with what to supply; items only the authors can write (a title, a rationale, a
discussion) say so. Nothing is invented: a number in the text is read from the database or
from the results (`results.results.build`, the same tables `nmb results` prints).

References:
- MI-CLEAR-LLM: Park SH, Suh CH, Lee JH, Kahn CE, Moy L. Minimum reporting items for clear
  evaluation of accuracy reports of large language models in healthcare (MI-CLEAR-LLM).
  Korean J Radiol 2024;25(10):865-868; its six items as this module names them. Adherence in
  159 studies: Korean J Radiol 2025.
- TRIPOD-LLM: Gallifant J et al. The TRIPOD-LLM reporting guideline for studies using large
  language models. Nat Med 2025;31:60-69 (19 main items, 50 subitems). The items here are
  named by their topic, not numbered: check the numbering against the published checklist.
- GRRAS: Kottner J et al. Guidelines for Reporting Reliability and Agreement Studies (GRRAS)
  were proposed. J Clin Epidemiol 2011;64:96-106 (15 items).
- Test-data independence: a case published after a model's training cutoff cannot have been
  in its training data; a case published on or before it may have been (or a case with no
  known date: unknown).
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from sqlalchemy import func
from sqlmodel import Session, select

from db.models import (
    CalibrationReport,
    Case,
    CollectedResponse,
    CollectionRun,
    Exam,
    ExamAttempt,
    ExpertScore,
    GraderRun,
    GraderScore,
    Response,
    Task,
    User,
)
from db.study.model_cards import base_model, card_row, cards
from errors import UserError, counted
from stats.intervals import MIN_CASES

FILLED, PARTLY, MISSING, AUTHORS = "filled", "partly filled", "missing", "for the authors"


@dataclass
class Item:
    id: str
    title: str
    status: str  # FILLED, PARTLY, MISSING or AUTHORS
    text: str  # what the records say
    sources: list[str] = field(default_factory=list)  # table, command or file
    hint: str | None = None  # what to supply where the records fall short


@dataclass
class Checklist:
    key: str  # file stem
    name: str
    reference: str
    items: list[Item]


# ---------------------------------------------------------------- what the records hold


@dataclass
class ModelFacts:
    label: str  # as results name it (MODEL or MODEL@CONDITION)
    responses: int
    tasks: int
    samples: int  # the most responses to one task
    collected: int  # through nmb collect (provenance recorded)
    card: dict[str, str | None]
    first_query: str | None = None  # ISO dates of the collected responses
    last_query: str | None = None
    returned: list[str] = field(default_factory=list)  # model names the API returned
    fingerprints: int = 0  # distinct system fingerprints
    temperatures: list[float | None] = field(default_factory=list)
    max_tokens: list[int | None] = field(default_factory=list)
    images: list[str] = field(default_factory=list)
    condition: dict[str, Any] | None = None
    templates: list[str] = field(default_factory=list)  # version · hash[:12]
    pass_at_1: str | None = None  # "0.600 [0.485, 0.705]"
    independence: str | None = None  # in words, None: no cutoff or no case dates


@dataclass
class StudyFacts:
    cases: int
    cases_dated: int
    tasks: int
    levels: dict[int, int]
    multi_turn: int
    models: list[ModelFacts]
    grader: dict[str, Any] | None
    experts: int
    expert_scores: int
    scored_responses: int
    raters_per_response: list[int]  # min, max
    imported_scores: int
    calibration: dict[str, Any] | None
    exam_takers: dict[str, int]  # role -> finished attempts
    exams: int
    results_error: str | None = None


def _fmt_estimate(e: Any) -> str | None:
    if e is None or e.value is None:
        return None
    ci = f" [{e.ci[0]:.3f}, {e.ci[1]:.3f}]" if e.ci else f" ({e.note})" if e.note else ""
    return f"{e.value:.3f}{ci}"


def _independence(cutoff: str | None, published: list[date | None]) -> str | None:
    if cutoff is None or not any(published):
        return None
    limit = date.fromisoformat(cutoff)
    after = sum(1 for d in published if d is not None and d > limit)
    before = sum(1 for d in published if d is not None and d <= limit)
    unknown = sum(1 for d in published if d is None)
    return (f"{after} of {len(published)} cases published after the training cutoff "
            f"{cutoff} (independent by date), {before} on or before it (may have been seen)"
            + (f", {unknown} without a known date" if unknown else ""))


def facts(s: Session) -> StudyFacts:
    """What the checklists are filled from, read from the study's records."""
    from results import results as results_mod

    all_cards = cards(s)
    published = [c.published for c in s.exec(select(Case))]
    tasks = list(s.exec(select(Task)))
    rows = s.exec(select(Response.model, Response.task_id, Response.sample)
                  .where(Response.source == "model")).all()
    per: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for model, task_id, sample in rows:
        per[model].append((task_id, sample))
    collected = s.exec(select(Response.model, CollectedResponse.created_at,
                              CollectedResponse.model_returned,
                              CollectedResponse.system_fingerprint)
                       .join(CollectedResponse,
                             CollectedResponse.response_id == Response.response_id)).all()
    dates: dict[str, list[str]] = defaultdict(list)
    returned: dict[str, set[str]] = defaultdict(set)
    prints: dict[str, set[str]] = defaultdict(set)
    for model, at, ret, fp in collected:
        dates[model].append(at.date().isoformat())
        if ret:
            returned[model].add(ret)
        if fp:
            prints[model].add(fp)
    runs: dict[str, list[CollectionRun]] = defaultdict(list)
    for run in s.exec(select(CollectionRun).order_by(CollectionRun.id)):
        runs[run.model].append(run)
    try:
        res = results_mod.build(s, by=())
        pass1 = {c.who: _fmt_estimate(c.pass_at.get(1)) for c in res.overall if c.group == "model"}
        error = None
    except UserError as e:
        res, pass1, error = None, {}, str(e)
    models = []
    for label, items in sorted(per.items()):
        card_obj = all_cards.get(label) or all_cards.get(base_model(label))
        card = card_row(card_obj)
        by_task = Counter(t for t, _ in items)
        rs = runs.get(label, [])
        settings = [r.settings or {} for r in rs]
        models.append(ModelFacts(
            label, len(items), len(by_task), max(by_task.values()), len(dates.get(label, [])),
            card, min(dates[label]) if dates.get(label) else None,
            max(dates[label]) if dates.get(label) else None, sorted(returned.get(label, ())),
            len(prints.get(label, ())),
            sorted({st.get("temperature") for st in settings}, key=str),
            sorted({st.get("max_tokens") for st in settings}, key=str),
            sorted({st.get("images", "key") for st in settings}),
            next((st["condition"] for st in settings if st.get("condition")), None),
            sorted({f"{r.template_version} · {r.template_hash[:12]}" for r in rs}),
            pass1.get(label), _independence(card["training_cutoff"], published)))
    grader = None
    if res is not None:
        from results.judgments import default_config

        config = default_config(s, res.grader["id"])
        runs_ = s.exec(select(func.min(GraderRun.started_at), func.max(GraderRun.started_at),
                              func.count()).where(GraderRun.config_id == config.id)).one()
        synthetic = s.exec(select(GraderRun).where(GraderRun.config_id == config.id,
                                                   GraderRun.synthetic)).first() is not None
        grader = {"id": config.id, "model": config.model, "prompt_version": config.prompt_version,
                  "temperature": config.temperature, "seed": config.seed,
                  "max_tokens": config.max_tokens, "vision": config.vision,
                  "validated": res.grader["validated"],
                  "validation_terms": res.grader.get("validation_terms"),
                  "grades": s.exec(select(func.count()).select_from(GraderScore)
                                   .where(GraderScore.config_id == config.id)).one(),
                  "runs": runs_[2], "synthetic": synthetic,
                  "first": runs_[0].date().isoformat() if runs_[0] else None,
                  "last": runs_[1].date().isoformat() if runs_[1] else None}
    scores = s.exec(select(ExpertScore.assignment_id, ExpertScore.imported)
                    .where(ExpertScore.status == "submitted")).all()
    from db.models import Assignment

    per_response = Counter(s.exec(
        select(Assignment.response_id).join(ExpertScore, ExpertScore.assignment_id == Assignment.id)
        .where(ExpertScore.status == "submitted")).all())
    report = s.exec(select(CalibrationReport).where(CalibrationReport.part == "heldout")
                    .order_by(CalibrationReport.id.desc())).first()
    takers = Counter(s.exec(select(User.role).join(ExamAttempt, ExamAttempt.user_id == User.id)
                            .where(ExamAttempt.finished_at.is_not(None))).all())
    return StudyFacts(
        cases=len(published), cases_dated=sum(d is not None for d in published),
        tasks=len(tasks), levels=dict(sorted(Counter(t.level for t in tasks).items())),
        multi_turn=sum(bool(t.stages) for t in tasks), models=models, grader=grader,
        experts=s.exec(select(func.count()).select_from(User).where(User.role == "expert")).one(),
        expert_scores=len(scores), scored_responses=len(per_response),
        raters_per_response=([min(per_response.values()), max(per_response.values())]
                             if per_response else []),
        imported_scores=sum(1 for _, imported in scores if imported),
        calibration=None if report is None else {
            "id": report.id, "passed": report.passed, "date": report.created_at.date().isoformat(),
            "config_id": report.config_id},
        exam_takers=dict(takers), exams=s.exec(select(func.count()).select_from(Exam)).one(),
        results_error=error)


# ---------------------------------------------------------------- the checklists


def _join(parts: list[str]) -> str:
    return "; ".join(p for p in parts if p)


def _models_line(f: StudyFacts, render) -> list[str]:
    return [f"{m.label}: {render(m)}" for m in f.models]


def _status(have: int, of: int) -> str:
    return FILLED if of and have == of else PARTLY if have else MISSING


def mi_clear_llm(f: StudyFacts) -> Checklist:
    """The six MI-CLEAR-LLM items."""
    ms = f.models
    card_keys = ("maker", "version", "released", "training_cutoff", "web_access")
    complete = [m for m in ms if all(m.card[k] is not None for k in card_keys)]
    lacking = sorted({k for m in ms for k in card_keys if m.card[k] is None})

    def spec(m: ModelFacts) -> str:
        c = m.card
        bits = [f"maker {c['maker']}" if c["maker"] else "",
                f"version {c['version']}" if c["version"] else "",
                f"released {c['released']}" if c["released"] else "",
                f"training cutoff {c['training_cutoff']}" if c["training_cutoff"] else "",
                f"web access {c['web_access']}" if c["web_access"] else "",
                f"API returned {', '.join(m.returned)}" if m.returned else ""]
        return ", ".join(b for b in bits if b) or "no card"

    items = [Item(
        "1", "Identity and specifications of the LLM (name, version, maker, release, training "
        "cutoff, web access)", _status(len(complete), len(ms)),
        _join(_models_line(f, spec)) or "no model responses",
        ["table modelcard (nmb models list)", "collectedresponse.model_returned"],
        None if len(complete) == len(ms) and ms else
        f"record {', '.join(lacking) or 'the cards'} with nmb models set NAME ... "
        "(or --from-csv FILE)")]

    def stoch(m: ModelFacts) -> str:
        temp = ", ".join("default" if t is None else f"{t:g}" for t in m.temperatures)
        cond = m.condition or {}
        votes = (f", self-consistency over {cond.get('votes')} answers per turn (majority final "
                 "answer)" if cond.get("strategy") == "self-consistency" else "")
        return (f"{m.samples} answer(s) per task, pass@1 as the mean over them"
                + (f", temperature {temp}" if temp else "") + votes)

    known = [m for m in ms if m.temperatures]
    items.append(Item(
        "2", "Handling of stochasticity (attempts per query, how they were combined, seeds)",
        FILLED if ms and len(known) == len(ms) else PARTLY if ms else MISSING,
        _join(_models_line(f, stoch)) or "no model responses",
        ["collectionrun.settings (nmb collect --samples, --temperature)", "nmb results (pass@k)"],
        None if len(known) == len(ms) and ms else
        "for responses imported rather than collected, state the sampling settings their "
        "harness used (temperature, samples, seed); no seed is sent by nmb collect"))
    collected = [m for m in ms if m.templates]
    items.append(Item(
        "3", "Exact prompts (wording, symbols, spacing)", _status(len(collected), len(ms)),
        _join([f"{m.label}: template {', '.join(m.templates)}"
               + (f"; condition {m.condition['name']} adds verbatim: "
                  f"{json.dumps(m.condition['added_text'])}" if m.condition and
                  m.condition.get("added_text") else "") for m in collected])
        or "no collected responses",
        ["llm/model_request.py TEMPLATE (versioned, hashed)", "collectionrun.template_hash",
         "nmb export responses"],
        None if len(collected) == len(ms) and ms else
        "for imported responses, supply the prompts their harness sent (an appendix)"))
    items.append(Item(
        "4", "Prompt use: sessions and turns", FILLED if collected else MISSING,
        (f"each task asked in a new conversation (no shared session); {f.multi_turn} of "
         f"{f.tasks} tasks multi-turn, one user message revealing each later stage after the "
         "model's answer, the model's earlier answers kept in the conversation")
        if collected else "no collected responses",
        ["collection/collect.py", "collectedresponse.request_hashes (one per turn)"],
        None if collected else "describe how the imported responses were obtained"))
    dated = [m for m in ms if m.first_query]
    items.append(Item(
        "5", "Dates of the queries", _status(len(dated), len(ms)),
        _join([f"{m.label}: {m.first_query}" + (f" to {m.last_query}"
                                                if m.last_query != m.first_query else "")
               for m in dated]) or "no collected responses",
        ["collectedresponse.created_at", "collectionrun.started_at"],
        None if len(dated) == len(ms) and ms else
        "state the query dates of imported responses (their harness logs)"))
    judged = [m for m in ms if m.independence]
    items.append(Item(
        "6", "Independence of the test data from the training data",
        _status(len(judged), len(ms)), _join([f"{m.label}: {m.independence}" for m in judged])
        or (f"{f.cases_dated} of {f.cases} cases have a publication date; "
            f"{sum(1 for m in ms if m.card['training_cutoff'])} of {len(ms)} models a "
            "training cutoff"),
        ["case.published", "modelcard.training_cutoff"],
        None if len(judged) == len(ms) and ms else
        "record each model's training cutoff (nmb models set NAME --training-cutoff "
        "YYYY-MM) and each case's publication date (nmb cases dates FILE); say whether the "
        "cases are public"))
    return Checklist("mi-clear-llm", "MI-CLEAR-LLM",
                     "Park SH et al. Korean J Radiol 2024;25(10):865-868", items)


def _grader_text(f: StudyFacts) -> str:
    g = f.grader
    if g is None:
        return f"no grader config has grades ({f.results_error})"
    valid = (f"validated under {g['validation_terms']}" if g["validated"]
             else "not validated against the experts")
    return (f"LLM grader {g['model']} (config #{g['id']}, prompt {g['prompt_version']}, "
            f"temperature {g['temperature']:g}, seed {g['seed']}), {g['grades']} grades in "
            f"{counted(g['runs'], 'run')}" + (f" from {g['first']} to {g['last']}" if g["first"]
                                            else "") + f"; {valid}"
            + ("; synthetic demo grades, no model called" if g["synthetic"] else ""))


def _raters_text(f: StudyFacts) -> str:
    if not f.expert_scores:
        return "no submitted expert scores"
    spread = f.raters_per_response
    per = (f"{spread[0]}" if spread[0] == spread[1] else f"{spread[0]}-{spread[1]}")
    return (f"{f.expert_scores} expert scores by {counted(f.experts, 'expert account')} of "
            f"{f.scored_responses} responses ({per} raters per response), each blinded to the "
            "response's source (model or human) and to the other raters' scores and the "
            "grader's" + (f"; {f.imported_scores} imported, not collected blind"
                          if f.imported_scores else ""))


def tripod_llm(f: StudyFacts) -> Checklist:
    """The TRIPOD-LLM items that apply to an evaluation of existing LLMs (no development)."""
    ms = f.models
    levels = ", ".join(f"level {k}: {v}" for k, v in f.levels.items())
    humans = ", ".join(f"{n} {role}s" for role, n in sorted(f.exam_takers.items()))
    perf = _join([f"{m.label} {m.pass_at_1}" for m in ms if m.pass_at_1])
    items = [
        Item("title", "Title: identifies an evaluation of LLMs", AUTHORS, "",
             hint="name the study as an evaluation of LLMs on a clinician-validated benchmark"),
        Item("abstract", "Abstract", AUTHORS, "", hint="summarise with the numbers of "
             "results.md"),
        Item("background", "Background and objectives", AUTHORS, "",
             hint="the clinical task and why depth of reasoning, not breadth, is evaluated"),
        Item("data", "Methods: data sources and dates", _status(f.cases_dated, f.cases),
             f"{f.cases} cases, {f.tasks} tasks ({levels}); {f.cases_dated} cases with a "
             "publication date", ["case", "task", "nmb status"],
             None if f.cases_dated == f.cases else "record the cases' sources and publication "
             "dates (nmb cases dates FILE)"),
        Item("llm", "Methods: the LLMs (name, version, access, settings)",
             mi_clear_llm(f).items[0].status, mi_clear_llm(f).items[0].text,
             ["modelcard", "collectionrun.settings"], mi_clear_llm(f).items[0].hint),
        Item("prompting", "Methods: prompting and conditions", mi_clear_llm(f).items[2].status,
             mi_clear_llm(f).items[2].text, ["collectionrun", "llm/model_request.py"],
             mi_clear_llm(f).items[2].hint),
        Item("outcome", "Methods: outcome, reference standard and annotation",
             FILLED if f.expert_scores else MISSING,
             _raters_text(f) + "; pass@1: correct final diagnosis against the case's reference "
             "answer; the rubric score 0-1", ["expertscore", "rubric (nmb export rubric)"],
             None if f.expert_scores else "collect expert scores (nmb assign, /score)"),
        Item("evaluation", "Methods: automated evaluation (LLM grader) and its validation",
             FILLED if f.grader and f.grader["validated"] else PARTLY if f.grader else MISSING,
             _grader_text(f), ["graderconfig", "calibrationreport", "nmb calibrate"],
             None if f.grader and f.grader["validated"] else
             "validate the grader against the experts on the held-out set (nmb calibrate)"),
        Item("statistics", "Methods: statistical analysis", FILLED,
             "pass@k as the mean over tasks of the unbiased per-task estimator; 95% intervals "
             f"from resampling cases (with their tasks; for human groups, people and cases), "
             f"none from fewer than {MIN_CASES} cases; paired differences on the tasks both "
             "answered; breadth against depth by Spearman and Kendall rank correlation with "
             "permutation p and a bootstrap interval over models", ["docs/results.md"]),
        Item("humans", "Methods: human comparison", FILLED if f.exam_takers else MISSING,
             f"{f.exams} exams; finished attempts: {humans}" if f.exam_takers else
             "no finished exam attempts", ["exam", "examattempt"],
             None if f.exam_takers else "run the human baseline (nmb exam create)"),
        Item("results", "Results: performance with uncertainty", FILLED if perf else MISSING,
             f"pass@1 [95% interval]: {perf}" if perf else (f.results_error or ""),
             ["nmb results --out DIR (results.md, overall.csv)"],
             None if perf else "grade the responses (nmb grade)"),
        Item("limitations", "Discussion: limitations", AUTHORS, "",
             hint="zero-shot or conditions as run, the benchmark's size, unvalidated parts"),
        Item("open-science", "Open science: data, code and prompts", PARTLY,
             "the frozen package (nmb package freeze) holds the tasks, rubric, grader prompt "
             "and gate; the prompt template is versioned and hashed",
             ["nmb package freeze"], "state where the package and code are published"),
    ]
    return Checklist("tripod-llm", "TRIPOD-LLM (items for an evaluation study)",
                     "Gallifant J et al. Nat Med 2025;31:60-69", items)


def grras(f: StudyFacts) -> Checklist:
    """The 15 GRRAS items, for the agreement between the experts and of the grader with them."""
    g, c = f.grader, f.calibration
    cal = ("no held-out calibration report" if c is None else
           f"held-out calibration report #{c['id']} of grader config #{c['config_id']} "
           f"({c['date']}): gate {'passed' if c['passed'] else 'not passed'}")
    items = [
        Item("1", "Title or abstract names a reliability/agreement study", AUTHORS, "",
             hint="say that grader-expert agreement was studied"),
        Item("2", "The measurement instrument", FILLED,
             "the rubric (criteria with anchored levels, error classes), rated by experts on "
             "/score and by the LLM grader from the same rubric", ["rubric (nmb export rubric)"]),
        Item("3", "The subject population", FILLED,
             f"responses to {f.tasks} tasks on {f.cases} cases", ["response", "task"]),
        Item("4", "The rater population", FILLED if f.experts else MISSING,
             f"{counted(f.experts, 'expert account')}; the LLM grader "
             f"{g['model'] if g else '(none)'}", ["user (role expert)", "graderconfig"],
             None if f.experts else "add expert raters (nmb users add --role expert)"),
        Item("5", "What is known and the rationale", AUTHORS, "",
             hint="cite earlier agreement of LLM graders with clinicians"),
        Item("6", "Sample size: raters, subjects, replicates", FILLED if f.expert_scores
             else MISSING, _raters_text(f), ["assignmentdesign", "calibrationprotocol"],
             None if f.expert_scores else "assign responses to experts (nmb assign)"),
        Item("7", "Sampling method", FILLED,
             "a seeded, balanced assignment design; a pre-registered calibration subset split "
             "into dev and held-out parts", ["assignmentdesign.seed", "calibrationitem"]),
        Item("8", "The rating process (information available, blinding)", FILLED,
             "experts see the case, the task and a response under a blind code; never its "
             "source, the other raters' scores or the grader's", ["db/raters/scoring.py"]),
        Item("9", "Independence of the ratings", FILLED,
             "each rater scores alone; other raters' scores are never shown",
             ["db/raters/scoring.py"]),
        Item("10", "Statistical analysis", FILLED if c else PARTLY,
             "Pearson r, ICC(2,1), weighted kappa and the alternative annotator test against "
             "the pre-registered gate" + (f"; {g['validation_terms']}" if g and
                                         g.get("validation_terms") else ""),
             ["calibration/", "docs/calibration.md"],
             None if c else "register the protocol and take the held-out look (nmb calibrate)"),
        Item("11", "Actual numbers of raters, subjects and replicates", FILLED if f.expert_scores
             else MISSING, _raters_text(f), ["expertscore"],
             None if f.expert_scores else "collect expert scores"),
        Item("12", "Rater and subject characteristics", AUTHORS, "",
             hint="the experts' training and years of experience"),
        Item("13", "Estimates with their uncertainty", FILLED if c else MISSING, cal,
             ["calibrationreport (nmb calibrate --out)"],
             None if c else "compute the held-out report (nmb calibrate --part heldout)"),
        Item("14", "Practical relevance", AUTHORS, "", hint="what the agreement means for "
             "using the grader in place of experts"),
        Item("15", "Detailed results", FILLED if c else PARTLY,
             "the calibration report's HTML and JSON, the package's canary", ["nmb calibrate "
             "--out", "nmb package freeze"]),
    ]
    return Checklist("grras", "GRRAS", "Kottner J et al. J Clin Epidemiol 2011;64:96-106", items)


# ---------------------------------------------------------------- methods and writing


def methods(f: StudyFacts) -> str:
    """A plain draft of the methods paragraphs, every number from the records."""
    ms = f.models
    levels = ", ".join(f"{v} at level {k}" for k, v in f.levels.items())
    paras = ["# Methods (draft from the study's records)",
             "## Benchmark",
             f"The benchmark holds {f.tasks} tasks ({levels}) on {f.cases} cases; "
             f"{f.multi_turn} tasks are multi-turn, revealing one further stage after each "
             "answer."]
    if ms:
        lines = []
        for m in ms:
            c = m.card
            desc = ", ".join(b for b in (c["maker"], f"version {c['version']}" if c["version"]
                                         else None, f"released {c['released']}" if c["released"]
                                         else None, f"{c['params']} parameters" if c["params"]
                                         else None, c["kind"]) if b)
            when = (f", queried {m.first_query}" + (f" to {m.last_query}"
                                                     if m.last_query != m.first_query else "")
                    if m.first_query else ", responses imported")
            lines.append(f"- {_md(m.label)}" + (f" ({_md(desc)})" if desc else "") + when
                         + f": {m.responses} responses to {m.tasks} tasks, "
                         f"{m.samples} per task")
        paras += ["## Models", f"{counted(len(ms), 'model')} answered the benchmark:",
                  "\n".join(lines)]
        collected = [m for m in ms if m.templates]
        if collected:
            temps = sorted({t for m in collected for t in m.temperatures}, key=str)
            paras += ["## Prompts, samples and stochasticity",
                      "Each model received the exam the human readers took: the case title, "
                      "health record, neuropsychological scores, the case's key MRI slices as "
                      "images and the task, in a new conversation per task, with prompt "
                      f"template {', '.join(sorted({t for m in collected for t in m.templates}))}"
                      f"; sampling temperature {', '.join(str(t) for t in temps)}. "
                      "pass@1 is the mean over a model's answers to each task, averaged over "
                      "tasks; no seed was sent."]
            conds = [m for m in collected if m.condition]
            for m in conds:
                c = m.condition
                paras.append(f"Under condition {c['name']} ({c['strategy']}"
                             + (f", {c['votes']} answers per turn, majority final answer"
                                if c["strategy"] == "self-consistency" else "")
                             + f"), {_md(m.label)} received the same exam with this text "
                             f"appended to the system message: {_md(json.dumps(c['added_text']))}.")
    paras += ["## Grading", _md(_grader_text(f)) + "."]
    if f.calibration:
        c = f.calibration
        paras.append(f"The grader's agreement with the experts was tested once on the held-out "
                     f"set (report #{c['id']}, {c['date']}): the gate was "
                     f"{'passed' if c['passed'] else 'not passed'}.")
    paras += ["## Expert raters and blinding", _raters_text(f) + "."]
    if f.exam_takers:
        paras += ["## Human baseline",
                  "Human readers took the same exam on the study's /exam page: "
                  + ", ".join(f"{n} {role}s" for role, n in sorted(f.exam_takers.items()))
                  + " finished an attempt."]
    paras += ["## Statistics",
              "pass@1 and the rubric score are reported with 95% intervals from resampling "
              "cases (with their tasks; for human groups, people and cases), none from fewer "
              f"than {MIN_CASES} cases. Differences between models, conditions or groups are "
              "paired on the tasks both answered. The relation between breadth and depth is "
              "Spearman's and Kendall's rank correlation across models, with an exact "
              "permutation p-value up to eight models and a bootstrap interval over models "
              "from five models on."]
    if any(m.pass_at_1 for m in ms):
        paras += ["## Results (for the results section)",
                  "\n".join(f"- {_md(m.label)}: pass@1 {m.pass_at_1}" for m in ms
                            if m.pass_at_1)]
    return "\n\n".join(paras) + "\n"


MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|#!])")


def _md(text: str) -> str:
    """Text from the records as literal Markdown (no links, images, HTML or headings)."""
    return MD_SPECIAL.sub(r"\\\1", " ".join(text.split()))


def markdown(c: Checklist) -> str:
    out = [f"# {c.name}", "", f"Reference: {c.reference}. Filled from the study's records by "
           "nmb report checklist; check every item before submission.", "",
           "| item | topic | status | from the records | source | to supply |",
           "|---|---|---|---|---|---|"]
    for i in c.items:
        out.append(f"| {i.id} | {_md(i.title)} | {i.status} | {_md(i.text) or '–'} | "
                   f"{_md(', '.join(i.sources)) or '–'} | {_md(i.hint or '') or '–'} |")
    return "\n".join(out) + "\n"


def checklists(f: StudyFacts) -> list[Checklist]:
    return [mi_clear_llm(f), tripod_llm(f), grras(f)]


def write(out: Path, s: Session) -> list[Path]:
    """Every checklist as <key>.md and <key>.json, and methods.md, into `out`."""
    from db.files import write_file

    out.mkdir(parents=True, exist_ok=True)
    f = facts(s)
    written = []
    for c in checklists(f):
        written.append(write_file(out / f"{c.key}.md", markdown(c)))
        written.append(write_file(out / f"{c.key}.json", json.dumps(asdict(c), indent=1)))
    written.append(write_file(out / "methods.md", methods(f)))
    return written
