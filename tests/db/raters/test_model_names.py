"""The model-name rule (db.raters.model_names): names and makers found as whole words, clinical words
left alone, and the demo study's realistic texts unflagged."""

import pytest

from db.raters.model_names import REDACTED, NameFinder
from demo.bundle import _demo_written
from demo.content import CASES, TASKS

STUDY = ["meridian-med-2", "openai/gpt-4o-2024-08-06"]


@pytest.mark.parametrize(("text", "names"), [
    ("As GPT-4o, a model developed by OpenAI, I think", ["GPT-4o", "OpenAI"]),
    ("I am Claude, made by Anthropic.", ["Claude", "Anthropic"]),
    ("ChatGPT would say", ["ChatGPT"]),
    ("Qwen2.5-VL and Llama 3 and gemini-1.5-pro", ["Qwen2.5", "Llama", "gemini-1.5"]),
    ("DeepSeek, Mistral-7B, Meta AI, Google's Med-PaLM, Gemma", [
        "DeepSeek", "Mistral-7B", "Meta", "Google", "Med-PaLM", "Gemma"]),
    ("meridian-med-2's answer; gpt-4o-2024-08-06 agrees", ["meridian-med-2", "gpt-4o-2024-08-06"]),
    ("MERIDIAN-MED-2 thinks", ["MERIDIAN-MED-2"]),
])
def test_names_are_found_in_any_case_with_their_version(text: str, names: list[str]) -> None:
    finder = NameFinder(STUDY)
    assert finder.find(text) == names
    redacted = finder.redact(text)
    assert redacted.count(REDACTED) == len(names) and finder.find(redacted) == []


@pytest.mark.parametrize("text", [
    "Claude syndrome: ipsilateral third nerve palsy with contralateral ataxia.",
    "Claude's syndrome; Claude Bernard-Horner syndrome",
    "A meta-analysis of 12 trials; a meta analysis; meta-iodobenzylguanidine",
    "SGPT 35 U/L, GPT 40 U/L (ALT)",
    "metabolic encephalopathy, metastasis, the palm, PHI, mitral valve, Googled",
    "the cerebral cortex; meridian line; open airway",
])
def test_clinical_words_are_not_names(text: str) -> None:
    assert NameFinder(STUDY).find(text) == []


def test_short_study_model_names_are_not_searched_for() -> None:
    assert NameFinder(["o1", "a"]).find("a lesion at o1 level") == []


def test_the_demo_study_names_no_model() -> None:
    """Its 429 realistic texts (responses, records, tasks, references) flag nothing."""
    written = _demo_written(0)
    finder = NameFinder({w.response["model"] for w in written})
    texts = [t for w in written for t in (w.response["text"], *w.response.get("turns", []))]
    texts += [t for c in CASES for t in (c.title, c.ehr, str(c.ground_truth))]
    texts += [t for task in TASKS for t in (task.prompt, *task.stages)]
    assert len(texts) > 400
    assert [t for t in texts if finder.find(t)] == []
