"""nginx with `deploy/nginx.conf` finds the app again after its container is recreated with a
new address, without a reload: the app's name is resolved through the `resolver` line (here a
DNS server of the test, `tests/dns.py`, in place of compose's), and looked up again once the
answer is older than the line's `valid=` time, although the DNS answer's own TTL is an hour.
The app is a stand-in that answers with its address and the request's path, on 127.0.0.2 and
then on 127.0.0.3, the same port."""

import http.server
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from tests.dns import dns_server
from tests.proxy import NGINX_CONF, PREFIX, https_get, nginx_proxy
from tests.services import free_port

pytestmark = pytest.mark.nginx

PATH = f"{PREFIX}volumes/a%2Fb/x%20y?case=1&next=%2Fnmb%2F"  # passed on exactly as sent


class _Answer(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = f"{self.server.server_address[0]} {self.path}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


@contextmanager
def app_stand_in(address: str, port: int) -> Iterator[None]:
    """An HTTP server on `address`:`port` answering `<address> <path>`."""
    server = http.server.ThreadingHTTPServer((address, port), _Answer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield
    finally:
        server.shutdown()
        server.server_close()


def test_a_recreated_app_is_found_at_its_new_address_without_a_reload() -> None:
    [valid] = map(int, re.findall(r"^\s*resolver \S+ valid=(\d+)s ", NGINX_CONF.read_text(), re.M))
    port = free_port()
    with dns_server({"app": "127.0.0.2"}) as zone, \
            nginx_proxy(f"http://app:{port}", resolver=f"127.0.0.1:{zone.port}") as proxy:
        url = proxy.url + PATH
        with app_stand_in("127.0.0.2", port):
            assert https_get(proxy, url)[::2] == (200, f"127.0.0.2 {PATH}".encode())
        asked = zone.queries.count("app")
        assert asked >= 1

        zone.answers["app"] = "127.0.0.3"  # the app container recreated: the same name, a new address
        with app_stand_in("127.0.0.3", port):
            deadline, seen = time.monotonic() + valid + 60, []
            while (answer := https_get(proxy, url)[::2])[0] != 200:
                seen.append(answer[0])
                assert time.monotonic() < deadline, f"still {answer[0]} {valid + 60} s after the change"
                time.sleep(0.5)
            assert answer == (200, f"127.0.0.3 {PATH}".encode())
        assert set(seen) <= {502}  # until nginx's answer about 127.0.0.2 was older than valid=
        assert zone.queries.count("app") > asked  # asked again, not kept for the answer's TTL
