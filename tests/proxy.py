"""nginx from Debian in front of a running app, as a hospital would publish it: TLS with a
self-signed certificate, the app under `/nmb/`, on free loopback ports. The configuration is
`deploy/nginx.conf` with only its site lines replaced (ports, certificate, the app's address,
the DNS server when a test gives one, and the pid and temp paths of a process that is not the
system's; one worker process, so that what a test sees does not depend on which worker took
its connection, each having its own DNS cache), so the tests exercise the file the deployment
ships.

`nginx_proxy(upstream)` composes with any app server: give it the app's URL (an app started
with `--server.baseUrlPath nmb`), get the https origin to open `/nmb/` on. Without nginx a test
skips; with `NMB_REQUIRE_SERVICES=1` (CI) it fails (`tests.services.require`).
"""

import contextlib
import os
import re
import shutil
import socket
import ssl
import subprocess
import tempfile
import time
import tomllib
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from email.message import Message
from pathlib import Path
from urllib.parse import urlsplit

from tests.services import free_port, require

ROOT = Path(__file__).resolve().parents[1]
NGINX_CONF = ROOT / "deploy" / "nginx.conf"
PREFIX = "/nmb/"  # where deploy/nginx.conf publishes the app
TEMP_PATHS = ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")


def upload_cap_mib() -> int:
    """The app's upload cap in MiB (`server.maxUploadSize` in .streamlit/config.toml)."""
    return tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())["server"]["maxUploadSize"]


def nginx_body_limit_mib() -> int:
    """deploy/nginx.conf's `client_max_body_size`, in MiB (written as `<n>m`)."""
    [limit] = re.findall(r"^\s*client_max_body_size (\d+)m;$", NGINX_CONF.read_text(), re.M)
    return int(limit)


def nginx_binary() -> str | None:
    return shutil.which("nginx") or next(
        (p for p in ("/usr/sbin/nginx", "/usr/local/sbin/nginx") if os.access(p, os.X_OK)), None)


def require_nginx() -> str:
    """The nginx executable; skips (or, in CI, fails) when it is not installed."""
    found = nginx_binary()
    require(found is not None, "nginx not installed (apt-get install nginx)")
    return found


def self_signed_certificate(directory: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and localhost (subjectAltName), valid two days, and its key."""
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
         "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True)
    return cert, key


def _replace_once(text: str, old: str, new: str) -> str:
    if text.count(old) != 1:
        raise AssertionError(f"deploy/nginx.conf: expected the line {old!r} exactly once")
    return text.replace(old, new)


def derived_config(*, upstream: str, port: int, http_port: int, cert: Path, key: Path,
                directory: Path, resolver: str | None = None) -> str:
    """deploy/nginx.conf with its site lines replaced: `upstream` is the app's host:port (an
    address needs no DNS), `resolver` the address[:port] of the DNS server that resolves a
    name there (the shipped one, with its `valid=` time, if not given)."""
    text = NGINX_CONF.read_text()
    if resolver is not None:
        text = _replace_once(text, "resolver 127.0.0.11 ", f"resolver {resolver} ")
    for old, new in (
            ("set $nmb_app app:8501;", f"set $nmb_app {upstream};"),
            ("listen 443 ssl;", f"listen 127.0.0.1:{port} ssl;"),
            ("listen 80;", f"listen 127.0.0.1:{http_port};"),
            ("ssl_certificate /etc/nginx/tls/fullchain.pem;", f"ssl_certificate {cert};"),
            ("ssl_certificate_key /etc/nginx/tls/privkey.pem;", f"ssl_certificate_key {key};"),
            ("worker_processes auto;", "worker_processes 1;"),
            ("pid /run/nginx.pid;", f"pid {directory / 'nginx.pid'};"),
            ("access_log /dev/stdout;", f"access_log {directory / 'access.log'};")):
        text = _replace_once(text, old, new)
    temps = "".join(f"\n    {name}_temp_path {directory / name};" for name in TEMP_PATHS)
    return _replace_once(text, "http {", "http {" + temps)


@dataclass(frozen=True)
class Proxy:
    url: str  # the https origin, e.g. https://127.0.0.1:40123 (the app is at url + PREFIX)
    http_url: str  # the plain-http port, which only redirects
    cafile: Path  # the self-signed certificate, to verify the proxy with

    def ssl_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.cafile))


def _wait_for_port(port: int, proc: subprocess.Popen, log: Path) -> None:
    for _ in range(150):
        if proc.poll() is not None:
            raise RuntimeError(f"nginx stopped: {log.read_text()[-2000:]}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
            return
        time.sleep(0.1)
    proc.kill()
    raise RuntimeError(f"nginx did not listen on {port}: {log.read_text()[-2000:]}")


@contextlib.contextmanager
def nginx_proxy(upstream_url: str, port: int | None = None,
                resolver: str | None = None) -> Iterator[Proxy]:
    """nginx (`deploy/nginx.conf`) in the foreground on loopback in front of the app at
    `upstream_url` (e.g. http://127.0.0.1:8501); yields the Proxy, stops nginx after. `port`:
    the https port (a free one if not given), for an app that must know its public address
    before it starts (an OIDC redirect URI: take `free_port()`, start the app, then this).
    `resolver`: the DNS server (address:port) for an `upstream_url` that names a host."""
    nginx = require_nginx()
    directory = Path(tempfile.mkdtemp(prefix="nmb-nginx-"))
    directory.chmod(0o755)  # nginx's workers (nobody when the master is root) use the temp paths
    try:
        cert, key = self_signed_certificate(directory)
        port, http_port = port or free_port(), free_port()
        conf = directory / "nginx.conf"
        conf.write_text(derived_config(upstream=urlsplit(upstream_url).netloc, port=port,
                                    http_port=http_port, cert=cert, key=key, directory=directory,
                                    resolver=resolver))
        log = directory / "nginx.out"
        with log.open("wb") as out:
            proc = subprocess.Popen([nginx, "-e", "stderr", "-p", str(directory), "-c", str(conf),
                                     "-g", "daemon off;"], stdout=out, stderr=subprocess.STDOUT)
        try:
            _wait_for_port(port, proc, log)
            yield Proxy(url=f"https://127.0.0.1:{port}", http_url=f"http://127.0.0.1:{http_port}",
                        cafile=cert)
        finally:
            proc.terminate()
            proc.wait(timeout=20)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def https_get(proxy: Proxy, url: str, cookie: str | None = None) -> tuple[int, Message, bytes]:
    """Status, headers (any case) and body of a GET through the proxy (certificate verified,
    redirects not followed), with the login cookie if given."""
    opener = urllib.request.build_opener(
        _NoRedirect, urllib.request.HTTPSHandler(context=proxy.ssl_context()))
    headers = {"Cookie": f"nmb_login={cookie}"} if cookie else {}
    try:
        with opener.open(urllib.request.Request(url, headers=headers), timeout=30) as answer:
            return answer.status, answer.headers, answer.read()
    except urllib.error.HTTPError as refused:
        return refused.code, refused.headers, refused.read()
