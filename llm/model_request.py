"""What a model under test is sent, built without a database: the exam a human takes, as chat.

The first user message holds what the exam page shows (the case title, health record, test
scores in their stored order and the task), with the case's key slices as PNG `image_url`
parts (`--images none`: text only). A level-3 task is a real conversation: after each answer,
the next stage's text arrives as the next user message, as the exam reveals it. Every string
that shapes a request is in `TEMPLATE`, versioned and hashed (`template_hash`), and recorded
with each collected response. The cache key of a request is the hash of (endpoint, sample,
exact body), so k samples of one task are k requests even when their bodies are equal.
"""

from __future__ import annotations

import base64
import hashlib
import math
from dataclasses import asdict, dataclass
from functools import cached_property
from typing import Any

from db.models import Case, Task
from db.text_limits import model_name_problem
from errors import UserError
from imaging.key_slices import RENDER_VERSION
from llm.conditions import Condition, system_message
from llm.grader_request import check_base_url
from rubric.schema import canonical_json

TEMPLATE_VERSION = "nmb-collect-2"  # bump whenever TEMPLATE changes
IMAGES = ("key", "none")
FAMILY_NAMES = {"differential": "Differential diagnosis", "lesion": "Lesion identification",
                "rationale": "Rationale generation"}  # as the exam page names them
LEVEL_NAMES = {1: "direct", 2: "complex", 3: "multi-turn"}
MAX_SAMPLES = 100
MAX_TOKENS = 1_000_000
OFFICIAL_TOKEN_FIELD = "max_completion_tokens"  # OpenAI: max_tokens is deprecated there

TEMPLATE: dict[str, str] = {
    "version": TEMPLATE_VERSION,
    "system": (
        "You are taking a neurology examination. Each task presents one patient: the health "
        "record, neuropsychological test scores and, when given, key slices of the brain MRI. "
        "Answer the task as a neurologist would, in plain text: your findings, your reasoning "
        "and your conclusion. In a multi-turn task new information is revealed after each "
        "answer; answer again in its light. Do not state your name or which model you are."),
    "case": "# Case: {title}",
    "record": "# Health record\n\n{ehr}",
    "scores": "# Neuropsychological scores\n\n{lines}",
    "score_line": "- {name}: {value}",
    "images": ("# MRI key slices\n\n{count} slices follow, each named by its series, plane and "
               "slice number. Letters at the edges mark the patient's directions; axial and "
               "coronal slices are in radiological convention (the patient's right on the "
               "image's left)."),
    "slice": "{series}, {plane}, slice {number} of {count}",
    # a case with pictures (2-D key images or figures, sent as they are: docs/collect.md)
    "images_with_pictures": ("# MRI images\n\n{count} images follow. Pictures are provided "
                             "with the case as they are, each named by its number, series "
                             "and plane where given. Key slices are named by their series, "
                             "plane and slice number; letters at their edges mark the "
                             "patient's directions, and axial and coronal slices are in "
                             "radiological convention (the patient's right on the image's "
                             "left)."),
    "picture": "image {number} of {count}: {name}",
    "picture_plane": "{series}, {plane}",
    "picture_caption": "{name}; {caption}",
    "image_caption": "{caption}:",
    "render": RENDER_VERSION,
    "task": "# Task: {family}, level {level} ({level_name})\n\n{prompt}",
    "multi_turn": "More information is revealed after each answer.",
    "stage": "Stage {number} revealed.\n\n{text}",
}


def template_hash() -> str:
    """sha256 of the canonical JSON of `TEMPLATE`: changes with any string sent."""
    return hashlib.sha256(canonical_json(TEMPLATE).encode()).hexdigest()


# ---------------------------------------------------------------- images


@dataclass(frozen=True)
class KeyImage:
    """One rendered key slice and the caption naming it ("FLAIR, axial, slice 46 of 91"), or
    a picture series itself (`picture`), downscaled ("image 2 of 3: FLAIR, axial")."""

    caption: str
    png: bytes
    picture: bool = False

    @cached_property
    def sha256(self) -> str:
        return hashlib.sha256(self.png).hexdigest()

    def data_url(self) -> str:
        return "data:image/png;base64," + base64.b64encode(self.png).decode()


def image_parts(images: list[KeyImage]) -> list[dict]:
    """Chat content parts: each image's caption as text, then the image as a PNG data URL."""
    parts: list[dict] = []
    for image in images:
        parts += [{"type": "text", "text": TEMPLATE["image_caption"].format(caption=image.caption)},
                  {"type": "image_url", "image_url": {"url": image.data_url()}}]
    return parts


def picture_caption(number: int, count: int, sequence: str, plane: str | None,
                    caption: str | None) -> str:
    """A picture's caption from its own fields: "image 2 of 3: FLAIR, axial; <caption>"."""
    name = (TEMPLATE["picture_plane"].format(series=sequence, plane=plane)
            if plane and plane != "none" else sequence)
    if caption:
        name = TEMPLATE["picture_caption"].format(name=name, caption=caption)
    return TEMPLATE["picture"].format(number=number, count=count, name=name)


# ---------------------------------------------------------------- settings


def _count(name: str, value: Any, most: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= most:
        raise UserError(f"--{name} must be an integer from 1 to {most}, got {value!r}")


@dataclass(frozen=True)
class CollectSettings:
    """What shapes a model's requests (besides the task): recorded with each collection run."""

    model: str
    base_url: str | None = None
    samples: int = 1
    images: str = "key"
    temperature: float | None = 1.0
    max_tokens: int | None = 2048
    condition: Condition | None = None  # what the condition adds (llm.conditions)

    @property
    def label(self) -> str:
        """The name the responses carry: the model, or MODEL@CONDITION."""
        return self.condition.label(self.model) if self.condition else self.model

    @property
    def votes(self) -> int:
        """Answers asked per turn (self-consistency's k, else 1)."""
        return self.condition.votes if self.condition else 1

    def check(self) -> CollectSettings:
        """Self, or a UserError naming the first bad setting."""
        if why := model_name_problem(self.model):
            raise UserError(f"--model {self.model!r} {why} (a model name is 1-128 printable "
                            "characters, no surrounding blanks)")
        check_base_url(self.base_url)
        _count("samples", self.samples, MAX_SAMPLES)
        if self.images not in IMAGES:
            raise UserError(f"--images {self.images!r} is not one of {', '.join(IMAGES)}")
        t = self.temperature
        if t is not None and (isinstance(t, bool) or not isinstance(t, int | float)
                              or not math.isfinite(t) or not 0 <= t <= 2):
            raise UserError(f"--temperature must be a number from 0 to 2, got {t!r}")
        if self.max_tokens is not None:
            _count("max-tokens", self.max_tokens, MAX_TOKENS)
        if self.condition is not None:
            self.condition.check()
            if why := model_name_problem(self.label):
                raise UserError(f"--model with --condition: {self.label!r} {why}")
        return self

    @property
    def token_field(self) -> str:
        """`max_completion_tokens` for the official API (every current OpenAI model takes it;
        reasoning models refuse `max_tokens`), `max_tokens` for other endpoints (what vLLM,
        llama.cpp and Ollama read)."""
        return OFFICIAL_TOKEN_FIELD if self.base_url is None else "max_tokens"

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        if self.condition is None:
            out.pop("condition")  # as runs before conditions recorded it
        else:
            out["condition"] = self.condition.as_dict()
        return out


# ---------------------------------------------------------------- messages and requests


@dataclass(frozen=True)
class ChatRequest:
    """One chat completion request of a model under test (free text, no response format)."""

    model: str
    messages: list[dict]
    temperature: float | None = None
    max_tokens: int | None = None
    token_field: str = "max_tokens"

    def body(self) -> dict:
        """The exact JSON body of POST /v1/chat/completions."""
        body: dict[str, Any] = {"model": self.model, "messages": list(self.messages)}
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.max_tokens is not None:
            body[self.token_field] = self.max_tokens
        return body

    @property
    def image_count(self) -> int:
        return sum(1 for m in self.messages if isinstance(m["content"], list)
                   for part in m["content"] if part.get("type") == "image_url")


def task_text(task: Task) -> str:
    """The task as the exam page shows it: family, level and prompt (and the multi-turn note)."""
    text = TEMPLATE["task"].format(family=FAMILY_NAMES[task.family], level=task.level,
                                   level_name=LEVEL_NAMES[task.level], prompt=task.prompt)
    return f"{text}\n\n{TEMPLATE['multi_turn']}" if task.stages else text


def first_message(task: Task, case: Case, images: list[KeyImage]) -> dict:
    """The first user message: the case as the exam shows it, the key slices, then the task.
    Text only (a string) without images."""
    parts = [TEMPLATE["case"].format(title=case.title), TEMPLATE["record"].format(ehr=case.ehr)]
    if case.scores:
        lines = "\n".join(TEMPLATE["score_line"].format(name=k, value=v)
                          for k, v in case.scores.items())  # stored order, as the exam table
        parts.append(TEMPLATE["scores"].format(lines=lines))
    if not images:
        return {"role": "user", "content": "\n\n".join([*parts, task_text(task)])}
    header = "images_with_pictures" if any(i.picture for i in images) else "images"
    parts.append(TEMPLATE[header].format(count=len(images)))
    return {"role": "user", "content": [{"type": "text", "text": "\n\n".join(parts)},
                                        *image_parts(images),
                                        {"type": "text", "text": task_text(task)}]}


def stage_message(task: Task, stage: int) -> dict:
    """The user message revealing stage `stage` (0 = the first of `task.stages`), numbered as
    the exam numbers it (the first answer is stage 1)."""
    return {"role": "user",
            "content": TEMPLATE["stage"].format(number=stage + 2, text=task.stages[stage])}


def conversation(task: Task, case: Case, images: list[KeyImage], answers: list[str],
                 condition: Condition | None = None) -> list[dict]:
    """The messages for the next turn, after `answers` (one per turn so far); a `condition`
    appends its text to the system message (llm.conditions), nothing else."""
    messages = [{"role": "system", "content": system_message(TEMPLATE["system"], condition)},
                first_message(task, case, images)]
    for stage, answer in enumerate(answers):
        messages += [{"role": "assistant", "content": answer}, stage_message(task, stage)]
    return messages


def n_turns(task: Task) -> int:
    """Answers a task takes: one, plus one per stage."""
    return 1 + len(task.stages or [])


def turn_request(settings: CollectSettings, task: Task, case: Case, images: list[KeyImage],
                 answers: list[str]) -> ChatRequest:
    """The request for turn `len(answers)` of the task."""
    if len(answers) >= n_turns(task):
        raise ValueError(f"task {task.task_id} has {n_turns(task)} turns, all answered")
    return ChatRequest(settings.model,
                       conversation(task, case, images, answers, settings.condition),
                       settings.temperature, settings.max_tokens, settings.token_field)


def request_key(req: ChatRequest, *, base_url: str | None, sample: int | list[int]) -> str:
    """The cache key: sha256 of the canonical JSON of the endpoint, the sample and the body
    (self-consistency: [sample, vote], so each vote is a request of its own)."""
    payload = {"base_url": base_url, "request": req.body(), "sample": sample}
    return hashlib.sha256(canonical_json(payload).encode()).hexdigest()
