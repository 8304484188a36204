"""Anchoring and revision in multi-turn (level-3) tasks: did the leading diagnosis change as
information arrived, and toward the reference answer or away from it?

The grader (prompt nmb-grader-2) judges every answer of a conversation: the first answer, then
the answer after each revealed stage. For answer i it reports whether the leading diagnosis is
correct (c_i, against the reference answer, as the correct-diagnosis judgment but on that
answer alone) and, from the second answer on, whether it changed in substance from the previous
one (d_i). For one conversation with answers 1..m (m >= 2):

    revised         = d_2 or ... or d_m   (the leading diagnosis changed after new information)
    wrong_to_right  = not c_1 and c_m
    right_to_wrong  = c_1 and not c_m
    final_correct   = c_m

Worked example (three answers): "CIS" (c=F), then "CIS" (c=F, d=F), then "multiple sclerosis"
(c=T, d=T): revised, wrong to right, not right to wrong, final correct. A response that kept a
wrong first hypothesis through every stage (F; F, d=F; F, d=F) is neither revised nor right at
the end: the anchoring the paper reports. A model's share is the mean over tasks of its
per-task share of conversations, a human group's the mean over people (`stats.resample`,
with the same intervals as pass@1). Conversations without stage judgments (grades from before
nmb-grader-2, or expert-only judgments) are left out and counted.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from results.error_classes import ALL_MODELS
from results.judgments import Judgment
from stats.resample import Estimate, group_mean

MEASURES = ("revised", "wrong_to_right", "right_to_wrong", "final_correct")


def conversation(stages: tuple[tuple[bool, bool], ...]) -> dict[str, bool]:
    """The four measures of one conversation's stage judgments ((correct, changed), first
    answer first; at least two)."""
    if len(stages) < 2:
        raise ValueError("a conversation needs at least two judged answers")
    (first, _), (last, _) = stages[0], stages[-1]
    return {"revised": any(changed for _, changed in stages[1:]),
            "wrong_to_right": not first and last, "right_to_wrong": first and not last,
            "final_correct": last}


@dataclass
class RevisionRow:
    who: str
    group: str  # "model" or "human"
    conversations: int  # level-3 responses with stage judgments
    tasks: int
    people: int | None
    unjudged: int  # level-3 responses without stage judgments
    measures: dict[str, Estimate]


def revision_rows(judgments: Iterable[Judgment]) -> list[RevisionRow]:
    """Per model, all models together, and per human group, on level-3 tasks."""
    groups: dict[tuple[str, str], list[Judgment]] = {}
    for j in judgments:
        if j.level != 3:
            continue
        group = "model" if j.is_model else "human"
        groups.setdefault((j.who, group), []).append(j)
        if j.is_model:
            groups.setdefault((ALL_MODELS, group), []).append(j)
    out = []
    for (who, group), js in groups.items():
        js = sorted((j for j in js if len(j.stages) >= 2),
                    key=lambda j: (j.task_id, j.person or "", j.response_id))
        flags = [conversation(j.stages) for j in js]
        people = [j.person for j in js] if group == "human" else None
        out.append(RevisionRow(
            who, group, len(js), len({j.task_id for j in js}),
            len(set(people)) if people is not None else None,
            len(groups[(who, group)]) - len(js),
            {m: group_mean([j.task_id for j in js], [float(f[m]) for f in flags], people,
                           cases=[j.case for j in js])
             for m in MEASURES}))
    return sorted(out, key=lambda r: (r.group != "model", r.who == ALL_MODELS, r.who))
