"""The grader's answer once checked: the one `Grade` type that the grader's parser returns
(`rubric.render.parse_grader_output`) and that grading (`grading.grader`), packages and the
canary (`package.freeze`, `package.verify`) read, with the rubric's field names (the model's `justification`
stays `justification` from the request's schema to the stored grade and the package's rows)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


class Grade(BaseModel):
    """A checked grade: criterion levels (None: not applicable), the correct-diagnosis
    judgment, error tags, the justification and the overall score (0-1, the rubric's
    aggregation); `diagnosis_rank` and `stages` where the request asked for them (None
    otherwise)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    criteria: dict[str, int | None]
    correct_diagnosis: bool | None
    error_tags: list[str]
    justification: str
    overall: float | None
    diagnosis_rank: int | None = None
    stages: list[dict[str, Any]] | None = None

    def fields(self, extra: tuple[str, ...] = ()) -> dict[str, Any]:
        """The score's fields and the `extra` ones asked for (`rubric.render.Asked.extra`), as
        a package's row and the preflight show them."""
        return self.model_dump(include={"criteria", "correct_diagnosis", "error_tags",
                                        "overall", "justification", *extra})
