""""Validated" carries its terms: a protocol weaker than the default is registered only when
accepted as such, and its terms (rule, thresholds, level with its look adjustment, held-out
items and cases, weaker than the default) go with the validation to the site and the package."""

import json
import re
from pathlib import Path

from markupsafe import escape

from calibration.protocol import RECOMMENDED_CASES, Gate, Protocol, Statistics, Subset
from calibration.terms import ValidationTerms


def _terms(gate: Gate, cases: int) -> ValidationTerms:
    subset = Subset(n_dev=10, n_heldout=2 * cases, seed=0, sha256="ab" * 32, n_heldout_cases=cases)
    return ValidationTerms.of(Protocol(gate, Statistics(), subset, id=1, content_hash="ab" * 32))


def test_terms_say_what_decides_at_which_level_and_what_is_weaker() -> None:
    strict = _terms(Gate(), RECOMMENDED_CASES)
    assert strict.weaker_text() is None and "weaker" not in strict.text()
    assert ("decided on the lower bounds of 95% intervals (one-sided 97.5% bounds; 1 held-out "
            "look)") in strict.text()
    assert f"{2 * RECOMMENDED_CASES} held-out items in {RECOMMENDED_CASES} cases" in strict.text()
    lax = _terms(Gate(rule="point_estimate", pearson_min=0.6, icc2_min=0.4, looks=2,
                      required=("pearson", "icc2")), RECOMMENDED_CASES - 1)
    assert ("decided on the point estimates, not their 97.5% intervals (95% family-wise, "
            "Bonferroni over 2 looks); Pearson r ≥ 0.6, ICC(2,1) ≥ 0.4, Alt-Test winning rate "
            "≥ 0.5 (epsilon 0.2, q 0.05) (not required)") in lax.text()
    assert lax.weaker_text() == (
        "weaker than the default protocol: rule point_estimate (default lower_bound), Pearson r "
        "threshold 0.6 (default 0.9), ICC(2,1) threshold 0.4 (default 0.75), alt_test not "
        "required (default: all of pearson icc2 alt_test), 66 held-out cases, fewer than the "
        "planner's 67 - registered before a weaker protocol needed accepting")


def test_a_lax_protocol_needs_its_flag_and_its_terms_are_published(demo_study: Path,
                                                                   tmp_path: Path,
                                                                   capsys) -> None:
    from cli import main

    def nmb(*args: str) -> tuple[int, str, str]:
        code = main(list(args))
        out, err = capsys.readouterr()
        return code, out, err

    lax = ("protocol", "register", "--rule", "point_estimate", "--pearson-min", "0.6",
           "--icc-min", "0.4", "--looks", "2")
    code, out, err = nmb(*lax)
    assert code == 2 and out == "" and err.count("\n") == 1 and "Traceback" not in err
    assert ("weaker than the default protocol: rule point_estimate (default lower_bound), "
            "Pearson r threshold 0.6 (default 0.9), ICC(2,1) threshold 0.4 (default 0.75), ") in err
    assert re.search(r"\d+ held-out cases, fewer than the planner's 67; register it with "
                     r"--accept-weaker-than-default", err), err
    assert json.loads(nmb("protocol", "show")[1])["id"] == 1  # nothing stored
    code, out, _ = nmb(*lax, "--accept-weaker-than-default")
    assert code == 0 and out.startswith("protocol 2 (sha256 ") and "is in force: " in out
    assert "Bonferroni over 2 looks" in out and "accepted at registration" in out
    assert json.loads(nmb("protocol", "show")[1])["accepted_weaker_than_default"] is True

    code, out, _ = nmb("calibrate", "--config", "1", "--part", "heldout", "--out",
                       str(tmp_path / "report"))
    look = json.loads(out)
    assert code == 0 and look["passed"] and look["protocol_id"] == 2
    terms = look["terms"]
    assert terms.startswith("protocol 2 (sha256 ") and "Pearson r ≥ 0.6, ICC(2,1) ≥ 0.4" in terms
    assert "weaker than the default protocol: rule point_estimate" in terms
    assert str(escape(terms)) in (tmp_path / "report" / "report.html").read_text()
    code, _, err = nmb("leaderboard", "--config", "1")
    assert code == 0 and f"nmb: note: grader config #1 is validated under {terms}\n" in err

    assert nmb("results", "--site", str(tmp_path / "site"))[0] == 0
    page = (tmp_path / "site" / "index.html").read_text()
    assert f"validated (a passing held-out look) under {escape(terms)}" in page
    assert str(escape("is validated under a protocol weaker than the default protocol")) in page
    site = json.loads((tmp_path / "site" / "leaderboard.json").read_text())
    assert site["grader"]["validation_terms"] == terms

    assert nmb("package", "freeze", "--config", "1", "--out", str(tmp_path / "g.zip"))[0] == 0
    code, out, _ = nmb("package", "verify", str(tmp_path / "g.zip"))
    verified = json.loads(out)
    assert code == 0 and verified["validation_terms"] == terms
    assert verified["weaker_than_default"].startswith("weaker than the default protocol: rule "
                                                      "point_estimate")


def test_the_recommended_cases_are_the_planners() -> None:
    """RECOMMENDED_CASES is what `nmb protocol plan --expected-r 0.95 --defaults` prints as the
    smallest held-out part reaching 80 %: it reaches 0.8 there, and one case fewer does not."""
    from calibration.plan import Settings, pass_probability

    st = Settings(expected_r=0.95)
    assert pass_probability(st, cases=RECOMMENDED_CASES).pass_probability >= 0.8
    assert pass_probability(st, cases=RECOMMENDED_CASES - 1).pass_probability < 0.8
