"""deploy/nginx.conf keeps in step with the app: its body limit is the app's upload cap plus
1 MiB of multipart envelope, and the lines tests/proxy.py replaces are there once each (the
proxy itself is tested in tests/browser/deploy/test_proxy.py)."""

from pathlib import Path

from tests.proxy import derived_config, nginx_body_limit_mib, upload_cap_mib


def _directives(conf: str) -> str:
    return "\n".join(line for line in conf.splitlines() if not line.lstrip().startswith("#"))


def test_the_body_limit_is_the_upload_cap_plus_the_multipart_envelope() -> None:
    assert upload_cap_mib() == 200
    assert nginx_body_limit_mib() == upload_cap_mib() + 1


def test_the_test_configuration_differs_from_the_shipped_one_in_site_lines_only(
        tmp_path: Path) -> None:
    conf = derived_config(upstream="127.0.0.1:8501", port=8443, http_port=8080,
                          cert=tmp_path / "c.pem", key=tmp_path / "k.pem", directory=tmp_path)
    for kept in ("proxy_set_header Host $http_host;",
                 "proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;",
                 "proxy_set_header X-Forwarded-Proto $scheme;",
                 "proxy_set_header Upgrade $http_upgrade;",
                 "proxy_set_header Connection $connection_upgrade;",
                 "location /nmb/ {", "client_max_body_size 201m;", "proxy_pass http://$nmb_app;",
                 "resolver 127.0.0.11 valid=10s ipv6=off;", "proxy_cookie_flags ~ secure;"):
        assert kept in conf, kept
    for replaced in ("app:8501", "/etc/nginx/tls", "/run/nginx.pid", "listen 443", "listen 80"):
        assert replaced not in _directives(conf), replaced


def test_a_test_may_name_its_dns_server_and_keeps_the_valid_time(tmp_path: Path) -> None:
    conf = derived_config(upstream="app:8501", port=8443, http_port=8080, cert=tmp_path / "c.pem",
                          key=tmp_path / "k.pem", directory=tmp_path, resolver="127.0.0.1:5353")
    assert "resolver 127.0.0.1:5353 valid=10s ipv6=off;" in conf
    assert "127.0.0.11" not in _directives(conf)
    assert "set $nmb_app app:8501;" in conf
