"""The SSRF guard against the IANA special-purpose address registries, written from the
registries and typed here address by address - never read from the guard's own table - so deleting
a range from ``guardrail/fetch/ssrf.py`` fails a test.

Sources: IANA IPv4 Special-Purpose Address Registry (RFC 6890 and updates), IANA IPv6
Special-Purpose Address Registry, the IPv4 multicast block (RFC 5771) and the deprecated IPv6
site-local block (RFC 3879). One literal per entry that is not globally reachable, as a URL literal
and as the answer of a DNS name; each must be refused (``blocked_address``) before any connection.
Entries the registries mark globally reachable (192.0.0.9, 192.0.0.10, 192.31.196.0/24,
192.52.193.0/24, 192.175.48.0/24, 2001:1::1, 2001:1::2, 2001:1::3, 2001:3::/32, 2001:4:112::/48,
2001:20::/28, 2001:30::/28, 2620:4f:8000::/48) are left out: the guard may refuse them, no
standard asks it to."""

from __future__ import annotations

import pytest

from guardrail.core.schema import Reason
from guardrail.fetch.ssrf import SsrfPolicy, UrlRefused

IPV4_REGISTRY = {
    "0.0.0.0/8 this network": ["0.1.2.3", "0.255.255.255"],
    "0.0.0.0/32 this host on this network": ["0.0.0.0"],
    "10.0.0.0/8 private-use": ["10.0.0.1", "10.255.255.254"],
    "100.64.0.0/10 shared address space": ["100.64.0.1", "100.127.255.254"],
    "127.0.0.0/8 loopback": ["127.0.0.1", "127.255.255.254"],
    "169.254.0.0/16 link local": ["169.254.1.1", "169.254.255.254"],
    "172.16.0.0/12 private-use": ["172.16.0.1", "172.31.255.254"],
    "192.0.0.0/24 IETF protocol assignments": ["192.0.0.100", "192.0.0.255"],
    "192.0.0.0/29 IPv4 service continuity prefix": ["192.0.0.1"],
    "192.0.0.8/32 IPv4 dummy address": ["192.0.0.8"],
    "192.0.0.170/32 NAT64/DNS64 discovery": ["192.0.0.170"],
    "192.0.0.171/32 NAT64/DNS64 discovery": ["192.0.0.171"],
    "192.0.2.0/24 documentation (TEST-NET-1)": ["192.0.2.1"],
    "192.88.99.0/24 deprecated 6to4 relay anycast": ["192.88.99.1"],
    "192.168.0.0/16 private-use": ["192.168.0.1", "192.168.255.254"],
    "198.18.0.0/15 benchmarking": ["198.18.0.1", "198.19.255.254"],
    "198.51.100.0/24 documentation (TEST-NET-2)": ["198.51.100.1"],
    "203.0.113.0/24 documentation (TEST-NET-3)": ["203.0.113.1"],
    "224.0.0.0/4 multicast (RFC 5771)": ["224.0.0.1", "239.255.255.250"],
    "240.0.0.0/4 reserved": ["240.0.0.1", "255.255.255.254"],
    "255.255.255.255/32 limited broadcast": ["255.255.255.255"],
}

IPV6_REGISTRY = {
    "::1/128 loopback": ["::1"],
    "::/128 unspecified": ["::"],
    "::ffff:0:0/96 IPv4-mapped, around refused IPv4": ["::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:192.0.0.8"],
    "64:ff9b::/96 IPv4-IPv6 translation, around refused IPv4": ["64:ff9b::7f00:1", "64:ff9b::a9fe:101"],
    "64:ff9b:1::/48 local-use IPv4/IPv6 translation": ["64:ff9b:1::1", "64:ff9b:1:ffff::808:808"],
    "100::/64 discard-only": ["100::1"],
    "100:0:0:1::/64 dummy IPv6 prefix": ["100:0:0:1::1"],
    "2001::/23 IETF protocol assignments": ["2001:100::1", "2001:1ff:ffff::1", "2001:5::1"],
    "2001::/32 TEREDO": ["2001::1"],
    "2001:2::/48 benchmarking": ["2001:2::1"],
    "2001:10::/28 deprecated (previously ORCHID)": ["2001:10::1"],
    "2001:db8::/32 documentation": ["2001:db8::1", "2001:db8:ffff::1"],
    "2002::/16 6to4, around refused IPv4": ["2002:7f00:1::1", "2002:a00:1::1", "2002:c000:8::1", "2002:c0a8:101::"],
    "3fff::/20 documentation": ["3fff::1", "3fff:fff:ffff::1"],
    "5f00::/16 segment routing (SRv6) SIDs": ["5f00::1"],
    "fc00::/7 unique-local": ["fc00::1", "fd12:3456:789a::1"],
    "fe80::/10 link-local unicast": ["fe80::1", "febf::1"],
    "fec0::/10 deprecated site-local (RFC 3879)": ["fec0::1"],
    "ff00::/8 multicast": ["ff02::1", "ff0e::1"],
    "::/96 deprecated IPv4-compatible, around refused IPv4": ["::127.0.0.1", "::a00:1"],
}

CASES = [
    (entry, address)
    for registry in (IPV4_REGISTRY, IPV6_REGISTRY)
    for entry, found in registry.items()
    for address in found
]


def url_of(address: str) -> str:
    return f"http://[{address}]/" if ":" in address else f"http://{address}/"


async def _no_dns(host: str, port: int) -> list[str]:
    raise AssertionError(f"a literal address must not be resolved (asked for {host})")


@pytest.mark.parametrize(("entry", "address"), CASES, ids=[f"{e.split()[0]}-{a}" for e, a in CASES])
async def test_a_special_purpose_literal_is_refused(entry: str, address: str) -> None:
    with pytest.raises(UrlRefused) as info:
        await SsrfPolicy(resolver=_no_dns).vet(url_of(address))
    assert info.value.reason == Reason.blocked_address.value, entry


@pytest.mark.parametrize(("entry", "address"), CASES, ids=[f"{e.split()[0]}-{a}" for e, a in CASES])
async def test_a_name_resolving_to_a_special_purpose_address_is_refused(entry: str, address: str) -> None:
    async def resolver(host: str, port: int) -> list[str]:
        return ["93.184.216.34", address]  # one public answer does not excuse a special one

    with pytest.raises(UrlRefused) as info:
        await SsrfPolicy(resolver=resolver).vet("https://innocent-looking.example/page")
    assert info.value.reason == Reason.blocked_address.value, entry


@pytest.mark.parametrize("address", ["93.184.216.34", "8.8.8.8", "2606:4700:4700::1111", "2a00:1450:4001::1"])
async def test_public_addresses_next_to_them_pass(address: str) -> None:
    """The guard is not refusing everything: ordinary global unicast addresses are fetched."""
    assert (await SsrfPolicy(resolver=_no_dns).vet(url_of(address))).addresses == (address,)
