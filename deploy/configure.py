"""The container's configuration from the environment alone: checks the settings the app
reads at start and writes Streamlit's secrets file (the single sign-on `[auth]` section,
docs/deploy.md) with mode 0600. Run by deploy/entrypoint.sh as `python deploy/configure.py
SECRETS_FILE`; stdlib only, so it runs before anything else is imported.

A mistake is one line on stderr naming the variable, and exit 2 (the CLI's convention); a
secret's value is never printed. The variables:

- `NMB_BASE_PATH`: the path prefix the proxy publishes the app under (`nmb` for
  `https://hospital.example/nmb/`); letters, digits, `-`, `_` and `/` only.
- `NMB_OIDC_CLIENT_ID`, `NMB_OIDC_CLIENT_SECRET`, `NMB_OIDC_METADATA_URL` (the provider's
  `.well-known/openid-configuration`), `NMB_OIDC_REDIRECT_URI` (`https://host/<prefix>/oauth2callback`),
  `NMB_AUTH_COOKIE_SECRET` (at least 32 characters): single sign-on, all or none of them.
- `NMB_OIDC_PROMPT` (optional, with single sign-on only): the OpenID Connect `prompt` sent to
  the provider (`client_kwargs`), e.g. `login` to ask for the password at every sign-on;
  `none`, `login`, `consent`, `select_account`, or several of the last three separated by
  spaces (OpenID Connect Core 1.0, 3.1.2.1). Empty: Streamlit's default, `select_account`.
"""

import json
import os
import re
import sys
from pathlib import Path

OIDC = {  # variable -> key of Streamlit's [auth] section
    "NMB_OIDC_REDIRECT_URI": "redirect_uri",
    "NMB_AUTH_COOKIE_SECRET": "cookie_secret",
    "NMB_OIDC_CLIENT_ID": "client_id",
    "NMB_OIDC_CLIENT_SECRET": "client_secret",
    "NMB_OIDC_METADATA_URL": "server_metadata_url",
}
SECRET = {"NMB_AUTH_COOKIE_SECRET", "NMB_OIDC_CLIENT_SECRET"}
PROMPTS = ("none", "login", "consent", "select_account")  # OpenID Connect Core 1.0, 3.1.2.1
MAX_VALUE = 2000  # characters of one setting
_BASE_PATH = re.compile(r"[A-Za-z0-9_/-]*")


class SettingError(Exception):
    """A setting that cannot be used: the message names the variable, never a secret value."""


def _value(name: str) -> str:
    value = os.environ.get(name, "").strip()
    shown = "its value" if name in SECRET else repr(value[:80])
    if len(value) > MAX_VALUE:
        raise SettingError(f"{name}: longer than {MAX_VALUE} characters")
    if not value.isprintable():
        raise SettingError(f"{name}: {shown} has a control character")
    return value


def base_path() -> str:
    """`NMB_BASE_PATH` without its outer slashes ('' for the root)."""
    value = _value("NMB_BASE_PATH")
    if not _BASE_PATH.fullmatch(value) or "//" in value.strip("/"):
        raise SettingError(f"NMB_BASE_PATH: {value[:80]!r} is not a path such as nmb or tools/nmb "
                           "(letters, digits, -, _ and / only)")
    return value.strip("/")


def _url(name: str, value: str) -> None:
    if not re.fullmatch(r"https?://[^\s/]+(/\S*)?", value):
        raise SettingError(f"{name}: {value[:80]!r} is not an http(s) URL")


def oidc_prompt() -> str:
    """`NMB_OIDC_PROMPT`: '' (Streamlit's default) or a space-separated list of `PROMPTS`, with
    `none` alone (OpenID Connect Core 1.0, 3.1.2.1)."""
    value = _value("NMB_OIDC_PROMPT")
    words = value.split()
    if (any(w not in PROMPTS for w in words) or len(set(words)) < len(words)
            or ("none" in words and len(words) > 1)):
        raise SettingError(f"NMB_OIDC_PROMPT: {value[:80]!r} is not an OpenID Connect prompt "
                           f"({', '.join(PROMPTS)}; none alone, the others may be combined)")
    return " ".join(words)


def auth_section() -> dict[str, str | dict[str, str]]:
    """Streamlit's `[auth]` settings from the environment; {} when single sign-on is off."""
    values = {name: _value(name) for name in OIDC}
    given = [n for n, v in values.items() if v]
    asked = oidc_prompt()
    if not given:
        if asked:
            raise SettingError(f"NMB_OIDC_PROMPT: {asked!r} is set but single sign-on is off "
                               f"(set {', '.join(OIDC)} too, or leave it empty)")
        return {}
    missing = [n for n, v in values.items() if not v]
    if missing:
        raise SettingError(f"{', '.join(missing)}: missing; single sign-on needs every one of "
                           f"{', '.join(OIDC)} (set: {', '.join(given)})")
    _url("NMB_OIDC_METADATA_URL", values["NMB_OIDC_METADATA_URL"])
    _url("NMB_OIDC_REDIRECT_URI", values["NMB_OIDC_REDIRECT_URI"])
    if not values["NMB_OIDC_REDIRECT_URI"].endswith("/oauth2callback"):
        raise SettingError(f"NMB_OIDC_REDIRECT_URI: {values['NMB_OIDC_REDIRECT_URI'][:80]!r} "
                           "must end with /oauth2callback (https://host/<prefix>/oauth2callback)")
    if len(values["NMB_AUTH_COOKIE_SECRET"]) < 32:
        raise SettingError("NMB_AUTH_COOKIE_SECRET: shorter than 32 characters "
                           "(make one with `openssl rand -hex 32`)")
    auth: dict[str, str | dict[str, str]] = {OIDC[n]: v for n, v in values.items()}
    if asked:
        auth["client_kwargs"] = {"prompt": asked}
    return auth


def _toml(value: str | dict[str, str]) -> str:
    """A TOML basic string (printable text, so JSON's escaping of `"` and `\\` is TOML's), or
    an inline table of them."""
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + " }"
    return json.dumps(value, ensure_ascii=False)


def secrets_toml(auth: dict[str, str | dict[str, str]]) -> str:
    """The secrets file: the `[auth]` section, if any."""
    lines = ["# written by deploy/configure.py from the environment at each start; do not edit"]
    if auth:
        lines.append("[auth]")
        lines += [f"{key} = {_toml(value)}" for key, value in auth.items()]
    return "\n".join(lines) + "\n"


def write_private(path: Path, text: str) -> None:
    """Write `text` to `path` with mode 0600 from the first byte (a fresh file renamed over it)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: configure.py SECRETS_FILE", file=sys.stderr)
        return 2
    try:
        prefix = base_path()
        auth = auth_section()
    except SettingError as e:
        print(f"nmb: {e}", file=sys.stderr)
        return 2
    write_private(Path(argv[0]), secrets_toml(auth))
    sso = f"on ({auth['server_metadata_url']})" if auth else "off (password logins only)"
    if "client_kwargs" in auth:
        sso += f", prompt {auth['client_kwargs']['prompt']}"
    print(f"nmb: path prefix /{prefix}{'/' if prefix else ''}; single sign-on {sso}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
