"""Responses that name a model or its maker: redacted when created, held until reviewed.

When responses are created (bundle import, `nmb collect`, a finished exam's answers), each
one whose text or turns name a model (`db.raters.model_names`) gets a `ResponseFlag` that
keeps the original, and its `text` and `turns` become the redacted ones, so raters and the
grader only ever read redacted text. It is not assigned to raters until an admin has reviewed
it on /admin (`review`): kept the suggested redaction, edited it, or restored the original
when the match was a false alarm.
"""

from collections.abc import Iterable
from dataclasses import dataclass

from sqlmodel import Session, delete, select

from db.audit import record
from db.locks import for_update
from db.models import GraderScore, Response, ResponseFlag, utcnow
from db.queries import fetch_in
from db.raters.looks import suspend_after_change
from db.raters.model_names import NameFinder
from db.text_limits import ANSWER, check_length
from errors import UserError


def _finder(s: Session, models: Iterable[str | None]) -> NameFinder:
    """The study's own model names (stored and new) plus the common ones."""
    stored = s.exec(select(Response.model).distinct()).all()
    return NameFinder({m for m in (*stored, *models) if m})


def flag_new(s: Session, responses: list[dict]) -> list[ResponseFlag]:
    """Redact, in place, the new responses (rows with `response_id`, `model` (None: a human's),
    `text`, `turns`) that name a model; their flags, for the caller to add with the responses."""
    finder = _finder(s, (r.get("model") for r in responses))
    flags = []
    for r in responses:
        turns = r.get("turns")
        names = [n for text in (r["text"], *(turns or [])) for n in finder.find(text)]
        if names:
            flags.append(ResponseFlag(response_id=r["response_id"], names=names,
                                      original_text=r["text"], original_turns=turns))
            r["text"] = finder.redact(r["text"])
            if turns:
                r["turns"] = [finder.redact(t) for t in turns]
    return flags


def as_created(s: Session, response_ids: Iterable[str]) -> dict[str, dict]:
    """`text` and `turns` of these responses as they were created (before any redaction)."""
    return {f.response_id: {"text": f.original_text, "turns": f.original_turns}
            for f in fetch_in(s, ResponseFlag.response_id, response_ids)}


def held(s: Session) -> set[str]:
    """Responses not to assign: flagged and not yet reviewed."""
    return set(s.exec(select(ResponseFlag.response_id).where(ResponseFlag.reviewed_at.is_(None))))


@dataclass
class Flagged:
    """A flagged response as the admin reviews it (texts: the answer, then each turn)."""

    response_id: str
    model: str | None
    names: list[str]
    original: list[str]
    shown: list[str]  # what raters and the grader read


def pending(s: Session) -> list[Flagged]:
    """Flagged responses not reviewed yet, oldest first."""
    rows = s.exec(select(ResponseFlag, Response)
                  .join(Response, Response.response_id == ResponseFlag.response_id)
                  .where(ResponseFlag.reviewed_at.is_(None))
                  .order_by(ResponseFlag.created_at, ResponseFlag.response_id))
    return [Flagged(f.response_id, r.model, list(f.names),
                    [f.original_text, *(f.original_turns or [])], [r.text, *(r.turns or [])])
            for f, r in rows]


def review(s: Session, *, response_id: str, texts: list[str], actor: str | None = None) -> None:
    """Make `texts` (the answer, then each turn) what raters and the grader read, and release
    the response for assignment. A changed text drops the response's grader scores (they graded
    other words). Audited; the original stays in the flag. The caller commits. Two admins at
    once: the flag's row is locked first, so the second is refused once the first is in."""
    flag = s.exec(for_update(select(ResponseFlag)
                             .where(ResponseFlag.response_id == response_id))).first()
    if flag is None or flag.reviewed_at is not None:  # locked: a second admin's review waits
        raise UserError(f"response {response_id!r} is not waiting for review")
    response = s.get(Response, response_id)
    before = [response.text, *(response.turns or [])]
    if len(texts) != len(before):
        raise UserError(f"response {response_id!r} has {len(before)} texts, got {len(texts)}")
    for i, text in enumerate(texts):
        check_length("the answer" if i == 0 else f"the answer after stage {i + 1}", text, ANSWER)
    changed = texts != before
    dropped = 0
    if changed:
        response.text = texts[0]
        response.turns = texts[1:] if response.turns is not None else None
        s.add(response)
        dropped = len(s.exec(select(GraderScore.id).where(GraderScore.response_id == response_id)
                             ).all())
        s.exec(delete(GraderScore).where(GraderScore.response_id == response_id))
        suspend_after_change(s, response_id=response_id, what="the response's text changed")
    flag.reviewed_by, flag.reviewed_at = actor, utcnow()
    s.add(flag)
    record(s, "response.review", actor=actor, response=response_id, names=flag.names,
           changed=changed, kept_original=texts == [flag.original_text,
                                                    *(flag.original_turns or [])],
           grader_scores_dropped=dropped)
