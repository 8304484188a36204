"""One instrument per table, and the others beside it: each model's and human group's pass@1
and rubric score under every way of judging the responses, side by side.

The main tables use one judge throughout (`nmb results --judge`): the grader on every response
it graded, or the experts on the subset they scored. Mixing them (experts where they scored,
the grader elsewhere) confounds any grader-expert difference with the share each model had
scored by experts, so the mixed estimate appears here only, beside:

- experts where scored, else grader (the mixed estimate);
- grader only (every graded response);
- experts only (the expert-scored subset);
- grader on the expert-scored subset (the same responses as the experts' column, so the two
  differ by the instrument alone).

Each estimate comes from `results.leaderboard.cells` on that selection of judgments (the
intervals of pass@1), with the number of responses it stands on. The grader's missing answers
(`results.fairness`), when the main tables count them wrong, count wrong in the two columns
that use the grader on every response (grader only; experts where scored, else grader), so the
grader's column is the main table's estimate.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from results.judgments import EXPERTS, GRADER, GRADER_ON_SUBSET, MIXED, Judged, Judgment, pick
from results.leaderboard import cells
from stats.resample import NONE, Estimate

SELECTIONS = (MIXED, GRADER, EXPERTS, GRADER_ON_SUBSET)
MEASURES = ("pass@1", "rubric score")


@dataclass
class SensitivityRow:
    who: str
    group: str  # "model" or "human"
    measure: str  # one of MEASURES
    estimates: dict[str, Estimate]  # selection -> estimate
    responses: dict[str, int]  # selection -> responses behind it


def sensitivity_rows(judged: Sequence[Judged],
                     missing: Sequence[Judgment] = ()) -> list[SensitivityRow]:
    """Per model and human group (overall), each measure under each selection of SELECTIONS;
    `missing`: the grader's missing answers counted wrong (`results.fairness`)."""
    scored = {x.experts.response_id for x in judged if x.experts}
    added = {GRADER: list(missing), MIXED: [j for j in missing if j.response_id not in scored]}
    by_selection = {how: {(c.who, c.group): c
                          for c in cells(pick(judged, how) + added.get(how, []), ks=(1,))}
                    for how in SELECTIONS}
    whos = list(dict.fromkeys(key for how in SELECTIONS for key in by_selection[how]))
    whos.sort(key=lambda k: (k[1] != "model", k[0]))
    out = []
    for who, group in whos:
        found = {how: by_selection[how].get((who, group)) for how in SELECTIONS}
        responses = {how: sum(c.sources.values()) if c else 0 for how, c in found.items()}
        out.append(SensitivityRow(who, group, "pass@1",
                                  {how: c.pass_at[1] if c else NONE for how, c in found.items()},
                                  responses))
        out.append(SensitivityRow(who, group, "rubric score",
                                  {how: c.score if c else NONE for how, c in found.items()},
                                  responses))
    return out
