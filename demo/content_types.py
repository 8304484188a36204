"""The shapes of the demo's content: a case, a task, an answer variant."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class DemoCase:
    case_id: str
    kind: str  # key of demo.images.PAINTERS
    title: str
    sequences: tuple[str, ...]
    ehr: str
    scores: dict[str, float]
    ground_truth: dict[str, object]
    coarse: tuple[str, ...] = ()  # sequences stored at twice the voxel size (another grid)


@dataclass(frozen=True)
class Variant:
    """One way to answer a task: findings, interpretation and conclusion (+ stage answers)."""

    correct: bool
    tags: tuple[str, ...]
    findings: str
    reasoning: str
    conclusion: str
    turns: tuple[str, ...] = ()


@dataclass(frozen=True)
class DemoTask:
    task_id: str
    case_id: str
    family: str
    level: int
    prompt: str
    stages: tuple[str, ...]
    variants: dict[str, Variant] = field(default_factory=dict)


def variant(correct: bool, tags: str, findings: str, reasoning: str, conclusion: str,
            *turns: str) -> Variant:
    """A variant from its error tags as one space-separated string and its stage answers."""
    return Variant(correct, tuple(t for t in tags.split() if t), findings, reasoning, conclusion,
                   tuple(turns))
