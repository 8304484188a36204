"""The login throttle's client address: X-Forwarded-For is believed only from trusted proxies."""

import pytest

from db.client_address import MAX_HOPS, client_address, parse_trusted_proxies, trusted_proxies
from errors import UserError

NONE = parse_trusted_proxies("")
PROXY = parse_trusted_proxies("10.0.0.5")
CHAIN = parse_trusted_proxies("10.0.0.5, 10.1.0.0/16, 2001:db8:ff::/48")


def test_without_trusted_proxies_the_peer_is_the_client_whatever_it_claims() -> None:
    assert client_address("127.0.0.1", ["203.0.113.7"], NONE) == "127.0.0.1"  # spoof from here
    assert client_address("198.51.100.4", ["203.0.113.7, 10.0.0.5"], NONE) == "198.51.100.4"
    assert client_address("::1", [], NONE) == "::1"
    assert client_address("10.0.0.6", ["203.0.113.7"], PROXY) == "10.0.0.6"  # not the proxy


def test_a_trusted_proxy_names_the_client_right_most_first() -> None:
    assert client_address("10.0.0.5", ["203.0.113.7"], PROXY) == "203.0.113.7"
    # What the client wrote is to the left of what the proxy appended.
    assert client_address("10.0.0.5", ["1.2.3.4, 203.0.113.7"], PROXY) == "203.0.113.7"
    assert client_address("10.0.0.5", ["1.2.3.4", "203.0.113.7"], PROXY) == "203.0.113.7"
    # A chain of trusted proxies: the first address from the right that is not one of them.
    assert client_address("10.0.0.5", ["6.6.6.6, 203.0.113.7, 10.1.2.3"], CHAIN) == "203.0.113.7"
    assert client_address("10.0.0.5", ["10.1.0.9, 10.1.2.3"], CHAIN) == "10.1.0.9"  # all proxies
    assert client_address("10.0.0.5", [], PROXY) == "10.0.0.5"  # no header: the proxy itself
    assert client_address("10.0.0.5", [" , "], PROXY) == "10.0.0.5"


def test_ipv6_peers_proxies_and_clients() -> None:
    assert client_address("2001:db8:ff::1", ["2001:DB8::7"], CHAIN) == "2001:db8::7"
    assert client_address("2001:db8:ff::1", ["[2001:db8::7]:51234"], CHAIN) == "2001:db8::7"
    assert client_address("10.0.0.5", ["203.0.113.7:443"], CHAIN) == "203.0.113.7"
    assert client_address("::ffff:10.0.0.5", ["::ffff:203.0.113.7"], PROXY) == "203.0.113.7"
    assert client_address("2001:db8::1", ["203.0.113.7"], CHAIN) == "2001:db8::1"  # untrusted
    assert client_address("::ffff:10.0.0.5", ["203.0.113.7"], NONE) == "10.0.0.5"


@pytest.mark.parametrize("header", [
    "not-an-address", "203.0.113.7, garbage", "203.0.113.7, 999.1.1.1", "unknown",
    "203.0.113.7, " + "9" * 5000, "\x00", "203.0.113.7,,", "2001:db8::zz", "[203.0.113.7",
    "[::1]x", "203.0.113.7:http", "203.0.113.7:\u00b2", "[2001:db8::7]:\u00b2",
])
def test_a_hop_that_is_not_an_address_ends_at_the_last_trusted_hop(header: str) -> None:
    """Nothing left of a hop the proxy did not write properly can be vouched for: the count
    goes to the proxy, never to an address the client picked."""
    assert client_address("10.0.0.5", [header], PROXY) == "10.0.0.5"
    assert client_address("10.0.0.5", ["203.0.113.9, 10.1.0.1", header], CHAIN) == "10.0.0.5"


def test_long_chains_are_read_from_the_right_only() -> None:
    spoofed = ", ".join(f"198.51.100.{i % 250}" for i in range(100_000))
    assert client_address("10.0.0.5", [spoofed + ", 203.0.113.7"], PROXY) == "203.0.113.7"
    proxies = ", ".join(["10.1.0.1"] * (MAX_HOPS + 5))
    assert client_address("10.0.0.5", ["203.0.113.7, " + proxies], CHAIN) == "10.1.0.1"


def test_an_unknown_peer_is_an_unknown_client() -> None:
    assert client_address(None, ["203.0.113.7"], PROXY) is None
    assert client_address("", ["203.0.113.7"], PROXY) is None
    assert client_address("testclient", ["203.0.113.7"], PROXY) is None  # not an address


def test_the_setting_is_read_from_the_environment_and_checked(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NMB_TRUSTED_PROXIES", raising=False)
    assert trusted_proxies() == ()
    monkeypatch.setenv("NMB_TRUSTED_PROXIES", " 10.0.0.5 ,192.168.0.0/24,, ::1 ")
    assert [str(n) for n in trusted_proxies()] == ["10.0.0.5/32", "192.168.0.0/24", "::1/128"]
    for bad in ("proxy.example.org", "10.0.0.0/33", "10.0.0.5; 10.0.0.6", "*"):
        with pytest.raises(UserError, match="NMB_TRUSTED_PROXIES: .* is not an IP address"):
            parse_trusted_proxies(bad)
