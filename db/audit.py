"""The append-only audit log: logins, failed logins and every write."""

from typing import Any

from sqlmodel import Session

from db.models import AuditLog


def record(s: Session, action: str, *, actor: str | None, **detail: Any) -> None:
    """Add an audit entry to the session's transaction (committed with the write it records)."""
    s.add(AuditLog(actor=actor, action=action, detail=detail))
