"""deploy/compose.yaml read as data: the services, volumes and settings docs/deploy.md promises."""

import re
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
DOC = (ROOT / "docs" / "deploy.md").read_text()


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text())


def test_the_app_postgresql_and_a_tls_proxy_with_their_volumes(compose: dict) -> None:
    services = compose["services"]
    assert set(services) == {"app", "db", "proxy"}
    assert services["app"]["build"] == {"context": "..", "dockerfile": "deploy/Containerfile"}
    assert (DEPLOY / "Containerfile").is_file()
    assert "images:/var/lib/nmb" in services["app"]["volumes"]
    assert services["app"]["environment"]["NMB_HOME"] == "/var/lib/nmb"
    assert "db-data:/var/lib/postgresql/data" in services["db"]["volumes"]
    assert set(compose["volumes"]) == {"db-data", "images"}
    assert "${NMB_HTTPS_PORT:-443}:443" in services["proxy"]["ports"] and "ports" not in services["app"]
    assert "./nginx.conf:/etc/nginx/nginx.conf:ro" in services["proxy"]["volumes"]
    assert compose["networks"]["backend"]["internal"] is True
    assert set(services["db"]["networks"]) == {"backend"}


def test_the_health_check_asks_the_app_under_its_prefix(compose: dict) -> None:
    app = compose["services"]["app"]
    prefix = app["environment"]["NMB_BASE_PATH"]
    assert f"http://127.0.0.1:8501/{prefix}/healthz" in " ".join(app["healthcheck"]["test"])
    assert compose["services"]["proxy"]["depends_on"]["app"]["condition"] == "service_healthy"
    assert compose["services"]["app"]["depends_on"]["db"]["condition"] == "service_healthy"


def test_the_trusted_proxies_are_the_proxys_network(compose: dict) -> None:
    env = compose["services"]["app"]["environment"]
    subnet = compose["networks"]["front"]["ipam"]["config"][0]["subnet"]
    assert env["NMB_TRUSTED_PROXIES"] == subnet
    assert set(compose["services"]["proxy"]["networks"]) == {"front"}


def test_every_setting_is_in_the_docs_and_the_example(compose: dict) -> None:
    env = compose["services"]["app"]["environment"]
    example = (DEPLOY / "env.example").read_text()
    used = set(re.findall(r"\$\{(\w+)", (DEPLOY / "compose.yaml").read_text()))
    for name in set(env) | used:
        assert f"`{name}`" in DOC, name
    # podman-compose 1.0 leaves ${NAME:-} with an empty default unreplaced: none here
    assert ":-}" not in (DEPLOY / "compose.yaml").read_text()
    for name in used - {"NMB_POSTGRES_IMAGE", "NMB_NGINX_IMAGE"}:
        assert re.search(rf"^#? ?{name}=", example, re.M), name
    entry = "".join((DEPLOY / name).read_text()
                    for name in ("entrypoint.sh", "configure.py", "wait_for_database.py"))
    for name in set(re.findall(r"\bNMB_[A-Z_]+\b", entry)) - {"NMB_OIDC_", "NMB_"}:
        assert f"`{name}`" in DOC, name
