"""The address a request comes from, for the per-client login throttle (db.users).

The client is the connecting peer, unless the peer is one of the configured reverse proxies
(`NMB_TRUSTED_PROXIES`: comma-separated addresses or CIDR networks, empty by default). Only
then is `X-Forwarded-For` believed, read from the right: each proxy appends the address it
received the request from, so the right-most address that is not itself a trusted proxy is
the client; everything to its left was written by the client and may be forged (MDN,
"X-Forwarded-For", "Selecting an IP address"). A hop that is not an address ends the walk at
the last trusted hop. Without a known peer the client is unknown (None): only the per-name
limit applies then.
"""

import ipaddress
import os
from collections.abc import Iterable

from errors import UserError

TRUSTED_PROXIES = "NMB_TRUSTED_PROXIES"
MAX_HOPS = 16  # X-Forwarded-For entries read from the right; a longer chain ends there
_MAX_ENTRY = 64  # characters of one entry: longer is not an address

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def parse_trusted_proxies(value: str) -> tuple[Network, ...]:
    """The networks of a `NMB_TRUSTED_PROXIES` value ("10.0.0.5, 10.1.0.0/16, ::1");
    UserError naming the first entry that is neither an address nor a network."""
    networks = []
    for entry in (e.strip() for e in value.split(",")):
        if not entry:
            continue
        try:
            networks.append(ipaddress.ip_network(entry, strict=False))
        except ValueError:
            raise UserError(f"{TRUSTED_PROXIES}: {entry[:_MAX_ENTRY]!r} is not an IP address "
                            "or network (e.g. 10.0.0.5 or 10.0.0.0/24)") from None
    return tuple(networks)


def trusted_proxies() -> tuple[Network, ...]:
    """The reverse proxies configured in the environment (none by default)."""
    return parse_trusted_proxies(os.environ.get(TRUSTED_PROXIES, ""))


def _is_port(text: str) -> bool:
    """ASCII digits only (`str.isdigit` takes "²" too)."""
    return text.isascii() and text.isdigit()


def _address(text: str) -> Address | None:
    """An address as a peer or a proxy writes it: bare, `[v6]:port`, or `v4:port`; None for
    anything else. IPv4-mapped IPv6 (`::ffff:192.0.2.1`) is the IPv4 address."""
    text = text.strip()
    if not text or len(text) > _MAX_ENTRY:
        return None
    if text.startswith("["):
        text, bracket, port = text[1:].partition("]")
        if not bracket or (port and not (port[:1] == ":" and _is_port(port[1:]))):
            return None
    elif text.count(":") == 1:  # IPv4 with a port (IPv6 has at least two colons)
        text, _, port = text.partition(":")
        if not _is_port(port):
            return None
    try:
        ip = ipaddress.ip_address(text)
    except ValueError:
        return None
    mapped = getattr(ip, "ipv4_mapped", None)
    return mapped if mapped is not None else ip


def _trusted(ip: Address, proxies: tuple[Network, ...]) -> bool:
    return any(ip.version == net.version and ip in net for net in proxies)


def client_address(peer: str | None, forwarded_for: Iterable[str],
                   proxies: tuple[Network, ...]) -> str | None:
    """The client address of a request from `peer` (the TCP peer) carrying these
    `X-Forwarded-For` header values (in the order received), given the trusted proxies."""
    ip = _address(peer) if peer else None
    if ip is None:
        return None
    if not _trusted(ip, proxies):
        return str(ip)  # whatever it claims about others
    header = ",".join(forwarded_for)
    window = MAX_HOPS * (_MAX_ENTRY + 2)  # enough for MAX_HOPS entries: read no more
    hops = header[-window:].split(",")
    if len(header) > window:
        hops = hops[1:]  # cut in the middle
    for hop in reversed(hops[-MAX_HOPS:]):
        hop_ip = _address(hop)
        if hop_ip is None:
            break  # garbage: nothing to its left can be vouched for either
        ip = hop_ip
        if not _trusted(ip, proxies):
            break
    return str(ip)
