"""deploy/configure.py: the environment checked and turned into Streamlit's secrets file."""

import os
import stat
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # starts processes or takes seconds: make test only

ROOT = Path(__file__).resolve().parents[2]
CONFIGURE = ROOT / "deploy" / "configure.py"
SSO = {
    "NMB_OIDC_CLIENT_ID": "nmb-studio",
    "NMB_OIDC_CLIENT_SECRET": 'a "quoted" \\ secret é',
    "NMB_OIDC_METADATA_URL": "https://sso.example/realms/h/.well-known/openid-configuration",
    "NMB_OIDC_REDIRECT_URI": "https://hospital.example/nmb/oauth2callback",
    "NMB_AUTH_COOKIE_SECRET": "c" * 32,
}


def configure(tmp_path: Path, **settings: str) -> tuple[subprocess.CompletedProcess, Path]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NMB_")} | settings
    out = tmp_path / "run" / "secrets.toml"
    done = subprocess.run([sys.executable, str(CONFIGURE), str(out)], env=env,
                          capture_output=True, text=True, timeout=60)
    return done, out


def test_single_sign_on_settings_become_a_private_auth_section(tmp_path: Path) -> None:
    done, out = configure(tmp_path, NMB_BASE_PATH="/nmb/", **SSO)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ("nmb: path prefix /nmb/; single sign-on on "
                           f"({SSO['NMB_OIDC_METADATA_URL']})\n")
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert tomllib.loads(out.read_text()) == {"auth": {
        "client_id": "nmb-studio", "client_secret": SSO["NMB_OIDC_CLIENT_SECRET"],
        "server_metadata_url": SSO["NMB_OIDC_METADATA_URL"],
        "redirect_uri": SSO["NMB_OIDC_REDIRECT_URI"], "cookie_secret": "c" * 32}}


@pytest.mark.parametrize("prompt, sent", [("login", "login"), (" select_account  login ",
                                                                 "select_account login")])
def test_the_prompt_becomes_the_client_kwargs_of_the_auth_section(
        tmp_path: Path, prompt: str, sent: str) -> None:
    done, out = configure(tmp_path, NMB_OIDC_PROMPT=prompt, **SSO)
    assert done.returncode == 0, done.stderr
    assert done.stdout.endswith(f"single sign-on on ({SSO['NMB_OIDC_METADATA_URL']}), prompt {sent}\n")
    auth = tomllib.loads(out.read_text())["auth"]
    assert auth["client_kwargs"] == {"prompt": sent}
    assert auth["client_id"] == "nmb-studio"


def test_without_single_sign_on_an_earlier_secrets_file_is_replaced(tmp_path: Path) -> None:
    assert configure(tmp_path, **SSO)[0].returncode == 0
    done, out = configure(tmp_path)
    assert done.returncode == 0 and "single sign-on off" in done.stdout
    assert tomllib.loads(out.read_text()) == {}
    assert stat.S_IMODE(out.stat().st_mode) == 0o600


@pytest.mark.parametrize("settings, message", [
    ({"NMB_OIDC_CLIENT_ID": "x"}, "NMB_OIDC_REDIRECT_URI, NMB_AUTH_COOKIE_SECRET, "
                                  "NMB_OIDC_CLIENT_SECRET, NMB_OIDC_METADATA_URL: missing"),
    ({**SSO, "NMB_AUTH_COOKIE_SECRET": "tiny-s3cret"}, "NMB_AUTH_COOKIE_SECRET: shorter than 32"),
    ({**SSO, "NMB_OIDC_METADATA_URL": "sso.example"}, "NMB_OIDC_METADATA_URL: 'sso.example' is "
                                                      "not an http(s) URL"),
    ({**SSO, "NMB_OIDC_REDIRECT_URI": "https://h.example/nmb/"}, "must end with /oauth2callback"),
    ({**SSO, "NMB_OIDC_CLIENT_SECRET": "line\nbreak"}, "NMB_OIDC_CLIENT_SECRET: its value has "
                                                      "a control character"),
    ({"NMB_BASE_PATH": "nmb/../x"}, "NMB_BASE_PATH: 'nmb/../x' is not a path"),
    ({"NMB_BASE_PATH": "a b"}, "NMB_BASE_PATH: 'a b' is not a path"),
    ({**SSO, "NMB_OIDC_PROMPT": "Login"}, "NMB_OIDC_PROMPT: 'Login' is not an OpenID Connect "
                                          "prompt (none, login, consent, select_account;"),
    ({**SSO, "NMB_OIDC_PROMPT": "none login"}, "NMB_OIDC_PROMPT: 'none login' is not an OpenID"),
    ({**SSO, "NMB_OIDC_PROMPT": "login login"}, "NMB_OIDC_PROMPT: 'login login' is not an OpenID"),
    ({**SSO, "NMB_OIDC_PROMPT": "login\tx"}, "NMB_OIDC_PROMPT: 'login\\tx' has a control character"),
    ({"NMB_OIDC_PROMPT": "login"}, "NMB_OIDC_PROMPT: 'login' is set but single sign-on is off"),
])
def test_a_mistake_is_one_line_naming_the_variable_and_writes_nothing(
        tmp_path: Path, settings: dict[str, str], message: str) -> None:
    done, out = configure(tmp_path, **settings)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and message in done.stderr, done.stderr
    assert not out.exists()
    for secret in ("line\nbreak", "tiny-s3cret"):
        assert secret not in done.stderr
