"""One rubric, three renderings: form spec, grader prompt, strict JSON schema."""

from typing import Any

import pytest

from rubric import load_rubric
from rubric.render import (
    form_spec,
    grader_instructions,
    output_json_schema,
    parse_grader_output,
)

R = load_rubric("neurology-v1")
STRICT_KEYWORDS = {
    "type", "properties", "required", "additionalProperties", "items", "enum", "anyOf",
    "description",
}


def assert_strict(schema: dict[str, Any], path: str = "$") -> None:
    """OpenAI strict mode: supported keywords only; every object requires all its properties
    and forbids others."""
    assert set(schema) <= STRICT_KEYWORDS, (path, set(schema) - STRICT_KEYWORDS)
    if schema.get("type") == "object":
        assert schema["additionalProperties"] is False, path
        assert schema["required"] == list(schema["properties"]), path
    for key, sub in schema.get("properties", {}).items():
        assert_strict(sub, f"{path}.{key}")
    if "items" in schema:
        assert_strict(schema["items"], f"{path}[]")
    for i, sub in enumerate(schema.get("anyOf", [])):
        assert_strict(sub, f"{path}|{i}")


@pytest.mark.parametrize("family", [None, "differential", "lesion", "rationale"])
def test_output_schema_is_strict_mode_valid(family: str | None) -> None:
    schema = output_json_schema(R, family)
    assert_strict(schema)
    assert list(schema["properties"])[0] == "justification"
    expected = [c.key for c in (R.applicable_criteria(family) if family else R.criteria)]
    assert list(schema["properties"]["criteria"]["properties"]) == expected
    assert schema["properties"]["error_tags"]["items"]["enum"] == R.error_class_keys
    assert schema["properties"]["correct_diagnosis"]["type"] == "boolean"


def grader_answer() -> dict:
    return {
        "justification": "Names the left MCA infarct; misses the DWI restriction.",
        "criteria": {
            "final_diagnosis": 3,
            "lesion_characterization": None,
            "multimodal_integration": 2,
            "coherence": 4,
        },
        "correct_diagnosis": True,
        "error_tags": ["perceptual_failure"],
    }


def test_a_schema_valid_answer_parses() -> None:
    jsonschema = pytest.importorskip("jsonschema")  # installed with streamlit (via altair)
    answer = grader_answer()
    jsonschema.validate(answer, output_json_schema(R, "rationale"))
    out = parse_grader_output(R, answer, "rationale")
    assert out == {
        "criteria": answer["criteria"],
        "correct_diagnosis": True,
        "error_tags": ["perceptual_failure"],
        "comment": answer["justification"],
        "confidence": None,
        "overall": pytest.approx((0.75 + 0.5 + 1.0) / 3),
    }
    bad = {**answer, "criteria": {**answer["criteria"], "coherence": 5}}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, output_json_schema(R, "rationale"))


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"criteria": {"final_diagnosis": 5}}, "criteria"),
        ({"error_tags": ["confabulation"]}, "unknown error class"),
        ({"justification": " "}, "justification"),
        ({"verdict": "ok"}, "unexpected field"),
        ({"correct_diagnosis": "true"}, "correct_diagnosis"),
    ],
)
def test_invalid_grader_answer_raises_value_error(change: dict, reason: str) -> None:
    answer = grader_answer() | change
    with pytest.raises(ValueError, match=reason):
        parse_grader_output(R, answer, "rationale")
    missing = grader_answer()
    del missing["error_tags"]
    with pytest.raises(ValueError, match="missing field"):
        parse_grader_output(R, missing, "rationale")


def test_grader_instructions_come_from_the_rubric() -> None:
    text = grader_instructions(R)
    for c in R.criteria:
        assert c.name in text
        assert all(anchor in text for anchor in c.anchors)
    for e in R.error_classes:
        assert e.definition in text and e.example in text
    assert R.correct_diagnosis.definition in text
    lesion_only = grader_instructions(R, "lesion")
    assert "final_diagnosis" not in lesion_only and "lesion_characterization" in lesion_only


def test_form_spec_for_a_family() -> None:
    spec = form_spec(R, "lesion")
    assert [c.key for c in spec.criteria] == [c.key for c in R.applicable_criteria("lesion")]
    lesion = spec.criteria[0]
    assert [level for level, _ in lesion.anchors] == [0, 1, 2, 3, 4]
    assert lesion.anchors[4][1] == R.criterion("lesion_characterization").anchors[4]
    assert lesion.na_allowed and lesion.na_rule
    assert [t.key for t in spec.tags] == R.error_class_keys and all(t.definition for t in spec.tags)
    assert [v for v, _ in spec.confidence] == [1, 2, 3, 4, 5]
    assert spec.rubric_hash == R.content_hash
    assert R.correct_diagnosis.families["lesion"] in spec.judgment_help
    assert spec.comment_required_when == "any_error_tag"
