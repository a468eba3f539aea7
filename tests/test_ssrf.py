"""SSRF policy: every address family, every IPv4 spelling, names resolving to private space,
redirects into private space, pinning to the vetted address, and the opt-in."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler

import pytest

from guardrail.core.interpret import interpret
from guardrail.core.schema import Label, Reason
from guardrail.fetch.direct import DirectFetcher
from guardrail.fetch.ssrf import (
    SPECIAL_RANGES,
    IPAddress,
    SpecialRange,
    SsrfPolicy,
    UrlRefused,
    blocked_category,
    embedded_ipv4,
    is_metadata,
    parse_ipv4_literal,
)
from guardrail.settings import Settings
from guardrail.testing import LoopbackSite, Route

BLOCKED_LITERALS = [
    # IPv4 loopback in every spelling inet_aton and browsers accept
    "http://127.0.0.1/",
    "http://127.1/",
    "http://2130706433/",
    "http://0x7f000001/",
    "http://0x7f.1/",
    "http://0x7f.0.0.1/",
    "http://017700000001/",
    "http://0177.0.0.1/",
    "http://0177.1/",
    "http://127.000.000.001/",
    "http://127.0.0.1./",
    # private, link-local, CGNAT, unspecified, multicast, reserved, broadcast, documentation
    "http://10.0.0.1/",
    "http://172.16.5.4/",
    "http://172.31.255.255/",
    "http://192.168.1.1/",
    "http://169.254.1.1/",
    "http://100.64.0.1/",
    "http://100.127.255.254/",
    "http://0.0.0.0/",
    "http://0/",
    "http://224.0.0.1/",
    "http://239.255.255.250/",
    "http://240.0.0.1/",
    "http://255.255.255.255/",
    "http://192.0.2.10/",
    "http://198.18.0.1/",
    # cloud metadata
    "http://169.254.169.254/latest/meta-data/",
    "http://2852039166/latest/meta-data/",  # 169.254.169.254 as one number
    "http://0xa9.0xfe.0xa9.0xfe/",
    "http://169.254.170.2/v2/credentials",
    "http://100.100.100.200/latest/meta-data/",
    "http://[fd00:ec2::254]/latest/meta-data/",
    # IPv6 loopback, unspecified, ULA, link-local, site-local, multicast, documentation
    "http://[::1]/",
    "http://[0:0:0:0:0:0:0:1]/",
    "http://[::]/",
    "http://[fc00::1]/",
    "http://[fd12:3456:789a::1]/",
    "http://[fe80::1]/",
    "http://[fec0::1]/",
    "http://[ff02::1]/",
    "http://[2001:db8::1]/",
    # IPv6 forms that embed a private IPv4 address
    "http://[::ffff:127.0.0.1]/",
    "http://[::ffff:7f00:1]/",
    "http://[::ffff:10.0.0.1]/",
    "http://[::ffff:169.254.169.254]/",
    "http://[::127.0.0.1]/",
    "http://[64:ff9b::127.0.0.1]/",
    "http://[64:ff9b::a9fe:a9fe]/",
    "http://[2002:7f00:1::]/",
    "http://[2002:c0a8:101::1]/",
    # names that are loopback or metadata by definition
    "http://localhost/",
    "http://LOCALHOST./",
    "http://api.localhost:8080/",
    "http://metadata.google.internal/computeMetadata/v1/",
    "http://metadata/computeMetadata/v1/",
]

INVALID_URLS = [
    "file:///etc/passwd",
    "ftp://example.org/file.txt",
    "gopher://127.0.0.1:6379/_INFO",
    "javascript:alert(1)",
    "data:text/html,<p>hi</p>",
    "mailto:someone@example.org",
    "example.org/no-scheme",
    "http://",
    "http:///path-only",
    "http://exa mple.org/",
    "http://1.2.3.256/",
    "http://256.1/",
    "http://example.123/",
    "http://0x1g.1/",
    "http://[1::2::3]/",
    "",
]

PUBLIC_LITERALS = [
    "http://93.184.216.34/",
    "http://1.1.1.1/",
    "http://8.8.8.8:8080/path?q=1",
    "http://134744072/",  # 8.8.8.8 as one number
    "http://[2606:4700:4700::1111]/",
    "http://[::ffff:8.8.8.8]/",
    "http://[2002:808:808::1]/",  # 6to4 around a public address
    "http://[64:ff9b::808:808]/",  # NAT64 around a public address
]


async def _no_dns(host: str, port: int) -> list[str]:
    raise AssertionError(f"literal addresses must not be resolved (asked for {host})")


@pytest.mark.parametrize("url", BLOCKED_LITERALS)
async def test_blocked_addresses_are_refused_before_any_connection(url: str) -> None:
    policy = SsrfPolicy(resolver=_no_dns)
    with pytest.raises(UrlRefused) as info:
        await policy.vet(url)
    assert info.value.reason == Reason.blocked_address.value


@pytest.mark.parametrize("url", INVALID_URLS)
async def test_malformed_urls_and_other_schemes_are_invalid(url: str) -> None:
    with pytest.raises(UrlRefused) as info:
        await SsrfPolicy(resolver=_no_dns).vet(url)
    assert info.value.reason == Reason.invalid_url.value


@pytest.mark.parametrize("url", PUBLIC_LITERALS)
async def test_public_literals_pass_without_dns(url: str) -> None:
    target = await SsrfPolicy(resolver=_no_dns).vet(url)
    assert len(target.addresses) == 1


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("127.0.0.1", "127.0.0.1"),
        ("127.1", "127.0.0.1"),
        ("2130706433", "127.0.0.1"),
        ("0x7f.1", "127.0.0.1"),
        ("017700000001", "127.0.0.1"),
        ("0x7F000001", "127.0.0.1"),
        ("10.1", "10.0.0.1"),
        ("192.168.257", "192.168.1.1"),
        ("0", "0.0.0.0"),
        ("0x", "0.0.0.0"),
        ("1.2.3.4.", "1.2.3.4"),
        ("example.org", None),
        ("1.example", None),
        ("xn--bcher-kva.example", None),
    ],
)
def test_ipv4_spellings_parse_like_inet_aton(host: str, expected: str | None) -> None:
    parsed = parse_ipv4_literal(host)
    assert (str(parsed) if parsed else None) == expected


def test_blocked_category_names_the_range() -> None:
    assert blocked_category(ipaddress.ip_address("127.0.0.1")) == "loopback"
    assert blocked_category(ipaddress.ip_address("100.64.0.1")) == "shared (CGNAT)"
    assert (blocked_category(ipaddress.ip_address("169.254.169.254")) or "").startswith("cloud metadata")
    assert "loopback" in (blocked_category(ipaddress.ip_address("::ffff:127.0.0.1")) or "")
    assert blocked_category(ipaddress.ip_address("8.8.8.8")) is None
    assert blocked_category(ipaddress.ip_address("2606:4700:4700::1111")) is None


async def test_a_name_resolving_to_loopback_is_blocked() -> None:
    """A name that is not loopback by itself, answered with 127.0.0.1 by the resolver: refused by
    address, after the one lookup."""
    asked: list[str] = []

    async def loopback(host: str, port: int) -> list[str]:
        asked.append(host)
        return ["127.0.0.1"]

    with pytest.raises(UrlRefused) as info:
        await SsrfPolicy(resolver=loopback).vet("http://loopback-alias.example:8080/")
    assert info.value.reason == Reason.blocked_address.value
    assert "resolves to 127.0.0.1, which is loopback" in info.value.detail
    assert asked == ["loopback-alias.example"]


@pytest.mark.parametrize("url", ["http://localhost:8080/", "http://LocalHost./", "http://db.localhost/"])
async def test_localhost_names_are_refused_by_name_without_a_lookup(url: str) -> None:
    with pytest.raises(UrlRefused) as info:
        await SsrfPolicy(resolver=_no_dns).vet(url)
    assert info.value.reason == Reason.blocked_address.value and "is loopback" in info.value.detail


@pytest.mark.parametrize("answer", [["10.1.2.3"], ["127.0.0.1"], ["::1"], ["fe80::1%eth0"], ["8.8.8.8", "192.168.0.5"]])
async def test_a_name_resolving_to_private_space_is_blocked(answer: list[str]) -> None:
    """Any private answer among the resolved addresses refuses the host."""

    async def resolver(host: str, port: int) -> list[str]:
        return answer

    with pytest.raises(UrlRefused) as info:
        await SsrfPolicy(resolver=resolver).vet("https://innocent-looking.example/page")
    assert info.value.reason == Reason.blocked_address.value


async def test_metadata_stays_blocked_even_when_private_hosts_are_allowed() -> None:
    policy = SsrfPolicy(allow_private=True)
    for url in ("http://169.254.169.254/", "http://[::ffff:169.254.169.254]/", "http://metadata.google.internal/"):
        with pytest.raises(UrlRefused):
            await policy.vet(url)
    assert (await policy.vet("http://127.0.0.1:9/")).addresses == ("127.0.0.1",)
    assert (await policy.vet("http://10.0.0.1/")).addresses == ("10.0.0.1",)


async def test_allowed_hosts_open_only_the_named_host_and_port() -> None:
    policy = SsrfPolicy(allowed_hosts=["127.0.0.1:8080", "intranet.test"])
    assert (await policy.vet("http://127.0.0.1:8080/x")).addresses == ("127.0.0.1",)
    assert (await policy.vet("http://2130706433:8080/x")).addresses == ("127.0.0.1",)
    with pytest.raises(UrlRefused):
        await policy.vet("http://127.0.0.1:8081/x")
    with pytest.raises(UrlRefused):
        await policy.vet("http://127.0.0.2:8080/x")


# -- through the fetcher ---------------------------------------------------------------


async def test_default_fetcher_refuses_loopback_fixture_server(pages: LoopbackSite) -> None:
    hits_before = pages.hits.get("/boiling", 0)
    result = await DirectFetcher().fetch_all([pages.url("/boiling"), f"http://localhost:{pages.port}/boiling"])
    for page in result.values():
        assert page.reason == Reason.blocked_address.value
        assessment = interpret(page)
        assert (assessment.label, assessment.reason) == (Label.unreachable, Reason.blocked_address.value)
    assert pages.hits.get("/boiling", 0) == hits_before  # nothing was sent


async def test_fetcher_refuses_every_literal_spelling_without_connecting() -> None:
    result = await DirectFetcher().fetch_all(BLOCKED_LITERALS + INVALID_URLS[:6])
    for url in BLOCKED_LITERALS:
        assert result[url].reason == Reason.blocked_address.value, url
    for url in INVALID_URLS[:6]:
        assert result[url].reason == Reason.invalid_url.value, url


@pytest.fixture(scope="module")
def redirecting() -> Iterator[LoopbackSite]:
    """An origin that redirects into private space (metadata, loopback via a name, another port)."""

    def to_localhost(handler: BaseHTTPRequestHandler) -> None:
        port = handler.server.server_address[1]
        _redirect(handler, f"http://localhost:{port}/content")

    def to_other_port(handler: BaseHTTPRequestHandler) -> None:
        _redirect(handler, "http://127.0.0.1:9/content")

    server = LoopbackSite(
        {
            "/content": Route(body="<html><body><p>Private content that must not be fetched.</p></body></html>"),
            "/to-metadata": Route(status=302, headers={"Location": "http://169.254.169.254/latest/meta-data/"}),
            "/to-decimal-loopback": Route(status=301, headers={"Location": "http://2130706433/admin"}),
            "/to-file": Route(status=302, headers={"Location": "file:///etc/passwd"}),
            "/to-localhost": Route(handler=to_localhost),
            "/to-other-port": Route(handler=to_other_port),
            "/to-content": Route(status=302, headers={"Location": "/content"}),
        }
    ).start()
    yield server
    server.stop()


def _redirect(handler: BaseHTTPRequestHandler, location: str) -> None:
    handler.send_response(302)
    handler.send_header("Location", location)
    handler.send_header("Content-Length", "0")
    handler.end_headers()


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("/to-metadata", Reason.blocked_address),
        ("/to-decimal-loopback", Reason.blocked_address),
        ("/to-localhost", Reason.blocked_address),
        ("/to-other-port", Reason.blocked_address),
        ("/to-file", Reason.invalid_url),
    ],
)
async def test_redirect_into_private_space_is_refused(redirecting: LoopbackSite, path: str, reason: Reason) -> None:
    """Only the origin (host:port) is opened; every redirect hop is checked again."""
    fetcher = DirectFetcher(allowed_hosts=[f"127.0.0.1:{redirecting.port}"])
    before = redirecting.hits.get("/content", 0)
    page = (await fetcher.fetch_all([redirecting.url(path)]))[redirecting.url(path)]
    assert page.reason == reason.value
    assert page.redirects == [redirecting.url(path)]
    assert interpret(page).label == Label.unreachable
    assert redirecting.hits.get("/content", 0) == before


async def test_redirect_within_the_allowed_origin_is_followed(redirecting: LoopbackSite) -> None:
    fetcher = DirectFetcher(allowed_hosts=[f"127.0.0.1:{redirecting.port}"])
    page = (await fetcher.fetch_all([redirecting.url("/to-content")]))[redirecting.url("/to-content")]
    assert page.reason is None
    assert "Private content" in page.text
    assert page.final_url == redirecting.url("/content")


async def test_connects_to_the_vetted_address_without_a_second_lookup(pages: LoopbackSite) -> None:
    """DNS rebinding: the resolver answers loopback once, then an unroutable address. The fetch
    succeeds only if the connection goes to the first (vetted) answer and DNS is asked once."""
    calls: list[str] = []

    async def rebinding(host: str, port: int) -> list[str]:
        calls.append(host)
        return ["127.0.0.1"] if len(calls) == 1 else ["10.255.255.1"]

    fetcher = DirectFetcher(allowed_hosts=[f"rebind.test:{pages.port}"], resolver=rebinding, timeout=3)
    url = f"http://rebind.test:{pages.port}/boiling"
    page = (await fetcher.fetch_all([url]))[url]
    assert page.reason is None, page.reason
    assert "100 degrees Celsius" in page.text
    assert calls == ["rebind.test"]


async def test_a_resolver_answer_in_private_space_blocks_the_fetch() -> None:
    async def private(host: str, port: int) -> list[str]:
        return ["192.168.0.10"]

    page = (await DirectFetcher(resolver=private).fetch_all(["http://evil.test/"]))["http://evil.test/"]
    assert page.reason == Reason.blocked_address.value


async def test_opt_in_through_settings_and_environment(pages: LoopbackSite) -> None:
    url = pages.url("/boiling")
    default = DirectFetcher.from_settings(Settings.from_env({}))
    assert (await default.fetch_all([url]))[url].reason == Reason.blocked_address.value
    opted_in = DirectFetcher.from_settings(Settings.from_env({"GUARDRAIL_ALLOW_PRIVATE_HOSTS": "1"}))
    page = (await opted_in.fetch_all([url]))[url]
    assert page.reason is None and "100 degrees Celsius" in page.text
    explicit = DirectFetcher(allow_private_hosts=True)
    assert (await explicit.fetch_all([url]))[url].reason is None


@pytest.mark.parametrize("off", ["0", "false", "False", "off", "no", " 0 "])
async def test_the_opening_written_off_keeps_the_guard_on(pages: LoopbackSite, off: str) -> None:
    """GUARDRAIL_ALLOW_PRIVATE_HOSTS=0 (or false, off, no) from the environment to the fetcher:
    the loopback page is refused and never asked for."""
    settings = Settings.from_env({"GUARDRAIL_ALLOW_PRIVATE_HOSTS": off})
    assert settings.allow_private_hosts is False
    url = pages.url("/boiling")
    with pages.counting() as hits:
        page = (await DirectFetcher.from_settings(settings).fetch_all([url]))[url]
    assert page.reason == Reason.blocked_address.value and hits == {}
    with pages.counting() as hits:
        page = (
            await DirectFetcher.from_settings(Settings.from_env({"GUARDRAIL_ALLOW_PRIVATE_HOSTS": "1"})).fetch_all(
                [url]
            )
        )[url]
    assert page.reason is None and hits == {"/boiling": 1}


async def test_verifier_opt_in_reaches_the_fetcher(pages: LoopbackSite) -> None:
    from guardrail.testing import HashEmbedder, OverlapJudge
    from guardrail.verifier import Verifier

    url = pages.url("/boiling")
    claim = "Water boils at 100 degrees Celsius at sea level."
    refused = await Verifier(judge=OverlapJudge(), embedder=HashEmbedder(), settings=Settings()).averify(claim, [url])
    assert refused.citations[0].reason == Reason.blocked_address.value
    allowed = await Verifier(allow_private_hosts=True, judge=OverlapJudge(), embedder=HashEmbedder()).averify(
        claim, [url]
    )
    assert allowed.citations[0].label == Label.supported


# -- the one list of special ranges, address by address -------------------------------------------

_V4_RANGES = [r for r in SPECIAL_RANGES if r.network.version == 4]
_V6_RANGES = [r for r in SPECIAL_RANGES if r.network.version == 6]
_ALWAYS = [r for r in SPECIAL_RANGES if r.always]


def _ends(entry: SpecialRange) -> list[IPAddress]:
    """The first and last address of a range (one for a single address)."""
    return list(dict.fromkeys([entry.network.network_address, entry.network.broadcast_address]))


def _ipv6_forms(v4: ipaddress.IPv4Address) -> dict[str, ipaddress.IPv6Address]:
    """``v4`` in every IPv6 form that carries an IPv4 address."""
    n = int(v4)
    nat64_local = int(ipaddress.IPv6Address("64:ff9b:1::"))
    teredo_server = int(ipaddress.IPv4Address("65.54.227.120"))
    forms = {
        "mapped": (0xFFFF << 32) | n,
        "translated": (0xFFFF << 48) | n,
        "compatible": n,
        "6to4": (0x2002 << 112) | (n << 80) | 1,
        "NAT64": int(ipaddress.IPv6Address("64:ff9b::")) | n,
        "local NAT64 /96": nat64_local | n,
        "local NAT64 /48": nat64_local | ((n >> 16) << 64) | ((n & 0xFFFF) << 40),
        "local NAT64 /56": nat64_local | ((n >> 24) << 64) | ((n & 0xFFFFFF) << 32),
        "local NAT64 /64": nat64_local | (n << 24),
        "Teredo server": (0x20010000 << 96) | (n << 64) | (0xFFFF << 32) | 0x12345678,
        "Teredo client": (0x20010000 << 96) | (teredo_server << 64) | (0x1234 << 32) | (n ^ 0xFFFFFFFF),
    }
    return {name: ipaddress.IPv6Address(value) for name, value in forms.items()}


def test_the_embeddings_are_read_back() -> None:
    """The forms built here are the ones the guard reads (so the cases below test what they say)."""
    v4 = ipaddress.IPv4Address("169.254.170.23")
    for name, v6 in _ipv6_forms(v4).items():
        assert v4 in [found for _, found in embedded_ipv4(v6)], name


@pytest.mark.parametrize("entry", SPECIAL_RANGES, ids=lambda r: str(r.network))
async def test_every_special_range_is_refused_at_both_ends(entry: SpecialRange) -> None:
    for address in _ends(entry):
        category = blocked_category(address)
        assert category is not None, address
        assert category == entry.category or "inside IPv6" in category, (address, category)
        host = f"[{address}]" if address.version == 6 else str(address)
        with pytest.raises(UrlRefused) as info:
            await SsrfPolicy(resolver=_no_dns).vet(f"http://{host}/")
        assert info.value.reason == Reason.blocked_address.value


@pytest.mark.parametrize("entry", _V4_RANGES, ids=lambda r: str(r.network))
async def test_every_ipv4_range_is_refused_in_every_ipv6_form(entry: SpecialRange) -> None:
    policy = SsrfPolicy(resolver=_no_dns)
    for address in _ends(entry):
        for form, v6 in _ipv6_forms(ipaddress.IPv4Address(address)).items():
            assert blocked_category(v6) is not None, (address, form, v6)
            with pytest.raises(UrlRefused):
                await policy.vet(f"http://[{v6}]/")


@pytest.mark.parametrize("entry", _ALWAYS, ids=lambda r: str(r.network))
async def test_metadata_and_host_endpoints_stay_refused_with_private_hosts_allowed(entry: SpecialRange) -> None:
    """Every spelling: the address, each IPv6 form of an IPv4 one, and a name resolving to it."""
    address = entry.network.network_address
    spellings: list[IPAddress] = [address]
    if isinstance(address, ipaddress.IPv4Address):
        spellings += list(_ipv6_forms(address).values())
    policy = SsrfPolicy(allow_private=True, resolver=_no_dns)
    for ip in spellings:
        assert is_metadata(ip), ip
        with pytest.raises(UrlRefused):
            await policy.vet(f"http://[{ip}]/" if ip.version == 6 else f"http://{ip}/")

    async def resolves_there(host: str, port: int) -> list[str]:
        return [str(address)]

    with pytest.raises(UrlRefused) as info:
        await SsrfPolicy(allow_private=True, resolver=resolves_there).vet("http://innocent.example/")
    assert "cloud metadata" in info.value.detail


@pytest.mark.parametrize("entry", [r for r in SPECIAL_RANGES if not r.always], ids=lambda r: str(r.network))
async def test_allow_private_opens_every_other_range(entry: SpecialRange) -> None:
    """Only the metadata entries are kept shut by allow_private (none of these addresses is one)."""
    for address in _ends(entry):
        host = f"[{address}]" if address.version == 6 else str(address)
        target = await SsrfPolicy(allow_private=True, resolver=_no_dns).vet(f"http://{host}/")
        assert target.addresses == (address.compressed,)


@pytest.mark.parametrize(
    "host",
    [
        "[::ffff:0:169.254.169.254]",  # the IPv4-translated spelling from the issue
        "[::ffff:0:a9fe:a9fe]",
        "168.63.129.16",  # Azure's host endpoint: public address space, but never a citation
        "169.254.170.23",
        "[fd00:ec2::23]",
        "169.254.169.253",
    ],
)
async def test_the_reported_gaps_are_closed_with_and_without_the_opening(host: str) -> None:
    for allow in (False, True):
        with pytest.raises(UrlRefused) as info:
            await SsrfPolicy(allow_private=allow, resolver=_no_dns).vet(f"http://{host}/latest/meta-data/")
        assert info.value.reason == Reason.blocked_address.value


@pytest.mark.parametrize(
    "host",
    ["[::ffff:8.8.8.8]", "[64:ff9b::808:808]", "[2002:808:808::1]", "[::808:808]", "8.8.8.8", "168.63.129.17"],
)
async def test_public_addresses_in_routed_forms_pass(host: str) -> None:
    assert (await SsrfPolicy(resolver=_no_dns).vet(f"http://{host}/")).addresses


@pytest.mark.parametrize(
    "host", ["[::ffff:0:8.8.8.8]", "[2001:0:4136:e378:8000:63bf:3fff:fdd2]", "[64:ff9b:1::808:808]"]
)
async def test_translated_teredo_and_local_nat64_forms_are_refused_even_around_public_addresses(host: str) -> None:
    with pytest.raises(UrlRefused):
        await SsrfPolicy(resolver=_no_dns).vet(f"http://{host}/")
