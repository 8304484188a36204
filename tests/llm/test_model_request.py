"""The database-free request builder for models under test, and its call layer."""

import asyncio
import hashlib

import pytest

from db.models import Case, Task
from errors import UserError
from llm.grader_request import make_client
from llm.model_call import answer_text, call_text
from llm.model_request import (
    FAMILY_NAMES,
    LEVEL_NAMES,
    TEMPLATE,
    CollectSettings,
    KeyImage,
    conversation,
    request_key,
    template_hash,
    turn_request,
)
from rubric.schema import canonical_json
from tests.openai_server import OpenAIServer

PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 8


def _case(scores: dict) -> Case:
    return Case(case_id="c", title="A synthetic case", ehr="Record text.", scores=scores,
                ground_truth={"final_diagnosis": "secret"}, bundle="b")


TASK = Task(task_id="t", case_id="c", family="rationale", level=3, prompt="What now?",
            stages=["CSF: oligoclonal bands.", "A new lesion appears."])
SETTINGS = CollectSettings(model="m", base_url="http://127.0.0.1:9/v1")


def test_the_exam_content_in_its_stored_order_and_nothing_else() -> None:
    messages = conversation(TASK, _case({"MoCA": 21, "MMSE": 24}), [], [])
    assert [m["role"] for m in messages] == ["system", "user"]
    assert messages[1]["content"] == (
        "# Case: A synthetic case\n\n# Health record\n\nRecord text.\n\n"
        "# Neuropsychological scores\n\n- MoCA: 21\n- MMSE: 24\n\n"
        "# Task: Rationale generation, level 3 (multi-turn)\n\nWhat now?\n\n"
        "More information is revealed after each answer.")
    assert "secret" not in str(messages)
    swapped = turn_request(SETTINGS, TASK, _case({"MMSE": 24, "MoCA": 21}), [], [])
    same = turn_request(SETTINGS, TASK, _case({"MoCA": 21, "MMSE": 24}), [], [])
    assert request_key(swapped, base_url=None, sample=0) != request_key(same, base_url=None,
                                                                           sample=0)


def test_images_between_the_case_and_the_task() -> None:
    images = [KeyImage("T1, axial, slice 5 of 9", PNG), KeyImage("T1, coronal, slice 4 of 8", PNG)]
    content = conversation(TASK, _case({}), images, [])[1]["content"]
    assert [p["type"] for p in content] == ["text", "text", "image_url", "text", "image_url",
                                            "text"]
    assert content[0]["text"].endswith(TEMPLATE["images"].format(count=2))
    assert content[1]["text"] == "T1, axial, slice 5 of 9:"
    assert content[2]["image_url"]["url"] == images[0].data_url()
    assert content[-1]["text"].startswith("# Task: Rationale generation")
    assert turn_request(SETTINGS, TASK, _case({}), images, []).image_count == 2


def test_one_stage_after_each_answer() -> None:
    case = _case({})
    messages = conversation(TASK, case, [], ["first", "second"])
    assert [(m["role"], m["content"]) for m in messages[2:]] == [
        ("assistant", "first"), ("user", "Stage 2 revealed.\n\nCSF: oligoclonal bands."),
        ("assistant", "second"), ("user", "Stage 3 revealed.\n\nA new lesion appears.")]
    with pytest.raises(ValueError):
        turn_request(SETTINGS, TASK, case, [], ["1", "2", "3"])


def test_cache_key_covers_endpoint_sample_and_body() -> None:
    req = turn_request(SETTINGS, TASK, _case({}), [], [])
    keys = {request_key(req, base_url=u, sample=k) for u in (None, "http://a/v1") for k in (0, 1)}
    assert len(keys) == 4
    assert request_key(req, base_url=None, sample=0) == hashlib.sha256(canonical_json(
        {"base_url": None, "request": req.body(), "sample": 0}).encode()).hexdigest()


def test_template_is_hashed(monkeypatch) -> None:
    assert template_hash() == hashlib.sha256(canonical_json(TEMPLATE).encode()).hexdigest()
    before = template_hash()
    monkeypatch.setitem(TEMPLATE, "stage", "Stage {number}: {text}")
    assert template_hash() != before


def test_token_limit_field_and_settings_checks() -> None:
    official = turn_request(CollectSettings(model="m", max_tokens=50), TASK, _case({}), [], [])
    assert official.body()["max_completion_tokens"] == 50 and "max_tokens" not in official.body()
    assert turn_request(SETTINGS, TASK, _case({}), [], []).body()["max_tokens"] == 2048
    no_limit = CollectSettings(model="m", temperature=None, max_tokens=None)
    assert set(turn_request(no_limit, TASK, _case({}), [], []).body()) == {"model", "messages"}
    for bad in ({"samples": True}, {"samples": 101}, {"temperature": float("inf")},
                {"max_tokens": 0}, {"images": "all"}, {"model": "x" * 129},
                {"base_url": "http://host:0/v1"}, {"model": "tab\tname"}):
        with pytest.raises(UserError):
            CollectSettings(**{"model": "m", **bad}).check()


def test_the_exam_page_names_families_and_levels_the_same_way() -> None:
    from ui import response_view

    assert (FAMILY_NAMES, LEVEL_NAMES) == (response_view.FAMILY_NAMES, response_view.LEVEL_NAMES)


@pytest.mark.parametrize("content, finish, refusal, text, problem", [
    ("  An answer.  ", "stop", None, "An answer.", None),
    ("", "stop", None, None, "empty answer"),
    (None, "stop", "I cannot help with that.", "I cannot help with that.", None),
    ("Half an ans", "length", None, None, "answer cut at the token limit"),
    ("x" * 200_001, "stop", None, None, "answer longer than 200,000 characters"),
])
def test_what_counts_as_an_answer(content, finish, refusal, text, problem) -> None:
    got_text, got_problem = answer_text(content, finish, refusal)
    assert got_text == text
    assert (got_problem or "").startswith(problem or "")


def test_a_long_retry_after_ends_the_call_without_waiting() -> None:
    with OpenAIServer() as srv:
        srv.inject("429:3600")
        req = turn_request(SETTINGS, TASK, _case({}), [], [])
        result = asyncio.run(call_text(make_client(srv.base_url, "k", 10), req, timeout=10))
    assert not result.ok and "Retry-After 3600 s exceeds 120 s" in result.reason
    assert result.attempts == 1


def test_bad_answers_are_asked_again_then_listed() -> None:
    with OpenAIServer() as srv:
        srv.inject("empty", "length")
        req = turn_request(SETTINGS, TASK, _case({}), [], [])
        ok = asyncio.run(call_text(make_client(srv.base_url, "k", 10), req, timeout=10,
                                   max_resends=2))
        srv.inject("empty", "empty")
        failed = asyncio.run(call_text(make_client(srv.base_url, "k", 10), req, timeout=10,
                                       max_resends=1))
    assert ok.ok and (ok.attempts, ok.reasks) == (3, 2) and ok.data["text"].startswith("Test-")
    assert not failed.ok and failed.reason == "empty answer (after 2 attempts)"
    assert [r.body for r in srv.chat_requests()] == [req.body()] * 5  # the same request again
