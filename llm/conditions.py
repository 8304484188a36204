"""Conditions: what a collection adds to the exam a model takes (`nmb collect --condition NAME
--strategy ... [--system-prompt-file F] [--samples k]`), so that chain-of-thought,
self-consistency or a system prompt with a reasoning scaffold can be set against zero-shot.

The exam stays the human exam: the same case, images, task and stages. A condition only
appends text to the system message: the study's system prompt, then the condition's system
prompt file (verbatim), then the strategy's instruction (`STRATEGIES`); `added_text` is all it
adds, stored with each run and reported verbatim. Zero-shot without a system prompt file adds
nothing: its requests are the plain exam's.

Self-consistency (Wang et al. 2023, "Self-Consistency Improves Chain of Thought Reasoning in
Language Models", ICLR): each turn is asked `votes` times with the chain-of-thought
instruction; each answer's final answer is its last line starting "Final answer:" (else its
last non-empty line), compared after case folding, whitespace and punctuation
normalisation; the turn's answer is the full text of the first answer whose final answer is
the most frequent (ties: the one reached first). That text goes on to the next turn of a
multi-turn task, and is the response graded; every vote's final answer is stored.

A conditioned model's responses carry the name MODEL@CONDITION, so every table shows them as
a model of their own and `nmb results --compare A@cot A@zero-shot` pairs them on the tasks
both answered.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from errors import UserError

STRATEGY_NAMES = ("zero-shot", "cot", "self-consistency")
STRATEGIES: dict[str, str] = {
    "zero-shot": "",
    "cot": ("Think step by step: write out your reasoning before your conclusion. End your "
            "answer with one line of the form \"Final answer: <your diagnosis>\"."),
    "self-consistency": ("Think step by step: write out your reasoning before your conclusion. "
                         "End your answer with one line of the form \"Final answer: <your "
                         "diagnosis>\"."),
}
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,39}")
MAX_SYSTEM_PROMPT = 20_000  # characters of a condition's system prompt file
MAX_VOTES = 20
SELF_CONSISTENCY_VOTES = 5  # k when --samples is not given


@dataclass(frozen=True)
class Condition:
    name: str
    strategy: str = "zero-shot"
    system_prompt: str | None = None  # the file's text, verbatim
    votes: int = 1  # self-consistency: answers per turn

    def check(self) -> Condition:
        if not NAME.fullmatch(self.name):
            raise UserError(f"--condition {self.name!r}: a condition's name is 1-40 letters, "
                            "digits, '.', '_' or '-', starting with a letter or digit")
        if self.strategy not in STRATEGY_NAMES:
            raise UserError(f"--strategy {self.strategy!r} is not one of "
                            f"{', '.join(STRATEGY_NAMES)}")
        if self.system_prompt is not None and (
                not self.system_prompt.strip() or len(self.system_prompt) > MAX_SYSTEM_PROMPT):
            raise UserError(f"--system-prompt-file: the prompt must hold 1 to "
                            f"{MAX_SYSTEM_PROMPT:,} characters")
        if self.strategy == "self-consistency":
            if not 2 <= self.votes <= MAX_VOTES:
                raise UserError(f"--strategy self-consistency needs --samples from 2 to "
                                f"{MAX_VOTES} (the answers per turn a majority is taken of), "
                                f"got {self.votes}")
        elif self.votes != 1:
            raise UserError("one answer per turn except under --strategy self-consistency")
        return self

    def label(self, model: str) -> str:
        """The name its responses carry: MODEL@CONDITION."""
        return f"{model}@{self.name}"

    @property
    def added_text(self) -> str:
        """Everything the condition adds to the exam's system message, verbatim."""
        return "\n\n".join(t for t in (self.system_prompt, STRATEGIES[self.strategy]) if t)

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "added_text": self.added_text}


def read_system_prompt(path: Path) -> str:
    """The text of a --system-prompt-file: UTF-8, at most `MAX_SYSTEM_PROMPT` characters."""
    from errors import not_a_file, read_at_most

    if not path.is_file():
        raise UserError(f"--system-prompt-file {path}: {not_a_file(path)}")
    data = read_at_most(path, 4 * MAX_SYSTEM_PROMPT)
    if data is None:
        raise UserError(f"--system-prompt-file {path}: longer than {MAX_SYSTEM_PROMPT:,} "
                        "characters")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise UserError(f"--system-prompt-file {path}: not UTF-8 text (offset {e.start})") from None


def system_message(base: str, condition: Condition | None) -> str:
    """The exam's system message with what `condition` adds after it."""
    added = condition.added_text if condition else ""
    return f"{base}\n\n{added}" if added else base


FINAL = re.compile(r"^\W*final answer\W*[:\-]\s*(.+)$", re.IGNORECASE | re.MULTILINE)


def final_answer(text: str) -> str:
    """An answer's final answer, normalised (see the module's docstring)."""
    found = FINAL.findall(text)
    if found:
        raw = found[-1]
    else:
        lines = [ln for ln in text.splitlines() if ln.strip()]
        raw = lines[-1] if lines else ""
    raw = unicodedata.normalize("NFKC", raw).casefold()
    raw = re.sub(r"[^\w\s]", " ", raw)
    return " ".join(raw.split())


def majority(texts: list[str]) -> tuple[int, list[str]]:
    """(index of the chosen answer, every answer's final answer): the first answer whose final
    answer is the most frequent."""
    finals = [final_answer(t) for t in texts]
    counts = Counter(finals)
    top = max(counts.values())
    chosen = next(i for i, f in enumerate(finals) if counts[f] == top)
    return chosen, finals
