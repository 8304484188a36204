"""The server hands the app the TCP peer's address, never one a client wrote; a mistyped
NMB_TRUSTED_PROXIES stops the server with one line."""

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.services import free_port
from ui.server.peer_address import PeerAddress

ROOT = Path(__file__).resolve().parents[3]


def _seen(scope: dict) -> list[tuple[bytes, bytes]]:
    got: list[dict] = []

    async def app(scope: dict, receive, send) -> None:
        got.append(scope)

    asyncio.run(PeerAddress(app)(scope, None, None))
    return got[0]["headers"]


def test_the_peer_header_is_the_servers_own() -> None:
    forged = [(b"host", b"x"), (b"x-nmb-peer", b"198.51.100.1"), (b"X-NMB-Peer", b"1.1.1.1"),
              (b"x-forwarded-for", b"203.0.113.7")]
    for kind in ("http", "websocket"):
        assert _seen({"type": kind, "headers": forged, "client": ("127.0.0.1", 5123)}) == [
            (b"host", b"x"), (b"x-forwarded-for", b"203.0.113.7"), (b"x-nmb-peer", b"127.0.0.1")]
    # No peer (a Unix socket): no address, and still none a client wrote.
    assert _seen({"type": "http", "headers": forged, "client": None}) == [
        (b"host", b"x"), (b"x-forwarded-for", b"203.0.113.7")]
    got: list[dict] = []

    async def app(scope: dict, receive, send) -> None:
        got.append(scope)

    asyncio.run(PeerAddress(app)({"type": "lifespan"}, None, None))  # has no headers
    assert got == [{"type": "lifespan"}]


@pytest.mark.slow
def test_a_mistyped_trusted_proxies_setting_stops_the_server(tmp_path: Path) -> None:
    env = {**os.environ, "NMB_HOME": str(tmp_path), "NMB_TRUSTED_PROXIES": "10.0.0.5, proxy"}
    out = subprocess.run(
        [sys.executable, "-m", "streamlit", "run", "serve.py", "--server.address", "127.0.0.1",
         "--server.port", str(free_port()), "--server.headless", "true",
         "--browser.gatherUsageStats", "false"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 2
    assert "nmb: NMB_TRUSTED_PROXIES: 'proxy' is not an IP address or network" in out.stderr
    assert "Traceback" not in out.stderr
