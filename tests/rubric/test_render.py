"""One rubric, three renderings: form spec, grader prompt, strict JSON schema."""

import hashlib
import json
from typing import Any

import pytest

from errors import UserError
from rubric import load_rubric
from rubric.render import (
    PROMPT_V1,
    PROMPT_V2,
    Asked,
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
    assert out.model_dump() == {
        "criteria": answer["criteria"],
        "correct_diagnosis": True,
        "error_tags": ["perceptual_failure"],
        "justification": answer["justification"],
        "overall": pytest.approx((0.75 + 0.5 + 1.0) / 3),
        "diagnosis_rank": None,
        "stages": None,
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


def test_prompt_v1_is_byte_identical_to_the_unversioned_prompt() -> None:
    """nmb-grader-1 must never change: old cache keys and frozen packages rebuild from it. The
    digest was taken from the prompt and schema as they were before prompts were versioned."""
    h = hashlib.sha256()
    for family in (None, "differential", "lesion", "rationale"):
        asked = Asked.of(PROMPT_V1, family or "differential", 3)
        h.update(grader_instructions(R, family, asked).encode())
        h.update(json.dumps(output_json_schema(R, family, asked)).encode())
    assert h.hexdigest() == "e9e3223124cedc3d2a5d42b2cf6426ae79bcff403ec44721560d1f8de566d314"


def test_prompt_v2_asks_the_rank_on_differential_tasks_and_stages_on_multi_turn_ones() -> None:
    assert Asked.of(PROMPT_V2, "differential", 0) == Asked(rank=True, stages=0)
    assert Asked.of(PROMPT_V2, "lesion", 2) == Asked(rank=False, stages=3)
    assert Asked.of(PROMPT_V1, "differential", 2) == Asked()
    with pytest.raises(UserError, match="prompt_version 'nmb-grader-9'"):
        Asked.of("nmb-grader-9", "lesion", 0)
    asked = Asked(rank=True, stages=3)
    schema = output_json_schema(R, "differential", asked)
    assert_strict(schema)
    assert schema["required"][-2:] == ["diagnosis_rank", "stages"]
    assert list(schema["properties"]["stages"]["properties"]) == ["stage_1", "stage_2", "stage_3"]
    assert "changed" not in schema["properties"]["stages"]["properties"]["stage_1"]["properties"]
    text = grader_instructions(R, "differential", asked)
    assert "diagnosis_rank" in text and "for each of the 3 answers" in text
    assert "diagnosis_rank" not in grader_instructions(R, "differential")


def _staged_answer() -> dict:
    return {**grader_answer(), "diagnosis_rank": 2, "stages": {
        "stage_1": {"leading_diagnosis": "CIS", "correct": False},
        "stage_2": {"leading_diagnosis": "MS", "correct": True, "changed": True}}}


def test_a_v2_answer_parses_with_its_rank_and_stages() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    asked = Asked(rank=True, stages=2)
    answer = _staged_answer()
    jsonschema.validate(answer, output_json_schema(R, "rationale", asked))
    out = parse_grader_output(R, answer, "rationale", asked)
    assert out.diagnosis_rank == 2
    assert out.stages == [{"leading_diagnosis": "CIS", "correct": False, "changed": False},
                             {"leading_diagnosis": "MS", "correct": True, "changed": True}]
    assert parse_grader_output(R, {**answer, "diagnosis_rank": None}, "rationale",
                               asked).diagnosis_rank is None


@pytest.mark.parametrize(("change", "reason"), [
    ({"diagnosis_rank": 0}, "diagnosis_rank"),
    ({"diagnosis_rank": True}, "diagnosis_rank"),
    ({"stages": {"stage_1": {"leading_diagnosis": "CIS", "correct": False}}}, "stage_2"),
    ({"stages": {"stage_1": {"leading_diagnosis": "CIS", "correct": False, "changed": False},
                 "stage_2": {"leading_diagnosis": "MS", "correct": True, "changed": True}}},
     "stages.stage_1"),
    ({"stages": {"stage_1": {"leading_diagnosis": " ", "correct": False},
                 "stage_2": {"leading_diagnosis": "MS", "correct": True, "changed": True}}},
     "leading_diagnosis"),
    ({"stages": {"stage_1": {"leading_diagnosis": "CIS", "correct": "no"},
                 "stage_2": {"leading_diagnosis": "MS", "correct": True, "changed": True}}},
     "correct"),
])
def test_invalid_v2_answers_raise_value_error(change: dict, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        parse_grader_output(R, _staged_answer() | change, "rationale", Asked(rank=True, stages=2))
    with pytest.raises(ValueError, match="unexpected field"):  # v1 does not take them
        parse_grader_output(R, _staged_answer(), "rationale")


def test_neurology_v1_1_asks_the_grader_exactly_what_v1_asks() -> None:
    """v1.1 only adds short anchors for human raters: the same rubric content otherwise, and
    the grader's prompt and schema of every family, prompt version and stage count are v1's
    but for the id and version the prompt names."""
    v11 = load_rubric("neurology-v1.1")
    raw = {k: v for k, v in v11._raw.items() if k not in ("id", "version")}
    raw["criteria"] = [{k: v for k, v in c.items() if k != "short_anchors"}
                       for c in raw["criteria"]]
    assert raw == {k: v for k, v in R._raw.items() if k not in ("id", "version")}
    assert all(c.short_anchors for c in v11.criteria)
    names = ("(neurology-v1.1, version 1.1)", "(neurology-v1, version 1.0)")
    for version in (PROMPT_V1, PROMPT_V2):
        for family in (None, "differential", "lesion", "rationale"):
            for stages in (0, 2):
                asked = Asked.of(version, family or "differential", stages)
                prompt = grader_instructions(v11, family, asked)
                assert names[0] in prompt
                assert prompt.replace(*names) == grader_instructions(R, family, asked)
                assert output_json_schema(v11, family, asked) == output_json_schema(R, family, asked)
