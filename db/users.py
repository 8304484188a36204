"""Accounts, roles and passwords.

Passwords are hashed with scrypt (RFC 7914; n=2**14, r=8, p=1, 16-byte salt), a memory-hard
KDF from the standard library; they are never stored or logged in clear. A password login
survives page reloads through a login token: 256 random bits in the browser's cookie, only
their sha256 in the database, valid for `LOGIN_HOURS` unless the user logs out or is disabled.
"""

import base64
import hashlib
import hmac
import re
import secrets
from datetime import timedelta

from sqlmodel import Session, delete, select

from db.audit import record
from db.models import ROLES, LoginToken, User, utcnow
from errors import UserError

LOGIN_HOURS = 12

_N, _R, _P = 2**14, 8, 1


def hash_password(password: str) -> str:
    salt = secrets.token_bytes(16)
    key = hashlib.scrypt(password.encode(), salt=salt, n=_N, r=_R, p=_P, dklen=32)
    b64 = base64.b64encode
    return f"scrypt${_N}${_R}${_P}${b64(salt).decode()}${b64(key).decode()}"


def verify_password(password: str, stored: str) -> bool:
    try:
        kind, n, r, p, salt, key = stored.split("$")
    except ValueError:
        return False
    if kind != "scrypt":
        return False
    got = hashlib.scrypt(
        password.encode(), salt=base64.b64decode(salt), n=int(n), r=int(r), p=int(p), dklen=32
    )
    return hmac.compare_digest(got, base64.b64decode(key))


def add_user(
    s: Session, *, name: str, role: str, password: str, email: str | None = None,
    demo: bool = False, actor: str | None = None,
) -> User:
    if role not in ROLES:
        raise UserError(f"role {role!r} is not one of {', '.join(ROLES)}")
    if not re.fullmatch(r"[A-Za-z0-9._-]{1,64}", name):
        raise UserError(f"user name {name!r} must be 1-64 letters, digits, '-', '_' or '.'")
    if not password:
        raise UserError("the password is empty")
    if s.exec(select(User).where(User.name == name)).first():
        raise UserError(f"user {name!r} already exists")
    user = User(name=name, role=role, password_hash=hash_password(password), email=email, demo=demo)
    s.add(user)
    record(s, "user.add", actor=actor, user=name, role=role)
    return user


def list_users(s: Session) -> list[User]:
    return list(s.exec(select(User).order_by(User.name)))


def get_user(s: Session, *, name: str) -> User:
    user = s.exec(select(User).where(User.name == name)).first()
    if user is None:
        raise UserError(f"no user named {name!r}")
    return user


def disable_user(s: Session, *, name: str, actor: str | None = None) -> User:
    user = get_user(s, name=name)
    user.disabled = True
    s.add(user)
    record(s, "user.disable", actor=actor, user=name)
    return user


def authenticate(s: Session, *, name: str, password: str) -> User | None:
    """The active user with this name and password, or None; both outcomes are audited."""
    user = s.exec(select(User).where(User.name == name)).first()
    ok = user is not None and not user.disabled and verify_password(password, user.password_hash)
    record(s, "login" if ok else "login.failed", actor=name)
    s.commit()
    return user if ok else None


def user_by_email(s: Session, *, email: str) -> User | None:
    """The active account matched to an OIDC identity by e-mail."""
    user = s.exec(select(User).where(User.email == email)).first()
    return user if user is not None and not user.disabled else None


def _token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def open_login(s: Session, user: User) -> str:
    """A new login token for `user` (committed), to keep in the browser; expired tokens go."""
    token = secrets.token_urlsafe(32)
    s.exec(delete(LoginToken).where(LoginToken.expires_at <= utcnow()))
    s.add(LoginToken(token_hash=_token_hash(token), user_id=user.id,
                     expires_at=utcnow() + timedelta(hours=LOGIN_HOURS)))
    s.commit()
    return token


def user_for_login(s: Session, token: str) -> User | None:
    """The active user a live token belongs to, or None (unknown, expired or logged out)."""
    row = s.exec(select(LoginToken).where(LoginToken.token_hash == _token_hash(token),
                                          LoginToken.expires_at > utcnow())).first()
    user = s.get(User, row.user_id) if row is not None else None
    return user if user is not None and not user.disabled else None


def close_login(s: Session, token: str) -> None:
    """Logout: the token stops working, whatever the browser keeps."""
    s.exec(delete(LoginToken).where(LoginToken.token_hash == _token_hash(token)))
    s.commit()
