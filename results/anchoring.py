"""Anchoring on multi-turn tasks, as it is defined: keeping a wrong first hypothesis after
information that should change it.

A multi-turn task reveals information in stages and keeps every answer: answer 1 before any
stage, answer i + 1 after stage i. Each answer is judged correct or not (c_i, by the table's
judge: the grader's stage judgments, or the experts' on the subset they scored), and from the
second answer on the grader says whether the leading diagnosis changed in substance from the
previous answer (d_i; a property of the text, which only the grader reads off). The last
answer is the final answer, judged by the response's correct-diagnosis judgment, the one
pass@1 counts (`results.judgments.final_answer`), so "correct at the end" here is pass@1 on
these tasks. For a conversation of answers 1..m, the conditional shares (anchoring: holding to a
first impression against later information, Tversky & Kahneman 1974, Science 185:1124-1131; in
diagnosis, Croskerry 2003, Acad Med 78:775-780):

    no change | wrong first        P(d_2 .. d_m all false | not c_1)
    correct at end | wrong first   P(c_m | not c_1)
    wrong at end | correct first   P(not c_m | c_1)
    no change after disconfirming  P(not d_{k+1} | c_1 .. c_k all false), k the first stage the
      | wrong so far               bundle marks as disconfirming (docs/bundle-format.md)

A conversation enters a share only when what it conditions on and what it measures are known
(an unjudged stage, or no change flags, leaves it out of that share); each share reports its
conversations (`n`) and how many had the outcome (`k`), and the share printed is k/n itself,
the pooled share (every conversation weighted alike), with the 95% interval of
`stats.resample.pooled_share`: cases drawn with their conversations for a model (and all models
together), people and cases for a human group. "Final correct" is pass@1 on these tasks (a
model's mean over tasks, `stats.resample.group_mean`), a missing answer (`results.fairness`)
counted wrong there as in pass@1; missing answers have no stages, so no share counts them.

`final_answer_conflicts` is the check that the grader's two judgments of the final answer agree
(its correct-diagnosis judgment and its judgment of the last stage); `stage_agreement` compares
the grader's stage judgments with the experts' on the responses both judged.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from results.fairness import MISSING
from results.judgments import ALL_MODELS, Judged, Judgment, groups_of
from stats.chance_agreement import cohen_kappa
from stats.intervals import MIN_CASES, TOO_FEW, one_way_variance
from stats.resample import (
    RESAMPLES,
    Estimate,
    bootstrap_weights,
    group_mean,
    percentile_ci,
    pooled_share,
)

#: The conditional shares, in the order the table shows them.
MEASURES = ("no_change_wrong_first", "correct_end_wrong_first", "wrong_end_correct_first",
            "no_change_after_disconfirming")
LABELS = {"no_change_wrong_first": "no change if wrong first",
          "correct_end_wrong_first": "correct at end if wrong first",
          "wrong_end_correct_first": "wrong at end if correct first",
          "no_change_after_disconfirming": "no change after disconfirming if wrong so far"}


def is_conversation(j: Judgment) -> bool:
    """A response to a multi-turn task with its answers laid out (at least two)."""
    return len(j.stages) >= 2


def outcomes(j: Judgment) -> dict[str, bool | None]:
    """Per measure, the conversation's outcome, or None when it is not in that measure's
    condition or a value it needs is unknown."""
    correct = [c for c, _ in j.stages]
    changed = [d for _, d in j.stages[1:]]
    first, last = correct[0], correct[-1]
    out: dict[str, bool | None] = dict.fromkeys(MEASURES)
    if first is False:
        out["correct_end_wrong_first"] = bool(last)
        if None not in changed:
            out["no_change_wrong_first"] = not any(changed)
    elif first is True:
        out["wrong_end_correct_first"] = not last
    k = next((i + 1 for i, m in enumerate(j.disconfirming) if m), None)  # first marked stage
    if k is not None and k < len(j.stages):
        before = correct[:k]  # answers 1..k, given before stage k was revealed
        if all(c is False for c in before) and changed[k - 1] is not None:
            out["no_change_after_disconfirming"] = not changed[k - 1]
    return out


@dataclass
class Share:
    n: int  # conversations in the condition with the outcome known
    k: int  # of them, with the outcome
    estimate: Estimate


@dataclass
class AnchoringRow:
    who: str
    group: str  # "model" or "human"
    conversations: int  # multi-turn responses with their answers laid out
    tasks: int
    people: int | None
    unjudged: int  # multi-turn responses without stage judgments
    marked: int  # conversations on tasks with a stage marked disconfirming
    final_correct: Estimate  # pass@1 on these tasks: the one final answer
    shares: dict[str, Share]  # each estimate is k/n (the pooled share)
    missing: int = 0  # missing answers on these tasks (results.fairness), in final_correct only


def _share(js: Sequence[Judgment], values: Sequence[bool | None], human: bool) -> Share:
    """k/n of the conversations whose value is known, with its pooled interval."""
    kept = [(j, v) for j, v in zip(js, values, strict=True) if v is not None]
    return Share(len(kept), sum(v for _, v in kept), pooled_share(
        [float(v) for _, v in kept], [j.case for j, _ in kept],
        [j.person for j, _ in kept] if human else None))


def _pass_at_1(js: Sequence[Judgment], human: bool) -> Estimate:
    return group_mean([j.task_id for j in js], [float(j.correct) for j in js],
                      [j.person for j in js] if human else None, cases=[j.case for j in js])


def anchoring_rows(judgments: Iterable[Judgment]) -> list[AnchoringRow]:
    """Per model, all models together, and per human group, on multi-turn tasks."""
    out = []
    for (who, group), js in groups_of(j for j in judgments if j.level == 3 or j.stages).items():
        human = group == "human"
        order = sorted(js, key=lambda j: (j.task_id, j.person or "", j.response_id))
        conv = [j for j in order if is_conversation(j)]
        absent = [j for j in order if j.source == MISSING]
        flags = [outcomes(j) for j in conv]
        people = {j.person for j in conv} if human else None
        out.append(AnchoringRow(
            who, group, len(conv), len({j.task_id for j in conv}),
            None if people is None else len(people), len(js) - len(conv) - len(absent),
            sum(any(j.disconfirming) for j in conv),
            _pass_at_1(conv + absent, human),
            {m: _share(conv, [f[m] for f in flags], human) for m in MEASURES}, len(absent)))
    return sorted(out, key=lambda r: (r.group != "model", r.who == ALL_MODELS, r.who))


# ------------------------------------------------------------------ the final-answer check


@dataclass
class Conflict:
    """A grade whose correct-diagnosis judgment contradicts its own judgment of the last stage."""

    response_id: str
    who: str
    person: str | None
    task_id: str
    correct_diagnosis: bool
    last_stage: bool


def final_answer_conflicts(grades: Iterable[Judgment]) -> list[Conflict]:
    """The grader outputs whose overall judgment of the final answer (correct_diagnosis)
    contradicts their judgment of the last stage; the results count correct_diagnosis."""
    return [Conflict(j.response_id, j.who, j.person, j.task_id, j.correct, j.last_stage)
            for j in sorted(grades, key=lambda j: j.response_id)
            if j.last_stage is not None and j.last_stage != j.correct]


# ------------------------------------------------------------------ grader vs experts per stage


@dataclass
class StageAgreement:
    """The grader's and the experts' judgments of the same answers."""

    answers: str  # which answers are compared
    pairs: int
    responses: int
    both_correct: int
    both_wrong: int
    grader_only_correct: int
    experts_only_correct: int
    agreement: Estimate  # share of pairs judged alike
    kappa: Estimate  # Cohen's kappa (Cohen 1960)


STAGES_BEFORE_LAST = "answers before the last"
FINAL_OVERALL = "final answer: grader's correct_diagnosis"
FINAL_LAST_STAGE = "final answer: grader's last stage"


def _agreement(label: str, pairs: list[tuple[str, str, bool, bool]], *,
               resamples: int = RESAMPLES, seed: int = 0) -> StageAgreement:
    """Agreement of (cluster, response, grader, experts) pairs, with 95% intervals from a
    cluster bootstrap over cases (agreement: the results' share rule; kappa: percentile; none
    below five cases) (Davison & Hinkley 1997, sec. 3.8): the answers of one
    case are drawn together."""
    g = np.array([p[2] for p in pairs], dtype=bool)
    e = np.array([p[3] for p in pairs], dtype=bool)
    counts = (int(np.sum(g & e)), int(np.sum(~g & ~e)), int(np.sum(g & ~e)), int(np.sum(~g & e)))
    if not pairs:
        none = Estimate(None)
        return StageAgreement(label, 0, 0, *counts, none, none)
    clusters = np.array([p[0] for p in pairs])
    units = len(set(clusters))
    w = bootstrap_weights(len(pairs), resamples, seed, clusters=clusters)
    same = (g == e).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        agree = w @ same / w.sum(axis=1)
        share_g, share_e = w @ g / w.sum(axis=1), w @ e / w.sum(axis=1)
        chance = share_g * share_e + (1 - share_g) * (1 - share_e)
        kappas = np.where(chance < 1, (agree - chance) / (1 - chance), np.nan)
    kappa = cohen_kappa(g.astype(float), e.astype(float))
    return StageAgreement(
        label, len(pairs), len({p[1] for p in pairs}), *counts,
        Estimate.share(same.mean(), one_way_variance(agree, units), units - 1, cases=units,
                       answers=same),
        Estimate(None) if kappa is None else Estimate(
            round(kappa, 4), None if units < MIN_CASES or (ci := percentile_ci(kappas)) is None
            else [round(x, 4) for x in ci], None if units >= MIN_CASES else TOO_FEW))


def stage_agreement(judged: Iterable[Judged]) -> list[StageAgreement]:
    """On the multi-turn responses both the grader (with stage judgments) and the experts
    judged: their judgments of the answers before the last (each stage the experts judged),
    and of the final answer, by the grader's correct-diagnosis judgment and by its last stage."""
    before, overall, last = [], [], []
    for x in judged:
        g, e = x.grader, x.experts
        if g is None or e is None or not is_conversation(g) or not e.stages:
            continue
        unit = g.case_id or g.task_id
        for (cg, _), (ce, _) in zip(g.stages[:-1], e.stages[:-1], strict=True):
            if cg is not None and ce is not None:
                before.append((unit, g.response_id, cg, ce))
        overall.append((unit, g.response_id, g.correct, e.correct))
        if g.last_stage is not None:
            last.append((unit, g.response_id, g.last_stage, e.correct))
    return [_agreement(STAGES_BEFORE_LAST, before), _agreement(FINAL_OVERALL, overall),
            _agreement(FINAL_LAST_STAGE, last)]
