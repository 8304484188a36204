"""Single sign-on: an OpenID Connect identity mapped to an existing account by e-mail.

The identity provider (the hospital's IdP, through Streamlit's `st.login`) vouches for the
person; the app decides what they may do. An identity logs in as the account whose e-mail is
the identity's `email` claim, ignoring case (IdPs return addresses in the case they were typed
in; `db.users.account_email` stores them lower-case). Nobody gets an account by signing in: an
identity with no account, or with a disabled one, or whose provider says the address is not
verified (`email_verified` false, OpenID Connect Core 1.0, 5.1), is refused with one line
saying why. Every outcome is audited (`login` with `via: sso`, or `login.sso_refused`).

An identity opens a session only while its ID token is valid (`identity_current`): Streamlit
keeps the identity in a cookie for 30 days, but a new session after the app's own login ends
(logout, 12 hours) needs a new sign-on at the provider.
"""

import time
from typing import Any

from sqlmodel import Session

from db.audit import record
from db.busy import LOGIN_KEPT, person_write
from db.models import User
from db.users import MAX_EMAIL, user_by_email
from errors import UserError


def _printable(value: Any) -> str:
    return "".join(c if c.isprintable() else "?" for c in str(value)[:MAX_EMAIL])


def identity_current(expires: Any, now: float | None = None) -> bool:
    """Whether an identity whose ID token has this `exp` (seconds since the epoch) may still
    open a session: the current time is before it (OpenID Connect Core 1.0, 3.1.3.7, step 9).
    A missing or non-numeric `exp` may not."""
    if isinstance(expires, bool) or not isinstance(expires, int | float):
        return False
    return (time.time() if now is None else now) < expires


@person_write(LOGIN_KEPT)
def sso_account(s: Session, *, email: Any, email_verified: Any = None) -> User:
    """The enabled account of the identity with these claims; UserError (one line, audited)
    otherwise. The claims are untrusted values: anything but a string is no address."""
    shown = _printable(email) if isinstance(email, str) and email else ""
    if not shown:
        reason = ("The identity provider sent no e-mail address for this identity; ask IT to "
                  "release the email claim to this app.")
    elif email_verified is False:
        reason = f"The identity provider has not verified the e-mail {shown}; ask IT."
    else:
        user = user_by_email(s, email=email)
        if user is not None and not user.disabled:
            record(s, "login", actor=user.name, via="sso")
            s.commit()
            return user
        reason = (f"The account for {shown} is disabled; ask an admin." if user is not None
                  else f"No account has the e-mail {shown}; ask an admin to add it.")
    record(s, "login.sso_refused", actor=None, email=shown, reason=reason)
    s.commit()
    raise UserError(reason)
