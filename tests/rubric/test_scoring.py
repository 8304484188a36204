"""The data layer's guard: validate_score and the overall formula."""

import pytest

from errors import UserError
from rubric import load_rubric
from rubric.scoring import MissingFields, overall, validate_score

R = load_rubric("neurology-v1")


def differential_score(**changes: object) -> dict:
    score = {
        "criteria": {
            "final_diagnosis": 4,
            "differential": 2,
            "multimodal_integration": 3,
            "coherence": 1,
        },
        "correct_diagnosis": True,
        "error_tags": [],
        "comment": "",
        "confidence": 4,
    }
    score.update(changes)
    return score


def test_valid_score_is_normalized_with_overall() -> None:
    out = validate_score(R, differential_score(comment="  fine  "), family="differential")
    # (4/4 + 2/4 + 3/4 + 1/4) / 4 with equal weights
    assert out["overall"] == pytest.approx(0.625)
    assert out["comment"] == "fine"
    assert list(out) == [
        "criteria", "correct_diagnosis", "error_tags", "comment", "confidence", "overall"
    ]
    assert validate_score(R, out, family="differential") == out


def test_overall_bounds_and_na_left_out() -> None:
    top = {"lesion_characterization": 4, "multimodal_integration": 4, "coherence": 4}
    assert overall(R, top, "lesion") == 1.0
    assert overall(R, dict.fromkeys(top, 0), "lesion") == 0.0
    rationale = {
        "final_diagnosis": 4,
        "lesion_characterization": None,
        "multimodal_integration": 2,
        "coherence": 0,
    }
    assert overall(R, rationale, "rationale") == pytest.approx((1 + 0.5 + 0) / 3)


@pytest.mark.parametrize("level", [5, -1, 100])
def test_level_outside_scale_is_refused(level: int) -> None:
    score = differential_score()
    score["criteria"]["coherence"] = level
    with pytest.raises(UserError, match=f"criteria.coherence: level {level} is outside the scale 0-4"):
        validate_score(R, score, family="differential")


@pytest.mark.parametrize("level", [True, 2.0, "3"])
def test_level_must_be_an_integer(level: object) -> None:
    score = differential_score()
    score["criteria"]["differential"] = level
    with pytest.raises(UserError, match="criteria.differential: expected an integer level 0-4"):
        validate_score(R, score, family="differential")


def test_missing_unknown_and_inapplicable_criteria() -> None:
    score = differential_score()
    del score["criteria"]["coherence"]
    with pytest.raises(MissingFields, match="Still to answer: “Coherence") as e:
        validate_score(R, score, family="differential")
    assert list(e.value.fields) == ["criteria.coherence"]
    score = differential_score()
    score["criteria"]["empathy"] = 3
    with pytest.raises(UserError, match="criteria.empathy: unknown criterion"):
        validate_score(R, score, family="differential")
    score = differential_score()
    score["criteria"]["lesion_characterization"] = 3
    with pytest.raises(UserError, match="lesion_characterization: not applicable to family"):
        validate_score(R, score, family="differential")
    score["criteria"]["lesion_characterization"] = None  # null for an inapplicable one: dropped
    out = validate_score(R, score, family="differential")
    assert "lesion_characterization" not in out["criteria"]


def test_na_only_where_allowed() -> None:
    criteria = {
        "final_diagnosis": 3,
        "lesion_characterization": None,
        "multimodal_integration": 3,
        "coherence": 3,
    }
    score = {"criteria": criteria, "correct_diagnosis": True}
    out = validate_score(R, score, family="rationale")
    assert out["criteria"]["lesion_characterization"] is None
    assert out["error_tags"] == [] and out["comment"] == "" and out["confidence"] is None
    with pytest.raises(UserError, match="criteria.coherence: N/A is not allowed"):
        validate_score(R, {**score, "criteria": {**criteria, "coherence": None}}, family="rationale")


def test_error_tags_known_and_deduplicated_in_rubric_order() -> None:
    score = differential_score(
        error_tags=["visual_hallucination", "perceptual_failure", "visual_hallucination"],
        comment="Describes enhancement although no contrast series was given.",
    )
    out = validate_score(R, score, family="differential")
    assert out["error_tags"] == ["perceptual_failure", "visual_hallucination"]
    bad = differential_score(error_tags=["reasoning_failure", "halucination"], comment="x")
    with pytest.raises(UserError, match=r"error_tags\[1\]: unknown error class 'halucination'"):
        validate_score(R, bad, family="differential")


def test_comment_required_when_a_tag_is_set() -> None:
    with pytest.raises(MissingFields, match="required when an error class is chosen"):
        validate_score(R, differential_score(error_tags=["knowledge_gap"]), family="differential")
    with pytest.raises(MissingFields, match="required when an error class is chosen"):
        validate_score(R, 
            differential_score(error_tags=["knowledge_gap"], comment="   "), family="differential"
        )
    validate_score(R, differential_score(comment=""), family="differential")


def test_judgment_confidence_and_unknown_fields() -> None:
    with pytest.raises(MissingFields, match="answer Yes or No"):
        validate_score(R, differential_score(correct_diagnosis=None), family="differential")
    with pytest.raises(UserError, match="correct_diagnosis: expected true or false, got 'yes'"):
        validate_score(R, differential_score(correct_diagnosis="yes"), family="differential")
    with pytest.raises(UserError, match="confidence: 6 is outside the scale 1-5"):
        validate_score(R, differential_score(confidence=6), family="differential")
    with pytest.raises(UserError, match="confidence: 0 is outside the scale 1-5"):
        validate_score(R, differential_score(confidence=0), family="differential")
    with pytest.raises(UserError, match="score.score: unknown field"):
        validate_score(R, differential_score(score=3), family="differential")
    with pytest.raises(UserError, match="family: unknown task family 'ddx'"):
        validate_score(R, differential_score(), family="ddx")


def test_a_blank_form_names_every_missing_field_in_the_rubrics_words() -> None:
    family = "differential"
    with pytest.raises(MissingFields) as e:
        validate_score(R, {"criteria": {}, "error_tags": ["knowledge_gap"]}, family=family)
    applicable = R.applicable_criteria(family)
    assert list(e.value.fields) == [f"criteria.{c.key}" for c in applicable] + [
        "correct_diagnosis", "comment"]
    for c in applicable:
        assert c.name in str(e.value)
    assert R.correct_diagnosis.question in str(e.value)
    assert R.comment.prompt in str(e.value)
