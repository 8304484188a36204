"""A DNS server for tests (RFC 1035, UDP on loopback): answers A queries for the names in
`answers` with the IPv4 address given there, which a test may change while it runs, and
anything else with NXDOMAIN. Used as nginx's `resolver` (tests/deploy/test_nginx_resolve.py)."""

import socket
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

TTL = 3600  # seconds; longer than any test, so only nginx's own `valid=` can end an answer


@dataclass
class Zone:
    answers: dict[str, str]  # name (lower case, no trailing dot) -> IPv4 address
    port: int = 0  # the UDP port on 127.0.0.1, once serving
    queries: list[str] = field(default_factory=list)  # the names asked, in order


def _reply(query: bytes, zone: Zone) -> bytes:
    """The answer to one query: its header and question echoed, then one A record or none."""
    (ident,) = struct.unpack("!H", query[:2])
    labels, at = [], 12
    while query[at]:
        labels.append(query[at + 1:at + 1 + query[at]].decode("ascii").lower())
        at += 1 + query[at]
    qtype, _ = struct.unpack("!HH", query[at + 1:at + 5])
    question, name = query[12:at + 5], ".".join(labels)
    zone.queries.append(name)
    address = zone.answers.get(name) if qtype == 1 else None
    flags = 0x8180 if address else 0x8183  # response, recursion desired and available; NXDOMAIN
    header = struct.pack("!HHHHHH", ident, flags, 1, 1 if address else 0, 0, 0)
    if not address:
        return header + question
    record = struct.pack("!HHHIH", 0xC00C, 1, 1, TTL, 4) + socket.inet_aton(address)
    return header + question + record


@contextmanager
def dns_server(answers: dict[str, str]) -> Iterator[Zone]:
    """Serve `answers` on 127.0.0.1 (a free UDP port) until the block ends."""
    zone = Zone(dict(answers))
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    sock.settimeout(0.2)
    zone.port = sock.getsockname()[1]
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                query, peer = sock.recvfrom(512)
                sock.sendto(_reply(query, zone), peer)
            except (TimeoutError, IndexError, struct.error, UnicodeDecodeError):
                continue  # no query yet, or not one this server understands

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield zone
    finally:
        stop.set()
        thread.join()
        sock.close()
