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

# (label, pattern) in lower case; the whole-word rule is added around each pattern.
COMMON_NAMES: tuple[tuple[str, str], ...] = (
    ("OpenAI", r"open\s?ai"),
    ("ChatGPT", r"chat\s?gpt"),
    ("GPT-n", r"gpt-?\d(?:\w|\.\d)*"),
    ("Anthropic", r"anthropic"),
    ("Claude", r"claude(?!['’]?s?[\s-]+(?:syndrome|bernard))"),
    ("Gemini", r"gemini"),
    ("Gemma", r"(?:med)?gemma"),
    ("Google", r"google"),
    ("DeepMind", r"deep\s?mind"),
    ("Bard", r"bard"),
    ("Med-PaLM", r"med-?palm"),
    ("Llama", r"llama"),
    ("Meta", r"meta(?!-(?!llama)[a-z]|\s+analy)"),
    ("Mistral", r"mistral|mixtral|pixtral"),
    ("Qwen", r"qwen"),
    ("DeepSeek", r"deep\s?seek"),
    ("Microsoft", r"microsoft|copilot"),
    ("Phi-n", r"phi-\d"),
    ("Grok", r"grok|xai"),
    ("LLaVA", r"llava"),
    ("InternVL", r"intern\s?vl"),
    ("MiniCPM", r"minicpm"),
    ("Meditron", r"meditron"),
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
        patterns += [f"(?:{p}){_VERSION}" for _, p in COMMON_NAMES]
        alternation = "|".join(f"(?:{p})" for p in patterns)
        self._regex = re.compile(f"{_BEFORE}(?:{alternation}){_AFTER}", re.IGNORECASE)

    def find(self, text: str) -> list[str]:
        """The names in `text`, as written there."""
        return self._regex.findall(text)

    def redact(self, text: str) -> str:
        return self._regex.sub(REDACTED, text)
