"""Model cards: what is known of each model under test (maker, version, release date, training
cutoff, web access, size, kind), set by `nmb models set`, a CSV (`--from-csv`) or /models, and
read by the results, the site and the reporting checklists.

A card is keyed by the model's name as its responses carry it; a conditioned model
(MODEL@CONDITION, collection.conditions) without a card of its own shares its model's
(`card_for`). Every change is
validated first, written in one transaction and audited (action "model-card").
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import date
from pathlib import Path
from typing import Any

from sqlmodel import Session, select

from db.audit import record
from db.models import ModelCard, ModelKind, utcnow
from db.sources.csv_table import Rows, parse_date, parse_yes_no, shown
from db.text_limits import MODEL_NAME, model_name_problem
from errors import UserError, counted

KINDS: tuple[str, ...] = ModelKind.__args__  # type: ignore[attr-defined]
FIELDS = ("maker", "version", "released", "training_cutoff", "web_access", "params", "kind")
TEXT_LIMITS = {"maker": 128, "version": 128, "params": 64}
CONDITION_MARK = "@"


def base_model(name: str) -> str:
    """The model of a response's `model`: MODEL of MODEL@CONDITION (a condition's name holds no
    "@", so the last one splits), else the name itself."""
    head, mark, tail = name.rpartition(CONDITION_MARK)
    return head if mark and head and tail else name


@dataclass(frozen=True)
class CardChange:
    """The fields a change sets (None: left as it is; "" for a text field or `CLEAR`: emptied)."""

    maker: str | None = None
    version: str | None = None
    released: date | str | None = None
    training_cutoff: date | str | None = None
    web_access: bool | str | None = None
    params: str | None = None
    kind: str | None = None

    def given(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)
                if getattr(self, f.name) is not None}


CLEAR = ""


def parse_field(name: str, text: str) -> Any:
    """The value of card field `name` from its text ("" empties it); ValueError saying why not."""
    text = text.strip()
    if text == "":
        return CLEAR
    if name in ("released", "training_cutoff"):
        return parse_date(text, month_end=name == "training_cutoff")
    if name == "web_access":
        return parse_yes_no(text)
    if name == "kind":
        if text not in KINDS:
            raise ValueError(f"{shown(text)} is not one of {', '.join(KINDS)}")
        return text
    if len(text) > TEXT_LIMITS[name]:
        raise ValueError(f"is longer than {TEXT_LIMITS[name]} characters")
    if not text.isprintable():
        raise ValueError("holds a character that is not printable")
    return text


def check_name(name: str, where: str = "model") -> str:
    if why := model_name_problem(name, MODEL_NAME):
        raise UserError(f"{where} {shown(name)} {why}")
    return name


def _apply(s: Session, name: str, values: dict[str, Any], actor: str | None) -> ModelCard:
    card = s.get(ModelCard, name) or ModelCard(name=name)
    for key, value in values.items():
        setattr(card, key, None if value == CLEAR else value)
    card.updated_by, card.updated_at = actor, utcnow()
    s.add(card)
    record(s, "model-card", actor=actor, model=name,
           fields={k: (None if v == CLEAR else str(v)) for k, v in values.items()})
    return card


def set_card(s: Session, *, name: str, change: dict[str, str], actor: str | None) -> ModelCard:
    """Set the fields of `change` ({field: text}, "" empties) on the model's card (made if
    new), committed and audited; a UserError naming the field leaves the card as it was."""
    check_name(name)
    values = {}
    for key, text in change.items():
        if key not in FIELDS:
            raise UserError(f"model card: {key!r} is not one of {', '.join(FIELDS)}")
        try:
            values[key] = parse_field(key, text)
        except ValueError as e:
            raise UserError(f"model card {name!r}: --{key.replace('_', '-')} {e}") from None
    if not values:
        raise UserError(f"model card {name!r}: nothing to set (give --maker, --version, "
                        "--released, --training-cutoff, --web-access, --params or --kind)")
    card = _apply(s, name, values, actor)
    s.commit()
    return card


@dataclass
class CardsImported:
    file: str
    cards: int
    created: int
    dry_run: bool = False

    def __str__(self) -> str:
        verb = "would set" if self.dry_run else "set"
        return (f"{self.file}: {verb} {counted(self.cards, 'model card')} "
                f"({self.created} new)")


def import_cards(s: Session, path: Path, *, actor: str | None = None,
                 dry_run: bool = False) -> CardsImported:
    """Model cards from a CSV: a column `name` and any of `FIELDS` (an empty cell leaves the
    field as it is; write `-` to empty it). Every row is checked before anything is written;
    the first problem is refused in one line naming the file, the line and the field."""
    table = Rows(path, ("name",), FIELDS)
    changes: dict[str, dict[str, Any]] = {}
    for line, row in table.rows:
        name = row["name"]
        if why := model_name_problem(name, MODEL_NAME):
            raise table.refuse(line, "name", f"{shown(name)} {why}")
        if name in changes:
            raise table.refuse(line, "name", f"{shown(name)} is on an earlier line too")
        values = {}
        for key in FIELDS:
            text = row.get(key, "")
            if text == "":
                continue
            try:
                values[key] = CLEAR if text == "-" else parse_field(key, text)
            except ValueError as e:
                raise table.refuse(line, key, str(e)) from None
        changes[name] = values
    existing = set(s.exec(select(ModelCard.name).where(ModelCard.name.in_(list(changes)))))
    summary = CardsImported(table.name, len(changes), len(set(changes) - existing), dry_run)
    if dry_run:
        return summary
    for name, values in changes.items():
        _apply(s, name, values, actor)
    s.commit()
    return summary


def cards(s: Session) -> dict[str, ModelCard]:
    """Every model card by name."""
    return {c.name: c for c in s.exec(select(ModelCard).order_by(ModelCard.name))}


def card_for(all_cards: dict[str, ModelCard], model: str) -> ModelCard | None:
    """The card of a response's model (MODEL@CONDITION: MODEL's)."""
    return all_cards.get(model) or all_cards.get(base_model(model))


def card_row(card: ModelCard | None) -> dict[str, str | None]:
    """The card's fields as text (None: not recorded), as tables and CSVs show them."""
    if card is None:
        return dict.fromkeys(FIELDS)
    out: dict[str, str | None] = {}
    for key in FIELDS:
        value = getattr(card, key)
        out[key] = (None if value is None else ("yes" if value else "no") if key == "web_access"
                    else value.isoformat() if isinstance(value, date) else str(value))
    return out
