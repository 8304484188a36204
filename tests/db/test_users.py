"""Accounts and login tokens on SQLite and PostgreSQL."""

from datetime import timedelta

from sqlmodel import Session, select

from db.engine import engine_for
from db.models import LoginToken, utcnow
from db.users import add_user, authenticate, close_login, disable_user, open_login, user_for_login


def test_a_login_token_lasts_until_logout_expiry_or_disabling(database_url: str) -> None:
    with Session(engine_for(database_url), expire_on_commit=False) as s:
        ann = add_user(s, name="ann", role="expert", password="pw")
        bob = add_user(s, name="bob", role="student", password="pw")
        s.commit()
        assert authenticate(s, name="ann", password="pw").id == ann.id
        token, other = open_login(s, ann), open_login(s, bob)
        assert user_for_login(s, token).id == ann.id
        assert user_for_login(s, token + "x") is None
        stored = {row.token_hash for row in s.exec(select(LoginToken))}
        assert token not in stored and other not in stored and len(stored) == 2

        close_login(s, token)  # logout
        assert user_for_login(s, token) is None and user_for_login(s, other).id == bob.id

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
