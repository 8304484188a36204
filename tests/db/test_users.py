"""Accounts, login tokens, sessions and the login throttle on SQLite and PostgreSQL."""

import hashlib
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
from sqlalchemy import text
from sqlmodel import Session, select

from db.engine import engine_for
from db.models import AuditLog, LoginFailure, LoginToken, User, utcnow
from db.users import (
    CLIENT_FAILURES,
    LOCKOUT_MINUTES,
    NAME_FAILURES,
    add_user,
    authenticate,
    disable_user,
    get_user,
    log_out,
    open_login,
    session_user,
    user_for_login,
)
from errors import UserError


def _session(url: str) -> Session:
    return Session(engine_for(url), expire_on_commit=False)


def _actions(s: Session, action: str) -> list[AuditLog]:
    return list(s.exec(select(AuditLog).where(AuditLog.action == action).order_by(AuditLog.id)))


def test_a_login_token_lasts_until_logout_expiry_or_disabling(database_url: str) -> None:
    with _session(database_url) as s:
        ann = add_user(s, name="ann", role="expert", password="pw")
        bob = add_user(s, name="bob", role="student", password="pw")
        s.commit()
        assert authenticate(s, name="ann", password="pw").id == ann.id
        token, second, other = open_login(s, ann), open_login(s, ann), open_login(s, bob)
        assert user_for_login(s, token).id == ann.id
        assert user_for_login(s, token + "x") is None
        stored = {row.token_hash for row in s.exec(select(LoginToken))}
        assert token not in stored and other not in stored and len(stored) == 3

        log_out(s, user_id=ann.id)  # in one browser: ann's logins in every browser end
        assert user_for_login(s, token) is None and user_for_login(s, second) is None
        assert user_for_login(s, other).id == bob.id

        disable_user(s, name="bob")
        s.commit()
        assert user_for_login(s, other) is None

        late = open_login(s, ann)
        row = s.exec(select(LoginToken).where(LoginToken.user_id == ann.id)).one()
        row.expires_at = utcnow() - timedelta(seconds=1)
        s.add(row)
        s.commit()
        assert user_for_login(s, late) is None
        open_login(s, ann)  # a new login sweeps expired tokens away
        assert len(s.exec(select(LoginToken).where(LoginToken.user_id == ann.id)).all()) == 1


def test_an_open_session_ends_on_logout_disabling_or_a_new_role(database_url: str) -> None:
    with _session(database_url) as s:
        ann = add_user(s, name="ann", role="expert", password="pw")
        s.commit()
        token = open_login(s, ann)

        def alive(epoch: int = 0, role: str = "expert", tok: str | None = token) -> bool:
            return session_user(s, user_id=ann.id, epoch=epoch, role=role, token=tok) is not None

        assert alive() and alive(tok=None)  # a password session; a single sign-on one
        assert not alive(role="admin") and not alive(epoch=1) and not alive(tok=token + "x")
        log_out(s, user_id=ann.id)
        assert not alive() and not alive(tok=None)  # every session that logged in before
        assert ann.session_epoch == 1
        fresh = open_login(s, ann)
        assert alive(epoch=1, tok=fresh)
        disable_user(s, name="ann")
        s.commit()
        assert not alive(epoch=1, tok=fresh) and not alive(epoch=2, tok=None)
        assert session_user(s, user_id=9999, epoch=0, role="expert") is None
        assert [a.actor for a in _actions(s, "logout")] == ["ann"]


def _age_failures(s: Session, minutes: float) -> None:
    """Make every counted failure `minutes` older (as if that time had passed)."""
    for row in s.exec(select(LoginFailure)):
        row.at -= timedelta(minutes=minutes)
        s.add(row)
    s.commit()


def test_failed_logins_lock_the_name_out_and_the_lockout_is_audited(database_url: str) -> None:
    with _session(database_url) as s:
        add_user(s, name="ann", role="expert", password="right")
        s.commit()
        for _ in range(NAME_FAILURES):
            assert authenticate(s, name="ann", password="wrong", client="10.0.0.1") is None
        with pytest.raises(UserError, match="Too many failed logins"):
            authenticate(s, name="ann", password="right", client="10.0.0.2")  # even the right one
        with pytest.raises(UserError):
            authenticate(s, name="ann", password="right")  # from anywhere
        assert authenticate(s, name="bob", password="x", client="10.0.0.1") is None  # other names
        assert len(_actions(s, "login.failed")) == NAME_FAILURES + 1
        lockouts = _actions(s, "login.lockout")
        assert [(a.actor, a.detail["client"]) for a in lockouts] == [("ann", "10.0.0.1")]
        assert len(_actions(s, "login.refused")) == 2

        _age_failures(s, LOCKOUT_MINUTES + 1)
        assert authenticate(s, name="ann", password="right", client="10.0.0.2") is not None
        assert not s.exec(select(LoginFailure).where(LoginFailure.name == "ann")).all()


@pytest.mark.slow
def test_failed_logins_from_one_client_lock_that_client_out(database_url: str) -> None:
    with _session(database_url) as s:
        add_user(s, name="ann", role="expert", password="right")
        s.commit()
        for i in range(CLIENT_FAILURES):  # a different name each time: no name is locked
            assert authenticate(s, name=f"guess{i}", password="x", client="10.0.0.9") is None
        with pytest.raises(UserError, match="Too many failed logins"):
            authenticate(s, name="ann", password="right", client="10.0.0.9")
        assert authenticate(s, name="ann", password="right", client="10.0.0.10") is not None
        assert [a.detail["client"] for a in _actions(s, "login.lockout")] == ["10.0.0.9"]


@pytest.fixture
def scrypt_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The cost parameter `n` of every scrypt computed (the real scrypt still runs)."""
    calls: list[int] = []
    real = hashlib.scrypt

    def counting(password: bytes, **kw):
        calls.append(kw["n"])
        return real(password, **kw)

    monkeypatch.setattr(hashlib, "scrypt", counting)
    return calls


@pytest.mark.slow
def test_every_login_costs_one_scrypt_whether_or_not_the_name_exists(
        database_url: str, scrypt_calls: list[int]) -> None:
    with _session(database_url) as s:
        add_user(s, name="ann", role="expert", password="right")
        add_user(s, name="gone", role="expert", password="right")
        disable_user(s, name="gone")
        s.commit()
        attempts = [("ann", "right"), ("ann", "wrong"), ("nobody", "right"), ("gone", "right"),
                    ("x" * 65, "right"), ("nul\x00", "right"), ("ann", "p" * 5000)]
        for name, password in attempts:
            scrypt_calls.clear()
            authenticate(s, name=name, password=password)
            assert scrypt_calls == [2**14], name[:10]  # the same work: an account's or the dummy


@pytest.mark.slow
def test_long_names_are_refused_before_any_query(database_url: str) -> None:
    """A 65-character name raised StringDataRightTruncation on PostgreSQL; a 5 MB one went
    into the audit log whole."""
    with _session(database_url) as s:
        add_user(s, name="a" * 64, role="expert", password="pw")
        s.commit()
        assert authenticate(s, name="a" * 64, password="pw") is not None
        for name in ("a" * 65, "b" * 5_000_000, "c\x00d"):
            assert authenticate(s, name=name, password="pw") is None
            with pytest.raises(UserError, match="no user named"):
                get_user(s, name=name)
            with pytest.raises(UserError, match="must be 1-64"):
                add_user(s, name=name, role="expert", password="pw")
        failed = _actions(s, "login.failed")
        assert [len(a.actor) for a in failed] == [64, 64, 3]
        assert [a.detail.get("name_length") for a in failed] == [65, 5_000_000, 3]
        assert [u.name for u in s.exec(select(User))] == ["a" * 64]


def _at_once(url: str, attempts: list[tuple[str, str, str | None]]) -> Counter:
    """Every (name, password, client) attempt in its own thread with its own Session, all
    released together; how many ended "ok", "wrong" or "locked"."""
    ready = threading.Barrier(len(attempts))

    def one(attempt: tuple[str, str, str | None]) -> str:
        name, password, client = attempt
        with _session(url) as s:
            ready.wait()
            try:
                ok = authenticate(s, name=name, password=password, client=client)
            except UserError:
                return "locked"
            return "ok" if ok is not None else "wrong"

    with ThreadPoolExecutor(len(attempts)) as pool:
        return Counter(pool.map(one, attempts))


def _counted(s: Session, column, value: str) -> int:
    return len(s.exec(select(LoginFailure).where(column == value)).all())


@pytest.mark.slow
def test_simultaneous_wrong_then_right_passwords_cannot_pass_the_name_limit(
        database_url: str) -> None:
    """40 simultaneous attempts let the right password in after 39 failures (PostgreSQL):
    the check and the count were a read then a write."""
    with _session(database_url) as s:
        add_user(s, name="ann", role="expert", password="right")
        s.commit()
    # Each attempt from its own address: only the name's limit applies.
    wrong = _at_once(database_url, [("ann", "wrong", f"10.1.{i}.1") for i in range(40)])
    assert wrong == {"wrong": NAME_FAILURES, "locked": 40 - NAME_FAILURES}
    mixed = _at_once(database_url, [("ann", "right" if i % 2 else "wrong", f"10.2.{i}.1")
                                    for i in range(40)])
    assert mixed == {"locked": 40}  # the right password too, however many arrive at once
    with _session(database_url) as s:
        assert _counted(s, LoginFailure.name, "ann") == NAME_FAILURES
        assert len(_actions(s, "login.failed")) == NAME_FAILURES
        assert len(_actions(s, "login.refused")) == 40 - NAME_FAILURES + 40
        assert [a.actor for a in _actions(s, "login.lockout")] == ["ann"]
        assert not _actions(s, "login")


@pytest.mark.slow
def test_simultaneous_attempts_from_one_client_cannot_pass_its_limit(database_url: str) -> None:
    with _session(database_url) as s:
        add_user(s, name="ann", role="expert", password="right")
        s.commit()
    sprayed = _at_once(database_url, [(f"guess{i}", "x", "10.0.0.9") for i in range(40)])
    assert sprayed == {"wrong": CLIENT_FAILURES, "locked": 40 - CLIENT_FAILURES}
    mixed = _at_once(database_url, [("ann", "right", "10.0.0.9") if i % 2 else
                                    (f"more{i}", "x", "10.0.0.9") for i in range(40)])
    assert mixed == {"locked": 40}
    with _session(database_url) as s:
        assert _counted(s, LoginFailure.client, "10.0.0.9") == CLIENT_FAILURES
        assert len(_actions(s, "login.failed")) == CLIENT_FAILURES
        assert [a.detail["client"] for a in _actions(s, "login.lockout")] == ["10.0.0.9"]
        assert not _actions(s, "login")



def test_the_last_enabled_admin_cannot_be_disabled(database_url: str) -> None:
    with _session(database_url) as s:
        root = add_user(s, name="root", role="admin", password="pw")
        add_user(s, name="ann", role="expert", password="pw")
        s.commit()
        with pytest.raises(UserError, match="'root' is the last enabled admin"):
            disable_user(s, name="root")
        s.rollback()
        assert not get_user(s, name="root").disabled and root.session_epoch == 0
        assert not _actions(s, "user.disable")
        disable_user(s, name="ann")  # other roles: as before
        add_user(s, name="second", role="admin", password="pw")
        s.commit()
        disable_user(s, name="root")  # another admin is left
        s.commit()
        with pytest.raises(UserError, match="'second' is the last enabled admin"):
            disable_user(s, name="second")
        s.rollback()
        epoch = get_user(s, name="root").session_epoch
        disable_user(s, name="root")  # already disabled: nothing changes, nothing recorded
        s.commit()
        assert get_user(s, name="root").session_epoch == epoch
        assert [a.detail["user"] for a in _actions(s, "user.disable")] == ["ann", "root"]


def test_two_admins_disabling_each_other_at_once_leave_one(database_url: str) -> None:
    """The second disabling waits for the first (a row lock on PostgreSQL, the write lock on
    SQLite), then sees that it would leave no admin."""
    with _session(database_url) as s:
        add_user(s, name="a1", role="admin", password="pw")
        add_user(s, name="a2", role="admin", password="pw")
        s.commit()
    first = _session(database_url)
    disable_user(first, name="a2", actor="a1")  # not committed yet: holds its locks
    outcome: list[str] = []

    def second() -> None:
        with _session(database_url) as s:
            try:
                disable_user(s, name="a1", actor="a2")
                s.commit()
                outcome.append("disabled")
            except UserError as e:
                outcome.append(str(e))

    worker = threading.Thread(target=second)
    worker.start()
    def waiting() -> int:  # asked in a transaction of its own: pg_stat_activity is a snapshot
        with _session(database_url) as probe:  # per transaction, never renewed inside `first`
            return probe.exec(select(text(
                "count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"))).one()

    if database_url.startswith("postgresql"):  # wait until it waits (or has finished)
        while not outcome and not waiting():
            threading.Event().wait(0.05)
    first.commit()
    first.close()
    worker.join()
    assert outcome == ["'a1' is the last enabled admin: add another admin before disabling it"]
    with _session(database_url) as s:
        assert [u.name for u in s.exec(select(User).where(User.disabled == False))] == ["a1"]  # noqa: E712


def test_two_admins_disabling_one_account_at_once_audit_it_once(database_url: str) -> None:
    """Admin A's disable of an expert is not committed yet when admin B disables the same
    account: B's waits and finds it disabled (False, nothing written). Before (PostgreSQL):
    both disabled it, two `user.disable` entries."""
    from tests.db.interleave import against

    with _session(database_url) as s:
        add_user(s, name="ann", role="expert", password="pw")
        s.commit()
    first = _session(database_url)
    assert disable_user(first, name="ann", actor="a1")
    first.flush()
    second = against(database_url, first, lambda s: disable_user(s, name="ann", actor="a2"))
    assert second is False
    with _session(database_url) as s:
        assert [a.actor for a in _actions(s, "user.disable")] == ["a1"]


def test_two_role_changes_at_once_audit_the_role_each_found(database_url: str) -> None:
    """Admin A's change of an expert to student is not committed yet when admin B makes the
    account a physician: B's waits, and its audit entry names the role A left (student), so
    the entries chain. Before (PostgreSQL): B read the role unlocked, `expert`, twice."""
    from db.users import change_role
    from tests.db.interleave import against

    with _session(database_url) as s:
        add_user(s, name="ann", role="expert", password="pw")
        s.commit()
    first = _session(database_url)
    change_role(first, name="ann", role="student", actor="a1")
    first.flush()
    against(database_url, first, lambda s: (change_role(s, name="ann", role="physician",
                                                        actor="a2"), s.commit()))
    with _session(database_url) as s:
        assert [(a.detail["old"], a.detail["new"]) for a in _actions(s, "user.role")] == [
            ("expert", "student"), ("student", "physician")]


@pytest.mark.parametrize("clash", ["name", "email"])
def test_two_admins_adding_one_name_at_once(database_url: str, clash: str) -> None:
    """Admin A's new account is not committed yet when admin B adds the same name (or
    another name with the same e-mail): B's is refused in one line once A's is in
    (PostgreSQL: an IntegrityError traceback before)."""
    from tests.db.interleave import against

    first = _session(database_url)
    add_user(first, name="ann", role="expert", password="pw", email="ann@example.org")
    first.flush()  # A's row is written, not committed

    def second(s: Session) -> str:
        add_user(s, name="ann" if clash == "name" else "bob", role="expert", password="pw",
                 email="ann@example.org" if clash == "email" else None)
        s.commit()
        return "added"

    outcome = against(database_url, first, second)
    assert isinstance(outcome, UserError) and "already" in str(outcome), outcome
    with _session(database_url) as s:
        assert len(s.exec(select(User)).all()) == 1
