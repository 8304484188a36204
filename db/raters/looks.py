"""Held-out looks follow the data: a change to a held-out item after a passing look (an expert
score revised or added, a response's text changed) suspends that look and the config's
validation, in the same transaction as the change. Who decides what a look is, and a new
look, is `calibration.calibrate`'s; this module only records that the data moved under it.
A change and a look being taken take turns (`HELDOUT`), so a look never stands on held-out
data that changed before it was stored.
"""

from sqlmodel import Session, select

from db.audit import record
from db.locks import take_turns
from db.models import CalibrationItem, CalibrationProtocol, GraderConfig, HeldoutLook, utcnow

HELDOUT = "calibration.heldout"  # held-out changes and held-out looks take turns (db.locks)


def suspend_after_change(s: Session, *, response_id: str, what: str,
                         imported: bool = False) -> list[int]:
    """Suspend every standing passing look when `response_id` is a held-out item; `what` says
    in words what changed. `imported`: an imported expert score, which changes only the looks
    whose protocol counts imported scores (`count_imported_scores` of its gate). Returns the
    suspended looks' report ids (none: not held out, or no standing passing look)."""
    held = s.exec(select(CalibrationItem.part)
                  .where(CalibrationItem.response_id == response_id)).first()
    if held != "heldout":
        return []
    take_turns(s, HELDOUT)  # a look being taken is stored first, and is then seen here
    standing = s.exec(select(HeldoutLook).where(
        HeldoutLook.passed, HeldoutLook.revoked_at.is_(None),
        HeldoutLook.suspended_at.is_(None))).all()
    if imported:
        standing = [look for look in standing if _counts_imported(s, look.protocol_id)]
    for look in standing:
        look.suspended_at = utcnow()
        look.suspend_reason = f"{what} on held-out item {response_id} after the look"[:2000]
        config = s.get(GraderConfig, look.config_id)
        if config is not None and config.validated_report_id == look.report_id:
            config.validated_report_id = None
            s.add(config)
        s.add(look)
        record(s, "calibration.suspend", actor=None, config=look.config_id,
               report=look.report_id, reason=look.suspend_reason)
    return [look.report_id for look in standing]


def _counts_imported(s: Session, protocol_id: int) -> bool:
    """Whether the protocol's gate counts imported expert scores (protocols registered before
    the option: no)."""
    row = s.get(CalibrationProtocol, protocol_id)
    gate = (row.content or {}).get("gate", {}) if row else {}
    return gate.get("count_imported_scores") is True
