"""Loading, hashing and refusing rubric files."""

import tomllib
from pathlib import Path

import pytest

from errors import UserError
from rubric import Rubric, bundled_rubrics, load_rubric, loads_rubric

# neurology-v1 is published: scores, grader configs and packages refer to this hash. Changing
# its content (not its comments) must come with a new rubric id, never an edit in place.
NEUROLOGY_V1_HASH = "fae91fd9a3e83611e03a05ad339cacdae41cc691174f25cd3d93214316b2d96a"
NEUROLOGY_V1_1_HASH = "c64a316f33f4d7fe7368d7418f531cd8fd762cdc8e259c45a94619bda912fcd6"


@pytest.fixture(scope="module")
def source() -> str:
    return load_rubric("neurology-v1").source_text


def test_bundled_rubric_loads() -> None:
    assert "neurology-v1" in bundled_rubrics()
    r = load_rubric("neurology-v1")
    assert r.id == "neurology-v1"
    assert (r.scale.min, r.scale.max) == (0, 4)
    assert r.family_keys == ["differential", "lesion", "rationale"]
    assert {c.key for c in r.criteria} >= {
        "final_diagnosis",
        "differential",
        "lesion_characterization",
        "multimodal_integration",
        "coherence",
    }
    assert r.error_class_keys == [
        "perceptual_failure",
        "reasoning_failure",
        "knowledge_gap",
        "grounding_error",
        "visual_hallucination",
    ]
    assert all(len(c.anchors) == 5 for c in r.criteria)
    assert (r.confidence.min, r.confidence.max) == (1, 5)
    assert tomllib.loads(r.source_text)["id"] == "neurology-v1"


def test_applicable_criteria_by_family() -> None:
    r = load_rubric("neurology-v1")
    keys = {f: [c.key for c in r.applicable_criteria(f)] for f in r.family_keys}
    assert "lesion_characterization" not in keys["differential"]
    assert "differential" not in keys["lesion"] and "final_diagnosis" not in keys["lesion"]
    assert keys["lesion"][0] == "lesion_characterization"
    for fam in r.family_keys:
        assert keys[fam][-2:] == ["multimodal_integration", "coherence"]
    with pytest.raises(UserError, match="family: unknown task family 'radiology'"):
        r.applicable_criteria("radiology")


def test_load_by_path_and_from_text(tmp_path: Path, source: str) -> None:
    path = tmp_path / "copy.toml"
    path.write_text(source)
    assert load_rubric(path).content_hash == load_rubric("neurology-v1").content_hash
    assert load_rubric(str(path)).content_hash == load_rubric("neurology-v1").content_hash
    assert loads_rubric(source).source_text == source


def test_unknown_name_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="unknown rubric 'neurology-v9'"):
        load_rubric("neurology-v9")
    with pytest.raises(UserError, match="rubric file not found"):
        load_rubric(tmp_path / "absent.toml")


def test_neurology_v1_hash_is_pinned() -> None:
    r = load_rubric("neurology-v1")
    assert len(r.content_hash) == 64
    assert r.content_hash == NEUROLOGY_V1_HASH
    assert load_rubric("neurology-v1.1").content_hash == NEUROLOGY_V1_1_HASH


def test_hash_ignores_comments_whitespace_and_key_order(source: str) -> None:
    base = loads_rubric(source).content_hash
    reformatted = "# a new comment\n\n" + source.replace("[scale]\nmin = 0\nmax = 4", (
        "[scale]   # levels\nmax   =   4\nmin = 0"
    ))
    assert reformatted != source
    assert loads_rubric(reformatted).content_hash == base


def test_hash_changes_with_content(source: str) -> None:
    base = loads_rubric(source).content_hash
    edited = source.replace("The principal lesion is missed", "The main lesion is missed")
    assert edited != source
    assert loads_rubric(edited).content_hash != base
    reweighted = source.replace("coherence = 1.0 }", "coherence = 2.0 }")
    assert reweighted != source
    assert loads_rubric(reweighted).content_hash != base


def test_hash_of_model_built_without_file_is_stable(source: str) -> None:
    raw = tomllib.loads(source)
    a, b = Rubric.model_validate(raw), Rubric.model_validate(raw)
    assert a.content_hash == b.content_hash
    with pytest.raises(ValueError, match="no source text"):
        _ = a.source_text


LESION_ANCHOR_0 = (
    '  "The principal lesion is missed, or a lesion is described that the images and '
    'reference do not contain.",\n'
)

BAD_FILES = [
    (LESION_ANCHOR_0, "", "criteria[2].anchors: expected 5 anchors for scale 0-4, got 4"),
    (
        'families = ["lesion", "rationale"]',
        'families = ["lesion", "rationales"]',
        "criteria[2].families: unknown family 'rationales'",
    ),
    ("na_rule = ", "na_rul = ", "criteria[2].na_rul: unknown field"),
    ("na_allowed = true\n", "", "criteria[2].na_rule: only allowed when na_allowed is true"),
    ("[scale]\nmin = 0\nmax = 4", '[scale]\nmin = 0\nmax = "four"', "scale.max: "),
    ("[scale]\nmin = 0\nmax = 4", "[scale]\nmin = 3\nmax = 2", "scale.max: must be greater"),
    ("schema_version = 1", "schema_version = 2", "schema_version: unsupported version 2"),
    ('id = "neurology-v1"', 'id = "Neurology V1"', "id: String should match pattern"),
    (
        'example = "The response states that acute infarcts',
        'sample = "The response states that acute infarcts',
        "error_classes[2].example: required field missing",
    ),
    (
        'key = "grounding_error"',
        'key = "knowledge_gap"',
        "error_classes: duplicate key 'knowledge_gap'",
    ),
    (", coherence = 1.0 }", " }", "overall.weights: missing weight for criterion 'coherence'"),
    ('method = "weighted_mean"', 'method = "median"', "overall.method: "),
    ('required_when = "any_error_tag"', 'required_when = "sometimes"', "comment.required_when"),
    ('  "Certain.",\n', "", "confidence.labels: expected 5 labels for scale 1-5, got 4"),
    ("[correct_diagnosis]\n", "[correct_diagnosis]\nname = 'again'\n", "invalid TOML"),
]


# `short_anchors` (neurology-v1.1): one per anchor, plain text of at most 40 characters; a
# rubric without them (neurology-v1) loads as before
BAD_SHORT_ANCHORS = [
    ('  "matches the reference",\n', "",
     "criteria[0].short_anchors: expected 5, one per anchor, got 4 (criterion 'final_diagnosis')"),
    ('"right broad category"', '"wrong diagnosis, but in the right broad disease category"',
     "criteria[0].short_anchors[1]: at most 40 characters, got 56 (criterion 'final_diagnosis': "),
    ('"right broad category"', "1", "criteria[0].short_anchors[1]: Input should be a valid string"),
    ('"matches the reference"', '"**matches** the reference"',
     "criteria[0].short_anchors[4]: must be plain text, without the markup character '*'"),
    ('"none, or all implausible"', '"none\\tor all implausible"',
     "criteria[1].short_anchors[0]: must be one non-empty line of printable text"),
]


@pytest.mark.parametrize(("rubric", "old", "new", "expected"),
                         [("neurology-v1", *bad) for bad in BAD_FILES]
                         + [("neurology-v1.1", *bad) for bad in BAD_SHORT_ANCHORS])
def test_bad_rubric_file_is_refused_naming_the_field(
    tmp_path: Path, rubric: str, old: str, new: str, expected: str
) -> None:
    source = load_rubric(rubric).source_text
    assert source.count(old) == 1, old
    path = tmp_path / "neurology-bad.toml"
    path.write_text(source.replace(old, new))
    with pytest.raises(UserError) as info:
        load_rubric(path)
    message = str(info.value)
    assert message.startswith(f"neurology-bad.toml: {expected}"), message
    assert "\n" not in message


def test_every_family_needs_a_criterion_that_cannot_be_na(source: str) -> None:
    bad = source.replace(
        'key = "coherence"\nname', 'key = "coherence"\nfamilies = ["differential"]\nname'
    ).replace(
        'key = "multimodal_integration"\nname',
        'key = "multimodal_integration"\nfamilies = ["differential"]\nname',
    )
    with pytest.raises(UserError, match="criteria: family 'lesion' needs at least one"):
        loads_rubric(bad, source="x.toml")


def test_docs_match_the_bundled_rubric() -> None:
    docs = (Path(__file__).parents[2] / "docs" / "rubric.md").read_text()
    r = load_rubric("neurology-v1")
    for c in r.criteria:
        assert f"| `{c.key}` | {c.name} |" in docs
    for e in r.error_classes:
        assert f"| `{e.key}` | {e.name} | {e.definition} | {e.example} |" in docs


def test_a_rubric_file_is_read_only_up_to_its_cap(tmp_path: Path) -> None:
    """A rubric file larger than any rubric is refused at MAX_RUBRIC_BYTES, not read whole (one
    that never ends, /dev/zero: tests/cli/test_cli.py, under a memory cap); TOML nested deeper
    than the parser's recursion is one line, not a RecursionError."""
    from rubric.loader import MAX_RUBRIC_BYTES

    huge = tmp_path / "huge.toml"
    huge.write_bytes(b"#" * (MAX_RUBRIC_BYTES + 1))
    with pytest.raises(UserError, match=f"huge.toml: is larger than {MAX_RUBRIC_BYTES:,} bytes"):
        load_rubric(huge)
    deep = tmp_path / "deep.toml"
    deep.write_text("x = " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(UserError, match="deep.toml: invalid TOML: nested too deeply"):
        load_rubric(deep)
