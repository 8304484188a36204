"""Anchoring as defined: conditional shares by hand, one final answer shared with pass@1, the
check of grades whose correct_diagnosis contradicts their last stage, the experts' stage
judgments, and on the demo the anchoring table agreeing with pass@1."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from db.models import Task
from results.anchoring import (
    FINAL_LAST_STAGE,
    FINAL_OVERALL,
    STAGES_BEFORE_LAST,
    anchoring_rows,
    final_answer_conflicts,
    outcomes,
    stage_agreement,
)
from results.judgments import (
    EXPERTS,
    Judged,
    Judgment,
    expert_judgment,
    grade_judgment,
    stage_consensus,
)
from rubric.render import Asked

ROOT = Path(__file__).resolve().parents[2]
F, T = False, True
TASK = Task(task_id="t", case_id="c", family="rationale", level=3, prompt="",
            stages=["antibodies", "CSF"], disconfirming=[False, True])


def _grade(stages, correct, *, task=TASK, who="m", person=None, rid="r"):
    """A grade of `task` whose stage judgments are (leading diagnosis, correct) per answer."""
    return grade_judgment(
        who=who, is_model=person is None, task=task, correct=correct, overall=0.5, error_tags=(),
        asked=Asked.of("nmb-grader-2", task.family, len(task.stages)), rank=None,
        stages=[{"leading_diagnosis": d, "correct": c, "changed": i > 0 and d != stages[i - 1][0]}
                for i, (d, c) in enumerate(stages)], person=person, response_id=rid)


def _shares(j: Judgment) -> tuple:
    o = outcomes(j)
    return tuple(o[m] for m in ("no_change_wrong_first", "correct_end_wrong_first",
                                "wrong_end_correct_first", "no_change_after_disconfirming"))


@pytest.mark.parametrize(("stages", "correct", "expected"), [
    # docs/results.md's worked example: CIS, CIS, then MS after the CSF (the marked stage)
    ((("CIS", F), ("CIS", F), ("MS", T)), T, (F, T, None, F)),
    # anchored: the same wrong answer through every stage, the disconfirming one too
    ((("SVD", F), ("SVD", F), ("SVD", F)), F, (T, F, None, T)),
    # right, then talked out of it: wrong at the end given correct first
    ((("MS", T), ("MS", T), ("NMOSD", F)), F, (None, None, T, None)),
    # wrong, changed to another wrong answer before the marked stage, kept it after
    ((("CIS", F), ("ADEM", F), ("ADEM", F)), F, (F, F, None, T)),
    # right at the second answer: "wrong so far" fails at the marked stage
    ((("CIS", F), ("MS", T), ("MS", T)), T, (F, T, None, None)),
])
def test_outcomes_of_one_conversation(stages, correct, expected) -> None:
    assert _shares(_grade(stages, correct)) == expected


def test_the_final_answer_is_the_responses_judgment_and_a_contradiction_is_flagged() -> None:
    """The grader said correct_diagnosis false but judged its last stage correct: the
    conversation ends wrong (as pass@1 counts it) and the grade is flagged."""
    g = _grade((("possible MS", F), ("MS", T), ("MS", T)), F, rid="syn-t04-x")
    assert g.stages[-1] == (F, F) and g.last_stage is T
    assert _shares(g)[1] is False  # not correct at the end, whatever the last stage said
    agree = _grade((("MS", T), ("MS", T), ("MS", T)), T, rid="ok")
    single = grade_judgment(who="m", is_model=True, task=Task(
        task_id="s", case_id="c", family="lesion", level=1, prompt="", stages=[]),
        correct=True, overall=1.0, error_tags=(), asked=Asked.of("nmb-grader-2", "lesion", 0),
        rank=None, stages=None, response_id="single")
    conflicts = final_answer_conflicts([agree, g, single])
    assert [(c.response_id, c.correct_diagnosis, c.last_stage) for c in conflicts] == [
        ("syn-t04-x", F, T)]


def test_rows_by_hand_for_a_model_and_a_human_group() -> None:
    """Model m: two conversations on t (anchored; revised to right) and one on u (right
    throughout), plus a level-1 answer left out. Students a (anchored) and b (revised)."""
    u = Task(task_id="u", case_id="c2", family="rationale", level=3, prompt="", stages=["x"])
    js = [_grade((("SVD", F), ("SVD", F), ("SVD", F)), F, rid="1"),
          _grade((("CIS", F), ("CIS", F), ("MS", T)), T, rid="2"),
          _grade((("MS", T), ("MS", T)), T, task=u, rid="3"),
          Judgment("m", True, "l1", "lesion", 1, True, 1.0),
          _grade((("SVD", F), ("SVD", F), ("SVD", F)), F, who="student", person="a", rid="4"),
          _grade((("CIS", F), ("CIS", F), ("MS", T)), T, who="student", person="b", rid="5")]
    rows = {r.who: r for r in anchoring_rows(js)}
    m = rows["m"]
    assert (m.conversations, m.tasks, m.unjudged, m.marked) == (3, 2, 0, 2)
    assert m.final_correct.value == 0.75  # (1/2 + 1) / 2 over tasks: pass@1 on these tasks
    share = m.shares["no_change_wrong_first"]
    assert (share.n, share.k, share.estimate.value) == (2, 1, 0.5)
    assert m.shares["wrong_end_correct_first"].n == 1
    assert m.shares["no_change_after_disconfirming"].k == 1
    s = rows["student"]
    assert (s.people, s.shares["correct_end_wrong_first"].estimate.value) == (2, 0.5)
    assert rows["all models"].conversations == 3


def test_experts_judge_stages_by_majority_and_the_grader_reads_the_change() -> None:
    assert stage_consensus([[T, F], [T, None], [F, None]], 2) == [T, F]  # 2 of 3; 0 of 1
    assert stage_consensus([[T, None], [F, None]], 2) == [F, None]  # a tie; nobody judged
    grade = _grade((("CIS", F), ("CIS", F), ("MS", T)), T)
    votes = [(True, 1.0, [], [F, F]), (True, 0.8, [], [F, T]), (False, 0.2, [], None)]
    e, tie = expert_judgment(who="m", is_model=True, task=TASK, votes=votes, person=None,
                             response_id="r", grade=grade)
    assert (e.source, e.correct, tie) == (EXPERTS, T, F)
    assert e.stages == ((F, F), (F, F), (T, T))  # experts' correctness, the grader's changes
    alone, _ = expert_judgment(who="m", is_model=True, task=TASK, votes=votes, person=None,
                               response_id="r")  # never graded: no change flags
    assert alone.stages == ((F, None), (F, None), (T, None))
    assert _shares(alone) == (None, T, None, None)  # only what needs no change flag
    pairs = {a.answers: a for a in stage_agreement([Judged(grade, e)])}
    assert (pairs[STAGES_BEFORE_LAST].pairs, pairs[STAGES_BEFORE_LAST].both_wrong) == (2, 2)
    assert pairs[FINAL_OVERALL].agreement.value == 1.0
    assert pairs[FINAL_LAST_STAGE].pairs == 1


def _nmb(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cli", *args], cwd=ROOT, env=dict(os.environ),
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("judge", ["grader", "experts"])
def test_on_the_demo_anchoring_and_pass_at_1_agree_on_the_final_answer(demo_study: Path,
                                                                       judge: str) -> None:
    out = _nmb("results", "--format", "json", "--by", "level", "--k", "1", "--judge", judge)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    level3 = {c["who"]: c for c in data["cells"] if c["keys"]["level"] == 3}
    rows = {r["who"]: r for r in data["anchoring"] if r["who"] != "all models"}
    assert set(rows) == set(level3) and len(rows) == 6
    for who, r in rows.items():
        assert r["unjudged"] == 0 and r["conversations"] == sum(level3[who]["sources"].values())
        assert r["final_correct"] == level3[who]["pass_at"]["1"], who
        shares = r["shares"]
        for share in shares.values():  # one definition: the share printed is its k/n
            n = share["n"]
            assert share["estimate"]["value"] == (round(share["k"] / n, 4) if n else None)
        wrong_first = shares["correct_end_wrong_first"]["n"]
        assert wrong_first + shares["wrong_end_correct_first"]["n"] == r["conversations"]
    conflicts = data["conflicts"]
    assert conflicts and all(c["correct_diagnosis"] != c["last_stage"] for c in conflicts)
    assert any(f"{len(conflicts)} of " in f and "last stage" in f for f in data["flags"])
    agreement = {a["answers"]: a for a in data["stage_agreement"]}
    assert agreement[STAGES_BEFORE_LAST]["pairs"] > 0  # the demo experts judge stages too
