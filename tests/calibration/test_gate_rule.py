"""The gate's decision rule and the sample-size planner, by simulation: a grader whose true r is
the threshold rarely passes the default rule, and the planner's chance of passing matches an
independent simulation through the report's own interval of r."""

import math

import numpy as np
import pytest

from calibration.gate import decide, gate_checks
from calibration.plan import Settings, lower_bounds, pass_probability, plan
from calibration.protocol import POINT_ESTIMATE, Gate, interval_level
from errors import UserError
from stats.correlation import _moment_products, pearson
from stats.resample import bootstrap_weights


def _study(rng: np.random.Generator, rho: float, cases: int, per_case: int,
           within: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """x, y and each item's case: a case part shared by the case's items, an item part."""
    def pair(n: int) -> tuple[np.ndarray, np.ndarray]:
        z = rng.multivariate_normal([0, 0], [[1, rho], [rho, 1]], size=n)
        return z[:, 0], z[:, 1]

    (ca, cb), (ua, ub) = pair(cases), pair(cases * per_case)
    case = np.repeat(np.arange(cases), per_case)
    return (math.sqrt(within) * ca[case] + math.sqrt(1 - within) * ua,
            math.sqrt(within) * cb[case] + math.sqrt(1 - within) * ub, case)


def _passes(rule: str, rho: float, *, cases: int, per_case: int = 1, within: float = 0.0,
            studies: int, resamples: int, seed: int) -> float:
    """Share of simulated studies whose r check passes, each judged as a report judges it:
    `stats.correlation.pearson` over case resamples, then the gate's rule."""
    gate = Gate(rule=rule)
    rng = np.random.default_rng(seed)
    passed = 0
    for study in range(studies):
        x, y, case = _study(rng, rho, cases, per_case, within)
        res = pearson(x, y, bootstrap=resamples, seed=10_000 + study, clusters=case)
        check = gate_checks(gate, res, None, None, pearson_ci=res.ci95_bootstrap,
                            min_items=30)[0]
        passed += check.passed
    return passed / studies


@pytest.mark.slow
def test_a_grader_at_the_threshold_passes_the_default_rule_in_at_most_5_percent() -> None:
    """True r = 0.90, 60 cases: the lower-bound rule passes it in at most 5 % of studies (about
    2.5 % expected); the point-estimate rule passes it about half the time."""
    share = _passes(Gate().rule, 0.90, cases=60, studies=400, resamples=2000, seed=1)
    assert share <= 0.05, share
    point = _passes(POINT_ESTIMATE, 0.90, cases=60, studies=400, resamples=2000, seed=1)
    assert 0.35 <= point <= 0.65, point


@pytest.mark.slow
def test_the_planner_matches_an_independent_simulation_within_3_points() -> None:
    settings = Settings(expected_r=0.96, threshold=0.9, bootstrap=500, within_case=0.3,
                        studies=2000, seed=3)
    predicted = pass_probability(settings, cases=20, items_per_case=3).pass_probability
    simulated = _passes(settings.rule, 0.96, cases=20, per_case=3, within=0.3, studies=1500,
                        resamples=500, seed=4)
    assert 0.5 < simulated < 0.98  # a chance the rule can miss, not a foregone one
    assert abs(predicted - simulated) <= 0.03, (predicted, simulated)


@pytest.mark.parametrize("method", ["studentized_z", "bca", "fisher"])
def test_each_simulated_bound_is_the_reports_bound(method: str) -> None:
    """One simulated study's r and lower bound equal `stats.correlation.pearson`'s on the same
    items and case resamples, at a Bonferroni-adjusted level."""
    x, y, case = _study(np.random.default_rng(5), 0.8, 12, 3, 0.2)
    units = np.stack([np.bincount(case, c) for c in (np.ones_like(x), x, y, x * x, x * y,
                                                     y * y)], axis=1)[None]
    level = interval_level(0.95, 2)
    st = Settings(expected_r=0.8, bootstrap=500, studies=50, pearson_ci=method, level=level)
    r, lower = lower_bounds(units, _moment_products(units), st, np.random.default_rng(7))
    res = pearson(x, y, weights=bootstrap_weights(len(x), 500, 7, case), clusters=case,
                  ci_method="bca" if method == "fisher" else method, confidence=level)
    want = (res.ci95_fisher if method == "fisher" else res.ci95_bootstrap)[0]
    assert r[0] == pytest.approx(res.r, abs=1e-12)
    assert lower[0] == pytest.approx(want, abs=1e-12)


def test_the_plan_names_the_smallest_size_reaching_the_power() -> None:
    st = Settings(expected_r=0.97, threshold=0.9, bootstrap=200, studies=200)
    out = plan(st, cases=(10, 30, 60), target=0.8)
    chances = [c.pass_probability for c in out.rows]
    assert chances == sorted(chances) and chances[-1] >= 0.8 > chances[0]
    assert out.smallest == next(c for c in out.rows if c.pass_probability >= 0.8)
    again = plan(st, cases=(10, 30, 60), target=0.8)  # seeded
    assert again.rows == out.rows
    with pytest.raises(UserError, match="--expected-r"):
        plan(Settings(expected_r=1.5), cases=(10,))


def test_the_rule_decides_on_the_lower_bound() -> None:
    assert decide(0.93, [0.91, 0.95], 0.9, rule="lower_bound", level=0.95, undefined="-")[0]
    ok, why = decide(0.93, [0.89, 0.95], 0.9, rule="lower_bound", level=0.95, undefined="-")
    assert not ok and why == ("the lower bound 0.890 of its 95.0% interval is below 0.9 "
                              "(estimate 0.930)")
    assert decide(0.93, [0.89, 0.95], 0.9, rule=POINT_ESTIMATE, level=0.95, undefined="-")[0]
    ok, why = decide(0.93, None, 0.9, rule="lower_bound", level=0.95, undefined="-")
    assert not ok and "no 95.0% interval" in why


@pytest.mark.slow
def test_cli_plan_prints_the_chance_per_size(nmb_home, capsys) -> None:
    import json

    from cli import main

    args = ["protocol", "plan", "--expected-r", "0.97", "--cases", "10", "40", "--studies", "100",
            "--bootstrap", "200"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert out.startswith("the default protocol: rule lower_bound, studentized_z interval at "
                          "95.0% (1 look), 200 resamples")
    assert "   10 cases x 1 =    10 items: P(pass)" in out
    assert main([*args, "--json", "--looks", "2"]) == 0
    plan_json = json.loads(capsys.readouterr().out)
    assert plan_json["settings"]["level"] == pytest.approx(0.975)
    assert [r["cases"] for r in plan_json["rows"]] == [10, 40]
    assert main(["protocol", "plan", "--expected-r", "1.2"]) == 2
    assert capsys.readouterr().err.count("\n") == 1
