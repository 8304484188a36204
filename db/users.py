"""Accounts, roles, passwords, logins and the sessions they open.

Passwords are hashed with scrypt (RFC 7914; n=2**14, r=8, p=1, 16-byte salt), a memory-hard
KDF from the standard library; they are never stored or logged in clear. A password login
survives page reloads through a login token: 256 random bits in the browser's cookie, only
their sha256 in the database, valid for `LOGIN_HOURS` unless the user logs out or is disabled.

Every open session keeps the account's `session_epoch` from its login; logout and disabling
bump it and delete the account's tokens, so every session of that account, in any browser,
ends at its next page run (`session_user`). Failed logins are throttled (OWASP Authentication
Cheat Sheet, "Protect against automated attacks"): `NAME_FAILURES` failures for a user name, or
`CLIENT_FAILURES` from a client address, within `LOCKOUT_MINUTES` lock further attempts out
until the oldest of them is `LOCKOUT_MINUTES` old; the lockout is audited. The check and the
counting of an attempt are one serialised transaction (attempts are counted before their
password is checked), so simultaneous attempts cannot slip past the limit. A login always
computes exactly one scrypt, against a dummy hash when the name is unknown, too long or
disabled, so its time does not tell which names exist.
"""

import base64
import hashlib
import hmac
import re
import secrets
from datetime import UTC, datetime, timedelta

from sqlalchemy import text
from sqlmodel import Session, delete, func, select

from db.audit import record
from db.busy import LOGIN_KEPT, person_write, retry_when_busy
from db.locks import for_update, take_turns
from db.models import ROLES, LoginFailure, LoginToken, User, utcnow
from errors import UserError

LOGIN_HOURS = 12
LOGIN_COOKIE = "nmb_login"  # holds the login token; the volume route reads it too
MAX_NAME = 64  # characters; the column's size on both databases
ACCOUNTS = "users.accounts"  # adding accounts and giving e-mails take turns (db.locks)
MAX_EMAIL = 256  # characters; the column's size
MAX_PASSWORD = 1024
MIN_PASSWORD = 12  # for passwords people set (check_new_password)
LEAST_PRIVILEGED_FIRST = ("student", "physician", "expert", "admin")  # a form's default first
LOCKOUT_MINUTES = 15
NAME_FAILURES = 5
CLIENT_FAILURES = 20

_NAME_RULE = re.compile(rf"[A-Za-z0-9._-]{{1,{MAX_NAME}}}")
_EMAIL_RULE = re.compile(r"[^@\s]+@[^@\s]+")
_N, _R, _P = 2**14, 8, 1
# A well-formed hash no password matches: verified against when there is no account to check.
_DUMMY_HASH = (f"scrypt${_N}${_R}${_P}${base64.b64encode(bytes(16)).decode()}$"
               f"{base64.b64encode(bytes(32)).decode()}")


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
    if not _NAME_RULE.fullmatch(name):
        raise UserError(f"user name {name[:MAX_NAME]!r} must be 1-{MAX_NAME} letters, digits, "
                        "'-', '_' or '.'")
    if not password or len(password) > MAX_PASSWORD:
        raise UserError(f"the password must be 1-{MAX_PASSWORD} characters")
    take_turns(s, ACCOUNTS)  # a second admin adding this name or e-mail waits, then is refused
    if s.exec(select(User).where(User.name == name)).first():
        raise UserError(f"user {name!r} already exists")
    email = _free_email(s, email) if email is not None else None
    user = User(name=name, role=role, password_hash=hash_password(password), email=email, demo=demo)
    s.add(user)
    record(s, "user.add", actor=actor, user=name, role=role)
    return user


def _free_email(s: Session, email: str, user: User | None = None) -> str:
    """`email` as stored (`account_email`), refused if another account has it in any case."""
    email = account_email(email)
    other = user_by_email(s, email=email)
    if other is not None and other is not user:
        raise UserError(f"the e-mail {email!r} is already the account {other.name!r}'s")
    return email


def set_email(s: Session, *, name: str, email: str | None, actor: str | None = None) -> User:
    """Give the account the e-mail single sign-on maps to it (None: no single sign-on);
    audited; its open sessions end (they may be another identity's)."""
    take_turns(s, ACCOUNTS)
    user = get_user(s, name=name)
    new = _free_email(s, email, user) if email else None
    record(s, "user.email", actor=actor, user=name, old=user.email, new=new)
    user.email = new
    _end_sessions(s, user)
    return user


def check_new_password(password: str) -> None:
    """The rule for a password a person sets (`nmb users add|password`, /admin): at least
    `MIN_PASSWORD` characters (NIST SP 800-63B, 5.1.1: length, no composition rules). The
    demo's synthetic accounts and tests use `add_user` directly."""
    if len(password) < MIN_PASSWORD:
        raise UserError(f"the password must be at least {MIN_PASSWORD} characters "
                        f"(got {len(password)})")
    if len(password) > MAX_PASSWORD:
        raise UserError(f"the password must be at most {MAX_PASSWORD} characters")


def _lock_last_admin(s: Session, user: User, doing: str) -> None:
    """Refuse `doing` to the last enabled admin. Locks the enabled admins' rows (PostgreSQL;
    SQLite's write transaction is already exclusive), so two admins acting on each other at
    once cannot both succeed."""
    if user.role != "admin" or user.disabled:
        return
    admins = s.exec(select(User.id).where(User.role == "admin", User.disabled == False)  # noqa: E712
                    .with_for_update()).all()
    if list(admins) == [user.id]:
        raise UserError(_last_admin(user, doing))


def _last_admin(user: User, doing: str) -> str:
    return f"{user.name!r} is the last enabled admin: add another admin before {doing} it"


def change_role(s: Session, *, name: str, role: str, actor: str | None = None) -> User:
    """Give the account another role (audited); its open sessions end (they were opened for
    the old role's pages)."""
    if role not in ROLES:
        raise UserError(f"role {role!r} is not one of {', '.join(ROLES)}")
    user = get_user(s, name=name, lock=True)  # a second change at once reads this one's role
    if user.role == role:
        raise UserError(f"{name!r} is already {role}")
    if role != "admin":
        _lock_last_admin(s, user, "demoting")
    record(s, "user.role", actor=actor, user=name, old=user.role, new=role)
    user.role = role
    _end_sessions(s, user)
    return user


def reset_password(s: Session, *, name: str, password: str, actor: str | None = None) -> User:
    """Set a new password (the rule of `check_new_password`; audited, the password never is);
    the account's open sessions end."""
    check_new_password(password)
    user = get_user(s, name=name)
    user.password_hash = hash_password(password)
    _end_sessions(s, user)
    record(s, "user.password", actor=actor, user=name)
    return user


def list_users(s: Session) -> list[User]:
    return list(s.exec(select(User).order_by(User.name)))


def get_user(s: Session, *, name: str, lock: bool = False) -> User:
    """The account of that name (`lock`: its row locked until the transaction ends)."""
    # Checked before the query: on PostgreSQL a name longer than the column is an error.
    valid = _NAME_RULE.fullmatch(name)
    query = select(User).where(User.name == name)
    user = s.exec(for_update(query) if lock else query).first() if valid else None
    if user is None:
        raise UserError(f"no user named {name[:MAX_NAME]!r}")
    return user


def _end_sessions(s: Session, user: User) -> None:
    """Every open session and login token of `user` ends (in the caller's transaction)."""
    user.session_epoch += 1
    s.add(user)
    s.exec(delete(LoginToken).where(LoginToken.user_id == user.id))


def disable_user(s: Session, *, name: str, actor: str | None = None) -> bool:
    """Disable the account and end its sessions, including the ones open now; False where it
    was already disabled (then it is left as it is, no audit row). The last enabled admin is
    refused: nobody could add, enable or manage accounts from the app any more. The account's
    row and the enabled admins' are locked in one read (in id order, so two disables never
    wait on each other in a cycle): a second disable at once waits and finds it disabled, and
    two admins disabling each other leave one."""
    rows = s.exec(for_update(select(User).where(
        (User.name == name) | ((User.role == "admin") & (User.disabled == False)))  # noqa: E712
        .order_by(User.id))).all() if _NAME_RULE.fullmatch(name) else []
    user = next((u for u in rows if u.name == name), None)
    if user is None:
        raise UserError(f"no user named {name[:MAX_NAME]!r}")
    if user.disabled:
        return False
    admins = [u.id for u in rows if u.role == "admin" and not u.disabled]
    if user.role == "admin" and admins == [user.id]:
        raise UserError(_last_admin(user, "disabling"))
    user.disabled = True
    _end_sessions(s, user)
    record(s, "user.disable", actor=actor, user=name)
    return True


@person_write("you are not signed out yet")
def log_out(s: Session, *, user_id: int) -> None:
    """Logout: every session of the user ends, in every browser, whatever the browser keeps."""
    user = s.get(User, user_id)
    if user is not None:
        _end_sessions(s, user)
        record(s, "logout", actor=user.name)
    s.commit()


def session_user(s: Session, *, user_id: int, epoch: int, role: str,
                 token: str | None = None) -> User | None:
    """The account of an open session, if the session may go on: the account exists, is
    enabled, has the role and the session epoch the session logged in with, and the session's
    login token (password logins) is live."""
    user = s.get(User, user_id)
    if user is None or user.disabled or user.role != role or user.session_epoch != epoch:
        return None
    if token is not None and getattr(user_for_login(s, token), "id", None) != user.id:
        return None
    return user


def _aware(at: datetime) -> datetime:
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)  # SQLite drops the zone


def _lock_end(s: Session, *, name: str, client: str | None, now: datetime,
              upto: int | None = None) -> datetime | None:
    """When the lockout of this name or client ends, counting the failures (and attempts in
    progress) within the window, only those up to row id `upto` if given; None if not locked."""
    window = timedelta(minutes=LOCKOUT_MINUTES)
    ends = []
    for column, value, limit in ((LoginFailure.name, name, NAME_FAILURES),
                                 (LoginFailure.client, client, CLIENT_FAILURES)):
        if value is None:
            continue
        q = select(LoginFailure.at).where(column == value, LoginFailure.at > now - window)
        if upto is not None:
            q = q.where(LoginFailure.id <= upto)
        recent = s.exec(q.order_by(LoginFailure.at.desc()).limit(limit)).all()
        if len(recent) >= limit:
            ends.append(_aware(recent[-1]) + window)
    return max(ends, default=None)


def _lock_key(kind: str, value: str) -> int:
    """A PostgreSQL advisory lock key (signed 64 bits) for a user name or a client address."""
    digest = hashlib.sha256(f"nmb.login.{kind}:{value}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def _serialise(s: Session, name: str, client: str | None) -> None:
    """Until this transaction ends, no other login attempt on this name or from this client
    can count or record. PostgreSQL: advisory transaction locks, always the name's first, so
    two attempts never wait for each other in a cycle. SQLite: every transaction of the study's
    engine begins with BEGIN IMMEDIATE (db.engine), so it already holds the one write lock."""
    if s.get_bind().dialect.name != "postgresql":
        return
    for kind, value in (("name", name), ("client", client)):
        if value is not None:
            s.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _lock_key(kind, value)})


@person_write(LOGIN_KEPT)
def _reserve(s: Session, name: str, client: str | None) -> int | datetime:
    """Count this attempt as a failure before its password is checked (committed): the id of
    its row; or, while the name or the client is locked out, when the lockout ends (the
    refusal is audited). The decision and the row are one serialised transaction, so
    simultaneous attempts cannot all see a count below the limit."""
    s.commit()  # whatever the caller had open: the count below reads what is committed now
    _serialise(s, name, client)
    now = utcnow()
    s.exec(delete(LoginFailure).where(LoginFailure.at <= now - timedelta(minutes=LOCKOUT_MINUTES)))
    until = _lock_end(s, name=name, client=client, now=now)
    if until is not None:
        record(s, "login.refused", actor=name, client=client, until=until.isoformat())
        s.commit()
        return until
    row = LoginFailure(name=name, client=client, at=now)
    s.add(row)
    s.flush()
    attempt = row.id
    s.commit()
    return attempt


@person_write(LOGIN_KEPT)
def _failed(s: Session, name: str, client: str | None, attempt: int, detail: dict) -> None:
    """The attempt's row stays counted; audit the failure and the lockout it starts, if any
    (only the attempt that brings a count to its limit starts one). A concurrent earlier
    success may have cleared the row already: that failure counts no more."""
    record(s, "login.failed", actor=name, client=client, **detail)
    # A query, not s.get: the session still holds the row it added, deleted or not.
    if s.exec(select(LoginFailure.id).where(LoginFailure.id == attempt)).first() is not None:
        until = _lock_end(s, name=name, client=client, now=utcnow(), upto=attempt)
        if until is not None:
            record(s, "login.lockout", actor=name, client=client, until=until.isoformat())
    s.commit()


def authenticate(s: Session, *, name: str, password: str, client: str | None = None
                 ) -> User | None:
    """The active user with this name and password, or None; every attempt is audited.

    `client` is the address the attempt came from (for the per-client throttle; None when
    unknown, then only the per-name limit applies). Raises UserError, without checking the
    password, while the name or the client is locked out. Each attempt is counted as a
    failure before its password is checked (`_reserve`) and uncounted if it succeeds, so the
    limits hold however many attempts arrive at once; the scrypt runs outside any lock.
    """
    # What is counted and audited: bounded and printable, whatever was typed.
    key = "".join(c if c.isprintable() else "?" for c in name[:MAX_NAME])
    client = client[:64] if client else None
    attempt = _reserve(s, key, client)
    if isinstance(attempt, datetime):
        raise UserError(f"Too many failed logins: try again after {attempt:%H:%M} UTC.")
    possible = bool(_NAME_RULE.fullmatch(name)) and len(password) <= MAX_PASSWORD

    def account() -> tuple[User | None, str, bool]:
        user = s.exec(select(User).where(User.name == name)).first() if possible else None
        stored, active = (user.password_hash, not user.disabled) if user else (_DUMMY_HASH, False)
        s.commit()  # no transaction (on SQLite: no write lock) held while the scrypt runs
        return user, stored, active

    user, stored, active = retry_when_busy(s, account, kept=LOGIN_KEPT)
    # One scrypt whatever the name: equal time.
    if verify_password(password if possible else "", stored) and active:
        # A success clears the name's failures counted before it (this attempt's included);
        # attempts that began after it stay counted.
        def succeed() -> None:
            s.exec(delete(LoginFailure).where(LoginFailure.name == key,
                                              LoginFailure.id <= attempt))
            record(s, "login", actor=key, client=client)
            s.commit()

        retry_when_busy(s, succeed, kept=LOGIN_KEPT)
        return user
    _failed(s, key, client, attempt, {} if possible else {"name_length": len(name)})
    return None


def account_email(email: str) -> str:
    """An account's e-mail as stored: stripped and lower-case (single sign-on matches it
    ignoring case), or UserError naming it when it is not one address of at most
    `MAX_EMAIL` printable characters."""
    email = email.strip()
    if len(email) > MAX_EMAIL or not email.isprintable() or not _EMAIL_RULE.fullmatch(email):
        raise UserError(f"the e-mail {email[:MAX_EMAIL]!r} is not an address like "
                        "name@hospital.example")
    return email.lower()


def user_by_email(s: Session, *, email: str) -> User | None:
    """The account (enabled or not) with this e-mail, ignoring case."""
    if len(email) > MAX_EMAIL:
        return None
    return s.exec(select(User).where(func.lower(User.email) == email.lower())).first()


def _token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@person_write(LOGIN_KEPT)
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


