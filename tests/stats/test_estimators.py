"""The results' estimators against brute force or a hand computation on small data: the
bootstrap weights, the two-level bootstrap (its resampling unit and its distribution), the
per-person and per-task means, top-k, the experts' consensus and the error distribution (the
anchoring measures: tests/results/test_anchoring.py)."""

import itertools
from collections import Counter

import numpy as np
import pytest

from results.error_classes import UNTAGGED, allocation, compared_error_rows, error_rows, shares
from results.judgments import ABSENT, EXPERTS, GRADER, Judged, Judgment, consensus
from results.leaderboard import cells, top_k
from stats.intervals import TOO_FEW, crossed_variance, one_way_variance, share_interval
from stats.resample import bootstrap_weights, group_mean, over_people, pigeonhole, pooled_share


def test_bootstrap_weights_draw_n_items_per_resample():
    w = bootstrap_weights(50, 30, seed=0)
    assert w.shape == (30, 50) and (w.sum(axis=1) == 50).all()
    assert np.array_equal(w, bootstrap_weights(50, 30, seed=0))


def _exact_pigeonhole(answers: dict[tuple[str, str], float]) -> Counter:
    """The pigeonhole bootstrap distribution of the mean of person means, by enumeration: every
    ordered draw of people and every ordered draw of tasks, each answer kept as often as its
    person and its task were drawn (undefined draws left out, the rest renormalised)."""
    people = sorted({p for p, _ in answers})
    tasks = sorted({t for _, t in answers})
    dist: Counter = Counter()
    for p_draw in itertools.product(people, repeat=len(people)):
        for t_draw in itertools.product(tasks, repeat=len(tasks)):
            means = [np.mean(kept) for p in p_draw
                     if (kept := [answers[p, t] for t in t_draw if (p, t) in answers])]
            if means:
                dist[round(float(np.mean(means)), 9)] += 1
    total = sum(dist.values())
    return Counter({k: v / total for k, v in dist.items()})


def test_the_pigeonhole_bootstrap_matches_its_exact_distribution() -> None:
    """Unbalanced and crossed: a answered t1, t2, t3; b t1, t2; c t3."""
    answers = {("a", "t1"): 1.0, ("a", "t2"): 0.0, ("a", "t3"): 1.0, ("b", "t1"): 0.5,
               ("b", "t2"): 0.0, ("c", "t3"): 1.0}
    (person, task), values = zip(*answers, strict=True), list(answers.values())
    point, drawn, n_people, n_cases = pigeonhole(person, task, values, resamples=60000, seed=1)
    assert (point, n_people, n_cases) == (pytest.approx((2 / 3 + 0.25 + 1) / 3), 3, 3)
    exact = _exact_pigeonhole(answers)
    drawn = drawn[np.isfinite(drawn)]
    empirical = Counter(np.round(drawn, 9))
    tv = 0.5 * sum(abs(exact[k] - empirical[k] / drawn.size) for k in exact | empirical)
    assert tv < 0.02  # total variation distance between the sampled and exact distributions
    assert drawn.mean() == pytest.approx(sum(k * p for k, p in exact.items()), abs=0.01)


def test_the_human_interval_from_the_pigeonhole_resamples_drawn_by_a_loop() -> None:
    """Five cases (t1..t5, one task each), three people: the same draws (people, then cases)
    as a loop, each resample the mean of drawn people's means over their drawn cases; the
    interval is Wilson's at the crossed variance of both factors, people alone, cases alone."""
    person = ["a"] * 5 + ["b"] * 3 + ["c"] * 4
    task = [f"t{i}" for i in (1, 2, 3, 4, 5, 1, 2, 3, 2, 3, 4, 5)]
    values = [1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 0.2, 0.4, 0.9, 1.0]
    answers = dict(zip(zip(person, task, strict=True), values, strict=True))
    rng = np.random.default_rng(2)
    people_w, cases_w = bootstrap_weights(3, 500, rng), bootstrap_weights(5, 500, rng)

    def mean(pw, cw) -> float:
        means = [(w, np.average([answers[p, t] for t in "t1 t2 t3 t4 t5".split()
                                 if (p, t) in answers],
                                weights=[cw[int(t[1]) - 1] for t in "t1 t2 t3 t4 t5".split()
                                         if (p, t) in answers]))
                 for p, w in zip("abc", pw, strict=True)
                 if w and sum(cw[int(t[1]) - 1] for t in "t1 t2 t3 t4 t5".split()
                              if (p, t) in answers)]
        return sum(w * m for w, m in means) / sum(w for w, _ in means)

    ones_p, ones_c = np.ones(3), np.ones(5)
    both = [mean(p, c) for p, c in zip(people_w, cases_w, strict=True)]
    v, df = crossed_variance(both, [mean(p, ones_c) for p in people_w],
                             [mean(ones_p, c) for c in cases_w], 3, 5)
    point = mean(ones_p, ones_c)
    est = over_people(person, task, values, resamples=500, seed=2)
    assert est.value == round(point, 4) and est.note is None
    assert est.ci == [round(q, 4) for q in share_interval(point, v, df)]
    assert pigeonhole(person, task, values, resamples=500, seed=2)[1] == pytest.approx(both)


def test_the_pooled_share_is_k_over_n_with_intervals_from_a_loop() -> None:
    """The anchoring share (results.anchoring) is k/n over units, not a mean of per-task
    shares: 2 of 11 here, where the mean of the two tasks' shares would be 0.4. Its interval:
    a loop over the same draws, each resample the drawn units' k over their n (cases drawn for
    a model; people, then cases, for a human group, the variance taken apart as for pass@1),
    its variance at least that of the 11 answers as a simple random sample (Korn & Graubard
    1998: n* at most 11)."""
    case = ["c1", "c1", "c2", "c3", "c4", "c5", "c5", "c5", "c5", "c5", "c5"]
    value = [1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    per_task = group_mean(["t1", "t1", "t2", "t3", "t4", "t5", "t5", "t5", "t5", "t5", "t5"],
                          value, cases=case)
    model = pooled_share(value, case, resamples=400, seed=3)
    assert model.value == round(2 / 11, 4) and per_task.value == round((0.5 + 1 / 6) / 5, 4)
    w = bootstrap_weights(5, 400, 3)
    idx = ["c1 c2 c3 c4 c5".split().index(c) for c in case]
    loop = [sum(r[i] * v for i, v in zip(idx, value, strict=True)) / sum(r[i] for i in idx)
            for r in w]
    v = one_way_variance(np.array(loop), 5)
    assert (2 / 11) * (9 / 11) / v > 11  # the resamples' n* exceeds the answers: truncated
    srs = (2 / 11) * (9 / 11) / 11
    assert model.ci == [round(q, 4) for q in share_interval(2 / 11, v, 4, srs_variance=srs)]

    person = ["a"] * 6 + ["b"] * 5
    human = pooled_share(value, case, person, resamples=400, seed=3)
    rng = np.random.default_rng(3)
    people_w, cases_w = bootstrap_weights(2, 400, rng), bootstrap_weights(5, 400, rng)
    who = [0 if p == "a" else 1 for p in person]

    def pooled(pw, cw) -> float:
        weight = [pw[p] * cw[c] for p, c in zip(who, idx, strict=True)]
        drawn = sum(weight)  # nothing drawn: no share (left out of the variance)
        return sum(x * v for x, v in zip(weight, value, strict=True)) / drawn if drawn else np.nan

    v, df = crossed_variance([pooled(p, c) for p, c in zip(people_w, cases_w, strict=True)],
                             [pooled(p, np.ones(5)) for p in people_w],
                             [pooled(np.ones(2), c) for c in cases_w], 2, 5)
    assert human.value == round(2 / 11, 4)
    assert human.ci == [round(q, 4) for q in share_interval(2 / 11, v, df, srs_variance=srs)]
    assert pooled_share(value[:4], case[:4]).note == TOO_FEW  # four cases


def test_task_difficulty_shared_by_everyone_widens_the_human_interval() -> None:
    """When answers depend on the task only, every person's mean is the same and all the
    uncertainty is in which tasks the exam drew: the group's interval is as wide as the one
    over tasks (redrawing tasks within each person would shrink it by about sqrt(people))."""
    rng = np.random.default_rng(0)
    difficulty = rng.random(30)
    person = [f"p{p}" for p in range(25) for _ in range(30)]
    task = [f"t{t}" for _ in range(25) for t in range(30)]
    values = [difficulty[t] for _ in range(25) for t in range(30)]
    group = over_people(person, task, values)
    tasks = group_mean([f"t{t}" for t in range(30)], list(difficulty))
    width = lambda e: e.ci[1] - e.ci[0]  # noqa: E731
    assert group.value == pytest.approx(tasks.value, abs=1e-4)
    assert 0.9 < width(group) / width(tasks) < 1.1


def test_the_human_estimate_is_the_mean_of_person_means() -> None:
    # a: two tasks, one correct; b: one task, correct -> (0.5 + 1) / 2, not the pooled 2/3
    est = over_people(["a", "a", "b"], ["t1", "t2", "t1"], [1.0, 0.0, 1.0], resamples=4000)
    assert est.value == 0.75
    assert (est.ci, est.note) == (None, TOO_FEW)  # two cases: no interval
    five = over_people(["a"] * 5 + ["b"] * 5, [f"t{i}" for i in range(5)] * 2, [1.0, 0.0] * 5)
    low, high = five.ci
    assert five.value == 0.5 and 0.0 <= low < 0.5 < high <= 1.0
    by_task = group_mean(["t1", "t1", "t2"], [1.0, 0.0, 1.0])  # a model: task means 0.5, 1
    assert by_task.value == 0.75


def test_top_k_and_the_rank_that_was_not_asked() -> None:
    assert [top_k(r, 3) for r in (1, 3, 4, ABSENT, None)] == [1.0, 1.0, 0.0, 0.0, None]


def _j(who="m", task="t1", correct=True, *, person=None, rank=None, stages=(), tags=(),
       level=1, family="differential", source=GRADER, rid=""):
    return Judgment(who, person is None, task, family, level, correct, 0.5, tuple(tags),
                    person=person, source=source, rank=rank, stages=stages, response_id=rid)


def test_cells_by_hand() -> None:
    """Model m: t1 two samples (correct, wrong; ranks 1 and absent), t2 one wrong sample (rank
    2); students a (t1 right, t2 wrong) and b (t1 right)."""
    js = [_j(task="t1", rank=1), _j(task="t1", correct=False, rank=ABSENT, source=EXPERTS),
          _j(task="t2", correct=False, rank=2),
          _j("student", "t1", person="a"), _j("student", "t2", False, person="a"),
          _j("student", "t1", person="b")]
    model, student = cells(js, ks=(1, 2))
    assert (model.who, model.tasks, model.min_samples) == ("m", 2, 1)
    assert model.pass_at[1].value == 0.25  # (1/2 + 0) / 2
    assert model.pass_at[2].value is None  # t2 has one sample
    assert model.top[1].value == 0.25 and model.top[2].value == 0.75  # (1/2+0)/2, (1/2+1)/2
    assert model.sources == {EXPERTS: 1, GRADER: 2}
    assert (student.group, student.people, student.pass_at[1].value) == ("human", 2, 0.75)
    assert student.top[1].value is None and student.pass_at[2].value is None
    people = cells([j for j in js if j.person], people=True)
    assert [(c.who, c.keys, c.pass_at[1].value) for c in people] == [
        ("b", {"role": "student"}, 1.0), ("a", {"role": "student"}, 0.5)]


@pytest.mark.parametrize(("scores", "correct", "overall", "tags", "tie"), [
    ([(True, 0.8, ["a"]), (True, 0.6, []), (False, 0.1, ["a", "b"])], True, 0.5, ("a",), False),
    ([(True, 0.8, ["a"]), (False, 0.2, ["b"])], False, 0.5, (), True),
    ([(False, 0.4, ["b", "b"])], False, 0.4, ("b",), False),
])
def test_consensus_by_hand(scores, correct, overall, tags, tie) -> None:
    c = consensus(scores)
    assert (c.correct, c.overall, c.error_tags, c.tie) == (correct, pytest.approx(overall),
                                                           tags, tie)


def test_error_shares_by_hand_and_their_cluster_interval() -> None:
    classes = ["a", "b"]
    assert list(allocation(["a", "b"], classes)) == [0.5, 0.5, 0.0]
    assert list(allocation([], classes)) == [0.0, 0.0, 1.0]
    cases, tagsets = ["c1", "c1", "c2"], [["a"], ["a", "b"], []]
    got = shares(cases, tagsets, classes, resamples=4000)
    assert got["a"].value == 0.5 and got["b"].value == round(0.5 / 3, 4)
    assert got[UNTAGGED].value == round(1 / 3, 4)
    assert got["a"].ci is None and got["a"].note == TOO_FEW  # two cases
    # five cases: the responses of a case drawn together, each share a ratio of resampled sums
    cases = ["c1", "c1", "c2", "c3", "c4", "c4", "c5"]
    tagsets = [["a"], ["a", "b"], [], ["b"], ["a"], [], ["a"]]
    got = shares(cases, tagsets, classes, resamples=300, seed=1)
    weights = bootstrap_weights(5, 300, 1)
    a_weight = {"c1": 1.5, "c2": 0.0, "c3": 0.0, "c4": 1.0, "c5": 1.0}
    size = {"c1": 2, "c2": 1, "c3": 1, "c4": 2, "c5": 1}
    drawn = [sum(w * a_weight[c] for w, c in zip(row, sorted(size), strict=True))
             / sum(w * size[c] for w, c in zip(row, sorted(size), strict=True)) for row in weights]
    # the variance at least that of the 7 responses' shares of "a" as a simple random sample
    srs = np.var([1, 0.5, 0, 0, 1, 0, 1]) / 7
    assert srs > np.var(drawn) * 5 / 4  # the floor holds here (Korn & Graubard 1998)
    ci = share_interval(3.5 / 7, np.var(drawn) * 5 / 4, 4, srs_variance=srs)
    assert got["a"].value == 0.5 and got["a"].ci == [round(q, 4) for q in ci]


def test_error_rows_use_one_judge_and_the_comparison_only_responses_both_judged() -> None:
    """The judge's rows: its wrong responses and its tags. The comparison: only responses both
    judged and both judged wrong (r1), with r2 (judged wrong by the grader only) disputed and
    r3 (graded only) and r4 (correct for both) left out."""
    grades = {"r1": _j("m", "t1", False, tags=("b",), rid="r1"),
              "r2": _j("m", "t2", False, tags=("a",), rid="r2"),
              "r3": _j("m", "t3", False, tags=("a",), rid="r3"),
              "r4": _j("m", "t4", True, tags=("a",), rid="r4"),
              "r5": _j("student", "t1", False, person="p", rid="r5")}
    experts = {"r1": _j("m", "t1", False, tags=("a",), source=EXPERTS, rid="r1"),
               "r2": _j("m", "t2", True, source=EXPERTS, rid="r2"),
               "r4": _j("m", "t4", True, source=EXPERTS, rid="r4")}
    rows = {(r.who, r.source): r for r in error_rows(grades.values(), ["a", "b"])}
    assert set(rows) == {("m", GRADER), ("all models", GRADER), ("student", GRADER)}
    assert rows["m", GRADER].wrong == 3 and rows["m", GRADER].shares["a"].value == round(2 / 3, 4)
    assert rows["student", GRADER].shares[UNTAGGED].value == 1.0
    judged = [Judged(g, experts.get(rid)) for rid, g in grades.items()]
    compared = {(r.who, r.source): r for r in compared_error_rows(judged, ["a", "b"])}
    assert set(compared) == {("m", EXPERTS), ("m", GRADER), ("all models", EXPERTS),
                             ("all models", GRADER)}
    assert compared["m", EXPERTS].wrong == compared["m", GRADER].wrong == 1
    assert compared["m", EXPERTS].shares["a"].value == 1.0
    assert compared["m", GRADER].shares["b"].value == 1.0
    assert compared["m", GRADER].disputed == 1
