"""What makes a comparison unfair, made visible: the family rule of self-grading, and missing
answers counted wrong in every measure (pass@k by Chen et al.'s estimator over all samples);
on the demo: tests/results/test_results.py."""

import pytest

from db.models import Task
from results.fairness import MISSING, Answer, missing_judgments, model_family, self_grading
from results.judgments import ABSENT, GRADER, Judgment
from results.leaderboard import cells, pass_at_k
from rubric.render import PROMPT_V1


@pytest.mark.parametrize(("grader", "model", "mark"), [
    ("gpt-4o", "gpt-4o", "same model"),
    ("openai/GPT-4o", "gpt-4o", "same model"),  # provider path and case aside
    ("gpt-4o", "gpt-4o-mini", "same family (gpt)"),
    ("gpt-4o-2024-08-06", "gpt-4.1", "same family (gpt)"),
    ("claude-3-5-sonnet-20241022", "anthropic/claude-sonnet-4", "same family (claude)"),
    ("Qwen2-VL-72B-Instruct", "qwen2.5-vl-7b", "same family (qwen)"),
    ("meta-llama/Llama-3.2-90B-Vision", "llama3.2-vision", "same family (llama)"),
    ("o3", "o1-mini", "same family (o)"),
    ("gpt-4o", "claude-3-opus", None),
    ("gemini-1.5-pro", "medgemma-4b", None),
    ("synthetic-demo-grader-2026-01-01", "meridian-med-2", None),
])
def test_self_grading_by_the_family_rule(grader: str, model: str, mark: str | None) -> None:
    assert self_grading(grader, model) == mark
    assert model_family("gpt-4o") == model_family("gpt-4o-mini") == "gpt"
    assert self_grading(None, model) is None


def _task(tid: str, family: str = "differential") -> Task:
    return Task(task_id=tid, case_id=f"case-{tid}", family=family, level=1, prompt="",
                stages=[])


def _grade(rid: str, task: Task, correct: bool, who: str = "m") -> Judgment:
    return Judgment(who, True, task.task_id, task.family, 1, correct, 1.0 if correct else 0.5,
                    source=GRADER, rank=1 if correct else ABSENT, response_id=rid,
                    case_id=task.case_id)


def test_missing_answers_count_wrong_in_every_measure() -> None:
    """Model m: 4 samples of t1 (2 correct), 2 of t2 (1 correct, 1 not graded: a failed
    grade), none of t3 (a failed collection); model n answered everything right. With missing
    answers counted wrong, every task has 4 samples: pass@2 of t2 is Chen et al.'s
    1 - C(3, 2) / C(4, 2) for 1 correct of 4, not pass@2 of 1 of 1 graded."""
    t1, t2, t3 = _task("t1"), _task("t2"), _task("t3", "lesion")
    graded = [_grade(f"m1{i}", t1, i < 2) for i in range(4)] + [_grade("m20", t2, True)]
    graded += [_grade(f"n{t.task_id}{i}", t, True, "n") for t in (t1, t2, t3) for i in range(4)]
    answers = [Answer(j.response_id, j.who, True, None, {"t1": t1, "t2": t2, "t3": t3}[j.task_id])
               for j in graded] + [Answer("m21", "m", True, None, t2)]
    missing, coverage = missing_judgments(graded, answers, [t1, t2, t3],
                                          prompt_version="nmb-grader-2")
    m_cov = next(c for c in coverage if c.who == "m")
    assert (m_cov.expected, m_cov.missing, m_cov.no_response, m_cov.not_graded) == (12, 7, 6, 1)
    assert all(c.missing == 0 for c in coverage if c.who == "n")
    assert {j.source for j in missing} == {MISSING} and not any(j.correct for j in missing)
    assert [j.rank for j in missing if j.task_id == "t2"] == [ABSENT] * 3  # asked: not in top-k
    assert [j.rank for j in missing if j.task_id == "t3"] == [None] * 4  # lesion: not asked

    m = next(c for c in cells(graded + missing, ks=(1, 2)) if c.who == "m")
    assert (m.tasks, m.min_samples, m.missing, m.wrong) == (3, 4, 7, 2)
    assert m.pass_at[1].value == round((2 / 4 + 1 / 4 + 0) / 3, 4)
    assert m.pass_at[2].value == round((pass_at_k(4, 2, 2) + pass_at_k(4, 1, 2) + 0) / 3, 4)
    assert pass_at_k(4, 1, 2) == pytest.approx(1 - 3 / 6)
    assert m.score.value == round((0.75 + 0.25 + 0) / 3, 4)
    assert m.top[1].value == round((0.5 + 0.25) / 2, 4)  # differential tasks t1, t2
    answered = next(c for c in cells(graded, ks=(1,)) if c.who == "m")  # answered tasks only
    assert (answered.tasks, answered.pass_at[1].value) == (2, round((0.5 + 1.0) / 2, 4))
    assert missing_judgments(graded, answers, [t1], prompt_version=PROMPT_V1)[0][0].rank is None
