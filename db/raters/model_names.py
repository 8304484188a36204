"""Find and redact the names of models and their makers in response text (blinding by content).

Raters and the grader must not learn which model wrote a response, and model output often
says so ("As GPT-4o, a model developed by OpenAI ..."). A response is flagged when its text or
one of its turns contains one of the study's own model names (the `model` of its responses,
and the part after the last "/" of names such as "openai/gpt-4o") or one of `COMMON_NAMES`.

The rule (docs/security.md): case-insensitive; a name counts only as a whole word, i.e. not
preceded by a letter or digit and not followed by a letter ("GPT-4o", "Qwen2.5" and "Claude's"
match, "SGPT", "metabolic" and "Googled" do not). Terms that are also clinical words are
narrowed so that they do not flag ordinary neurology text: "Claude" is not flagged in
"Claude syndrome" / "Claude's syndrome" / "Claude Bernard" (a midbrain stroke syndrome and
Horner's syndrome), "Meta" not in "meta-analysis", and "GPT" only with a version ("GPT-4",
"GPT4o"), because a bare GPT is the liver enzyme (ALT). "PaLM" (palm), "Phi" (PHI) and
"Cohere" are left out for the same reason; "Med-PaLM" and "Phi-3" are in. Pure: no database.
"""

import re
from collections.abc import Iterable

REDACTED = "[name removed]"

# (spelling, condition): a name as written (any case), and a regex that must follow it there.
COMMON_NAMES: tuple[tuple[str, str], ...] = (
    ("openai", ""), ("open ai", ""), ("chatgpt", ""), ("chat gpt", ""),
    ("gpt", r"(?=-?\d)"),  # only with a version: a bare GPT is the liver enzyme (ALT)
    ("anthropic", ""), ("claude", r"(?!['’]?s?[\s-]+(?:syndrome|bernard))"),
    ("gemini", ""), ("gemma", ""), ("medgemma", ""), ("google", ""), ("deepmind", ""),
    ("deep mind", ""), ("bard", ""), ("med-palm", ""), ("medpalm", ""), ("llama", ""),
    ("meta", r"(?!-(?!llama)[a-z]|\s+analy)"), ("mistral", ""), ("mixtral", ""), ("pixtral", ""),
    ("qwen", ""), ("deepseek", ""), ("deep seek", ""), ("microsoft", ""), ("copilot", ""),
    ("phi", r"(?=-\d)"), ("grok", ""), ("xai", ""), ("llava", ""), ("internvl", ""),
    ("intern vl", ""), ("minicpm", ""), ("meditron", ""),
)

_BEFORE, _AFTER = r"(?<![a-z0-9])", r"(?![a-z])"
_VERSION = r"(?:-?\d(?:\w|\.\d)*)?"  # "-4o", "2.5", "3": redacted with the name
_MIN_OWN = 3  # shorter study model names ("o1") would flag ordinary words


class NameFinder:
    """The common names plus the study's own model names, compiled once."""

    def __init__(self, study_models: Iterable[str] = ()) -> None:
        own = {m for name in study_models for m in (name, name.rsplit("/", 1)[-1])
               if len(m) >= _MIN_OWN}
        patterns = [re.escape(m) for m in sorted(own, key=len, reverse=True)]  # longest first
        patterns += [re.escape(name) + after + _VERSION for name, after in COMMON_NAMES]
        alternation = "|".join(f"(?:{p})" for p in patterns)
        self._regex = re.compile(f"{_BEFORE}(?:{alternation}){_AFTER}", re.IGNORECASE)
        # Every match contains one of these: most texts are cleared by a substring test.
        self._spellings = tuple({m.lower() for m in own} | {n for n, _ in COMMON_NAMES})

    def _may_name(self, text: str) -> bool:
        low = text.lower()
        return any(spelling in low for spelling in self._spellings)

    def find(self, text: str) -> list[str]:
        """The names in `text`, as written there."""
        return self._regex.findall(text) if self._may_name(text) else []

    def redact(self, text: str) -> str:
        return self._regex.sub(REDACTED, text) if self._may_name(text) else text
