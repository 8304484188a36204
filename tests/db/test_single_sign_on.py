"""An OpenID Connect identity mapped to an account by e-mail, on SQLite and PostgreSQL (the
whole sign-on, with a real provider and Chromium: tests/browser/deploy/test_sso.py)."""

import pytest
from sqlmodel import Session, select

from db.engine import engine_for
from db.models import AuditLog, User
from db.single_sign_on import identity_current, sso_account
from db.users import add_user, disable_user, open_login, set_email, user_for_login
from errors import UserError


def _session(url: str) -> Session:
    return Session(engine_for(url), expire_on_commit=False)


def _audit(s: Session) -> list[tuple[str, str | None, dict]]:
    return [(a.action, a.actor, a.detail) for a in s.exec(
        select(AuditLog).where(AuditLog.action.in_(["login", "login.sso_refused"]))
        .order_by(AuditLog.id))]


def test_an_identity_logs_in_as_the_account_with_its_email_ignoring_case(database_url: str) -> None:
    with _session(database_url) as s:
        add_user(s, name="dr-a", role="expert", password="pw", email=" Dr.A@Hospital.example ")
        add_user(s, name="dr-b", role="student", password="pw")
        s.commit()
        assert s.exec(select(User.email).where(User.name == "dr-a")).one() == "dr.a@hospital.example"
        for email in ("dr.a@hospital.example", "DR.A@HOSPITAL.EXAMPLE"):
            assert sso_account(s, email=email, email_verified=True).name == "dr-a"
        assert sso_account(s, email="Dr.A@hospital.example").name == "dr-a"  # no claim: trusted
        assert _audit(s) == [("login", "dr-a", {"via": "sso"})] * 3


@pytest.mark.parametrize(("claims", "message"), [
    ({"email": "nobody@hospital.example", "email_verified": True},
     "No account has the e-mail nobody@hospital.example; ask an admin to add it."),
    ({"email": "dr.a@hospital.example", "email_verified": False},
     "The identity provider has not verified the e-mail dr.a@hospital.example; ask IT."),
    ({"email": None}, "The identity provider sent no e-mail address for this identity; ask IT "
                      "to release the email claim to this app."),
    ({"email": ["dr.a@hospital.example"]}, "The identity provider sent no e-mail address for "
                                          "this identity; ask IT to release the email claim to "
                                          "this app."),
    ({"email": "dr.a@hospital.example%"}, "No account has the e-mail dr.a@hospital.example%; "
                                          "ask an admin to add it."),
])
def test_an_identity_without_an_enabled_account_is_refused_in_one_line(
        database_url: str, claims: dict, message: str) -> None:
    with _session(database_url) as s:
        add_user(s, name="dr-a", role="expert", password="pw", email="dr.a@hospital.example")
        s.commit()
        with pytest.raises(UserError) as e:
            sso_account(s, **claims)
        assert str(e.value) == message
        assert [(a, r) for a, _, r in _audit(s)] == [
            ("login.sso_refused", {"email": claims["email"] if isinstance(claims["email"], str)
                                   else "", "reason": message})]


def test_a_disabled_account_is_refused(database_url: str) -> None:
    with _session(database_url) as s:
        add_user(s, name="keep", role="admin", password="pw")
        add_user(s, name="dr-a", role="expert", password="pw", email="dr.a@hospital.example")
        disable_user(s, name="dr-a")
        s.commit()
        with pytest.raises(UserError, match=r"^The account for Dr.A@hospital.example is disabled; "
                                            r"ask an admin.$"):
            sso_account(s, email="Dr.A@hospital.example", email_verified=True)


@pytest.mark.parametrize("email", ["not-an-address", "a@b@c", "a b@c", "a@b\x07c", "x" * 250 + "@h.example"])
def test_an_account_email_must_be_one_address(database_url: str, email: str) -> None:
    with _session(database_url) as s, pytest.raises(UserError, match="is not an address"):
        add_user(s, name="dr-a", role="expert", password="pw", email=email)


def test_two_accounts_cannot_share_an_email_in_any_case(database_url: str) -> None:
    with _session(database_url) as s:
        add_user(s, name="dr-a", role="expert", password="pw", email="dr.a@hospital.example")
        s.commit()
        with pytest.raises(UserError, match="already the account 'dr-a'"):
            add_user(s, name="dr-b", role="expert", password="pw", email="DR.A@hospital.example")


def test_a_changed_email_maps_the_new_identity_and_ends_the_sessions(database_url: str) -> None:
    with _session(database_url) as s:
        user = add_user(s, name="dr-a", role="expert", password="pw", email="old@hospital.example")
        s.commit()
        token = open_login(s, user)
        set_email(s, name="dr-a", email="New@Hospital.example", actor="admin")
        s.commit()
        assert user_for_login(s, token) is None  # a session of the old identity ended
        assert sso_account(s, email="new@hospital.example").name == "dr-a"
        with pytest.raises(UserError, match="No account has the e-mail old@hospital.example"):
            sso_account(s, email="old@hospital.example")
        set_email(s, name="dr-a", email=None)
        s.commit()
        with pytest.raises(UserError, match="No account has the e-mail new@hospital.example"):
            sso_account(s, email="new@hospital.example")
        changes = [a.detail for a in s.exec(select(AuditLog).where(AuditLog.action == "user.email")
                                            .order_by(AuditLog.id))]
        assert changes == [{"user": "dr-a", "old": "old@hospital.example",
                            "new": "new@hospital.example"},
                           {"user": "dr-a", "old": "new@hospital.example", "new": None}]


def test_an_identity_opens_a_session_only_before_its_id_token_expires() -> None:
    assert identity_current(1_000.0, now=999.5) and identity_current(1_000, now=999)
    assert not identity_current(1_000, now=1_000) and not identity_current(1_000, now=5_000)
    for exp in (None, "4102444800", True, [4102444800]):  # missing or not a number
        assert not identity_current(exp, now=0)
