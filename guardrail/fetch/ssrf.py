"""Address policy for fetching URLs a model wrote (SSRF guard).

A cited URL is untrusted input: it may point at ``http://169.254.169.254/`` (cloud
metadata), ``http://localhost:6379/``, a private service, or a host name whose DNS
answer is private. :class:`SsrfPolicy` decides, before any connection is made:

* the scheme must be http or https, the host a well-formed name or IP literal
  (otherwise ``invalid_url``);
* IPv4 literals are read the way ``inet_aton`` and browsers read them, so
  ``2130706433``, ``0x7f.1``, ``017700000001`` and ``127.1`` are all 127.0.0.1;
* every address the host resolves to must be public: the ranges of :data:`SPECIAL_RANGES`
  (loopback, private, link-local, CGNAT, multicast, reserved, unspecified, documentation and
  benchmarking ranges, IPv6 ULA/link-local/site-local...) and IPv6 forms that carry an IPv4
  address (IPv4-mapped, IPv4-translated, IPv4-compatible, 6to4, NAT64, local NAT64, Teredo)
  carrying a refused one are refused (``blocked_address``); so are ``localhost`` names and
  cloud metadata names.

:meth:`SsrfPolicy.vet` returns the addresses it checked; the fetcher connects to one of
those, never resolving the name a second time (an attacker's DNS could answer
differently the second time: DNS rebinding).

``allow_private=True`` (``GUARDRAIL_ALLOW_PRIVATE_HOSTS=1``) lifts the address check
for local use and tests, except for the cloud metadata and host endpoints (the ``always``
entries of :data:`SPECIAL_RANGES`: AWS IMDS, ECS, EKS Pod Identity, VPC DNS and time sync, GCP,
Azure's IMDS and WireServer, Alibaba, Tencent, Oracle), in any spelling or IPv6 form: no
citation needs them.
``allowed_hosts`` lifts it for named ``host`` or ``host:port`` entries only.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

import httpx

from guardrail.core.schema import Reason

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], Awaitable[list[str]]]
"""``async (host, port) -> [address, ...]``: how a policy turns a host name into addresses."""

ALLOWED_SCHEMES = frozenset({"http", "https"})

_Net = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True)
class SpecialRange:
    """A range the guard refuses, why, and whether ``allow_private`` lifts the refusal."""

    network: _Net
    category: str
    always: bool = False
    """Refused even with ``allow_private``: cloud metadata and host endpoints (no citation needs them)."""


def _range(network: str, category: str, *, always: bool = False) -> SpecialRange:
    return SpecialRange(ipaddress.ip_network(network), category, always)


_METADATA = "cloud metadata"
# The one list. Spelled out rather than relying on ipaddress.is_global/is_private, whose answers
# changed between Python releases (and call 224.0.0.0/4 and ::ffff:0:a9fe:a9fe "global").
# Metadata entries come first: an address in two ranges reads as the more specific one.
SPECIAL_RANGES: tuple[SpecialRange, ...] = (
    _range("169.254.169.254/32", f"{_METADATA} (AWS, GCP, Azure, Oracle, DigitalOcean, OpenStack)", always=True),
    _range("fd00:ec2::254/128", f"{_METADATA} (AWS IMDS over IPv6)", always=True),
    _range("169.254.170.2/32", f"{_METADATA} (AWS ECS task metadata and credentials)", always=True),
    _range("169.254.170.23/32", f"{_METADATA} (AWS EKS Pod Identity agent)", always=True),
    _range("fd00:ec2::23/128", f"{_METADATA} (AWS EKS Pod Identity agent over IPv6)", always=True),
    _range("169.254.169.253/32", f"{_METADATA} (AWS VPC DNS resolver)", always=True),
    _range("fd00:ec2::253/128", f"{_METADATA} (AWS VPC DNS resolver over IPv6)", always=True),
    _range("169.254.169.123/32", f"{_METADATA} (AWS time sync)", always=True),
    _range("fd00:ec2::123/128", f"{_METADATA} (AWS time sync over IPv6)", always=True),
    _range("168.63.129.16/32", f"{_METADATA} (Azure host endpoint, WireServer)", always=True),
    _range("100.100.100.200/32", f"{_METADATA} (Alibaba Cloud)", always=True),
    _range("169.254.0.23/32", f"{_METADATA} (Tencent Cloud)", always=True),
    _range("192.0.0.192/32", f"{_METADATA} (Oracle Cloud, legacy)", always=True),
    # IPv4
    _range("0.0.0.0/8", "unspecified"),
    _range("10.0.0.0/8", "private"),
    _range("100.64.0.0/10", "shared (CGNAT)"),
    _range("127.0.0.0/8", "loopback"),
    _range("169.254.0.0/16", "link-local"),
    _range("172.16.0.0/12", "private"),
    _range("192.0.0.0/24", "reserved (IETF protocol assignments)"),
    _range("192.0.2.0/24", "reserved (documentation)"),
    _range("192.88.99.0/24", "reserved (6to4 relay)"),
    _range("192.168.0.0/16", "private"),
    _range("198.18.0.0/15", "reserved (benchmarking)"),
    _range("198.51.100.0/24", "reserved (documentation)"),
    _range("203.0.113.0/24", "reserved (documentation)"),
    _range("224.0.0.0/4", "multicast"),
    _range("240.0.0.0/4", "reserved"),
    # IPv6 (the forms that carry an IPv4 address are read by embedded_ipv4 first)
    _range("::/128", "unspecified"),
    _range("::1/128", "loopback"),
    _range("::ffff:0:0:0/96", "reserved (IPv4-translated)"),
    _range("64:ff9b:1::/48", "reserved (local NAT64)"),
    _range("100::/64", "reserved (discard)"),
    _range("100:0:0:1::/64", "reserved (dummy prefix)"),
    _range("2001::/32", "reserved (Teredo)"),
    _range("2001:2::/48", "reserved (benchmarking)"),
    _range("2001:10::/28", "reserved (ORCHID)"),
    _range("2001:20::/28", "reserved (ORCHIDv2)"),
    _range("2001:db8::/32", "reserved (documentation)"),
    _range("3fff::/20", "reserved (documentation)"),
    _range("5f00::/16", "reserved (SRv6 segment identifiers)"),
    _range("fc00::/7", "private (unique local)"),
    _range("fe80::/10", "link-local"),
    _range("fec0::/10", "private (site-local)"),
    _range("ff00::/8", "multicast"),
)

METADATA_ADDRESSES: frozenset[IPAddress] = frozenset(r.network.network_address for r in SPECIAL_RANGES if r.always)
"""The cloud metadata and host endpoints (the ``always`` entries of :data:`SPECIAL_RANGES`)."""
METADATA_HOSTS = frozenset(
    {
        "metadata",
        "metadata.google.internal",
        "metadata.goog",
        "instance-data",
        "instance-data.ec2.internal",
        "metadata.tencentyun.com",
    }
)

_V6 = ipaddress.IPv6Network
_ROUTED_FORMS: tuple[tuple[_V6, str], ...] = (
    (_V6("::ffff:0:0/96"), "IPv4-mapped"),
    (_V6("::/96"), "IPv4-compatible"),
    (_V6("64:ff9b::/96"), "NAT64"),
)
"""IPv6 forms whose last 32 bits are the IPv4 address a packet really goes to (6to4 too)."""
_CARRYING_FORMS: tuple[tuple[_V6, str], ...] = (
    (_V6("::ffff:0:0:0/96"), "IPv4-translated"),
    (_V6("64:ff9b:1::/48"), "local NAT64"),
)
"""Forms refused as a whole whose last 32 bits may still name an IPv4 address (read for metadata)."""
_LOCAL_NAT64 = _V6("64:ff9b:1::/48")
_RFC6052_FIELDS: tuple[tuple[tuple[int, int], ...], ...] = (
    ((48, 64), (72, 88)),  # a /48 prefix: 16 bits, the reserved octet 64-71, 16 bits
    ((56, 64), (72, 96)),  # a /56 prefix
    ((72, 104),),  # a /64 prefix (a /96 prefix is the last 32 bits, read above)
)
_LOW32 = 0xFFFFFFFF


def _bits(value: int, start: int, end: int) -> int:
    """Bits ``start`` to ``end`` (exclusive, most significant first) of a 128-bit ``value``."""
    return (value >> (128 - end)) & ((1 << (end - start)) - 1)


def embedded_ipv4(ip: ipaddress.IPv6Address) -> list[tuple[str, ipaddress.IPv4Address]]:
    """Every IPv4 address ``ip`` carries, with its form's name: IPv4-mapped, IPv4-compatible,
    NAT64 (``64:ff9b::/96``), 6to4 (the forms a packet is routed through to that address), then
    IPv4-translated (``::ffff:0:0:0/96``), local NAT64 (``64:ff9b:1::/48`` at each RFC 6052 prefix
    length) and Teredo (server and client)."""
    found: list[tuple[str, ipaddress.IPv4Address]] = []
    value = int(ip)
    for network, form in _ROUTED_FORMS:
        if ip in network and not (form == "IPv4-compatible" and value <= 1):  # :: and ::1 are themselves
            found.append((form, ipaddress.IPv4Address(value & _LOW32)))
    if ip.sixtofour is not None:
        found.append(("6to4", ip.sixtofour))
    for network, form in _CARRYING_FORMS:
        if ip in network:
            found.append((form, ipaddress.IPv4Address(value & _LOW32)))
    if ip in _LOCAL_NAT64:
        for fields in _RFC6052_FIELDS:
            v4 = 0
            for start, end in fields:
                v4 = (v4 << (end - start)) | _bits(value, start, end)
            found.append(("local NAT64", ipaddress.IPv4Address(v4)))
    if ip.teredo is not None:
        server, client = ip.teredo
        found += [("Teredo server", server), ("Teredo client", client)]
    return found


_ROUTED = frozenset({form for _, form in _ROUTED_FORMS} | {"6to4"})


def _range_of(ip: IPAddress) -> SpecialRange | None:
    for entry in SPECIAL_RANGES:
        if ip.version == entry.network.version and ip in entry.network:
            return entry
    return None


def is_metadata(ip: IPAddress) -> bool:
    """True for a cloud metadata or host endpoint, directly or carried by any IPv6 form."""
    if ip in METADATA_ADDRESSES:
        return True
    return isinstance(ip, ipaddress.IPv6Address) and any(v4 in METADATA_ADDRESSES for _, v4 in embedded_ipv4(ip))


def blocked_category(ip: IPAddress) -> str | None:
    """Why ``ip`` must not be fetched (``"loopback"``, ``"private"``...), or None when it is public.

    An IPv6 form carrying a refused IPv4 address is refused for it; one routed to a public IPv4
    address (``::ffff:8.8.8.8``, 6to4, NAT64) is public; any other IPv6 address is read off
    :data:`SPECIAL_RANGES`, and what Python does not call global is ``reserved``.
    """
    if isinstance(ip, ipaddress.IPv6Address):
        for form, v4 in embedded_ipv4(ip):
            inner = blocked_category(v4)
            if inner is not None:
                return f"{inner} (IPv4 {v4} inside IPv6, {form})"
            if form in _ROUTED:
                return None
    entry = _range_of(ip)
    if entry is not None:
        return entry.category
    if isinstance(ip, ipaddress.IPv6Address) and not ip.is_global:
        return "reserved"
    return None


_LABEL = r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?"
_HOSTNAME = re.compile(rf"^{_LABEL}(?:\.{_LABEL})*$")


class UrlRefused(Exception):
    """A URL the policy will not fetch; ``reason`` is ``invalid_url`` or ``blocked_address``."""

    def __init__(self, reason: Reason, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason.value
        self.detail = detail


@dataclass(frozen=True)
class Target:
    """A URL that passed the policy, with the addresses checked for it (connect to these only)."""

    url: httpx.URL
    host: str
    """The ASCII (IDNA) host name or the canonical IP literal, without brackets."""
    port: int
    addresses: tuple[str, ...]


def parse_ipv4_literal(host: str) -> ipaddress.IPv4Address | None:
    """Read ``host`` as ``inet_aton`` and browsers do, or return None when it is a name.

    Accepts 1 to 4 dot-separated parts in decimal, octal (leading ``0``) or hex
    (``0x``); the last part fills the remaining bytes (``127.1`` is 127.0.0.1,
    ``2130706433`` is 127.0.0.1). A host whose last label is numeric but which is not
    a valid address (``1.2.3.256``, ``example.123``) raises :class:`UrlRefused`,
    because resolvers and browsers disagree about such names.
    """
    parts = host.split(".")
    if len(parts) > 1 and parts[-1] == "":
        parts.pop()
    numbers = [_parse_ipv4_part(p) for p in parts]
    if numbers[-1] is None:
        return None
    if len(parts) > 4 or any(n is None for n in numbers):
        raise UrlRefused(Reason.invalid_url, f"host {host!r} looks like an IPv4 address but is not one")
    values = [n for n in numbers if n is not None]
    *head, last = values
    if any(v > 255 for v in head) or last >= 256 ** (5 - len(values)):
        raise UrlRefused(Reason.invalid_url, f"host {host!r} is an IPv4 address out of range")
    number = last
    for i, v in enumerate(head):
        number += v << (8 * (3 - i))
    return ipaddress.IPv4Address(number)


def _parse_ipv4_part(part: str) -> int | None:
    if part == "":
        return None
    if part[:2].lower() == "0x":
        digits = part[2:]
        if digits == "":
            return 0
        return int(digits, 16) if re.fullmatch(r"[0-9a-fA-F]+", digits) else None
    if len(part) > 1 and part[0] == "0":
        return int(part, 8) if re.fullmatch(r"[0-7]+", part) else None
    return int(part) if part.isascii() and part.isdigit() else None


async def system_resolver(host: str, port: int) -> list[str]:
    """Resolve ``host`` with the system resolver (``loop.getaddrinfo``, run off the event loop)."""
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
    addresses: list[str] = []
    for _family, _type, _proto, _canon, sockaddr in infos:
        address = str(sockaddr[0])
        if address not in addresses:
            addresses.append(address)
    return addresses


def _split_allowed(entry: str) -> tuple[str, int | None]:
    entry = entry.strip().lower()
    if entry.startswith("["):  # [::1]:8080 or [::1]
        host, _, rest = entry[1:].partition("]")
        return host, int(rest[1:]) if rest.startswith(":") else None
    if entry.count(":") == 1:
        host, _, port = entry.partition(":")
        return host, int(port)
    return entry, None


class SsrfPolicy:
    """Decides which URLs may be fetched and which addresses to connect to.

    ``allow_private``: skip the address check (local use, tests) except for cloud
    metadata. ``allowed_hosts``: ``"host"`` or ``"host:port"`` entries exempt from
    the address check (a narrow opening, e.g. one fixture server). ``resolver``:
    how names are resolved (default :func:`system_resolver`); it is called once per
    URL vetted, and the addresses it returned are the only ones to connect to.
    """

    def __init__(
        self,
        *,
        allow_private: bool = False,
        allowed_hosts: Iterable[str] = (),
        resolver: Resolver | None = None,
    ) -> None:
        self.allow_private = allow_private
        self.allowed_hosts: frozenset[tuple[str, int | None]] = frozenset(_normalize_allowed(e) for e in allowed_hosts)
        self.resolver: Resolver = resolver or system_resolver

    def __repr__(self) -> str:
        allowed = sorted(f"{h}:{p}" if p else h for h, p in self.allowed_hosts)
        return f"SsrfPolicy(allow_private={self.allow_private}, allowed_hosts={allowed})"

    def check_syntax(self, url: str | httpx.URL) -> tuple[httpx.URL, str, int, IPAddress | None]:
        """Parse ``url`` and check scheme and host; no DNS. Returns (url, host, port, literal ip or None).

        Raises :class:`UrlRefused` (``invalid_url``) for anything but a well-formed
        http(s) URL with a host.
        """
        try:
            parsed = url if isinstance(url, httpx.URL) else _parse_url(url.strip())
        except (httpx.InvalidURL, TypeError, ValueError) as exc:
            raise UrlRefused(Reason.invalid_url, f"not a parseable URL: {exc}") from None
        if parsed.scheme not in ALLOWED_SCHEMES:
            raise UrlRefused(Reason.invalid_url, f"scheme {parsed.scheme or '(none)'!r} is not http or https")
        try:
            host = parsed.raw_host.decode("ascii").lower()
        except UnicodeDecodeError:
            raise UrlRefused(Reason.invalid_url, "host is not valid ASCII/IDNA") from None
        if not host:
            raise UrlRefused(Reason.invalid_url, "URL has no host")
        port = parsed.port or (443 if parsed.scheme == "https" else 80)
        ip: IPAddress | None
        if ":" in host:  # httpx has already validated bracketed IPv6 literals
            try:
                ip = ipaddress.IPv6Address(host)
            except ValueError:
                raise UrlRefused(Reason.invalid_url, f"host {host!r} is not a valid IPv6 address") from None
            return parsed, ip.compressed, port, ip
        name = host[:-1] if host.endswith(".") else host
        if len(name) > 253 or not _HOSTNAME.match(name):
            raise UrlRefused(Reason.invalid_url, f"host {host!r} is not a valid host name")
        ip = parse_ipv4_literal(name)
        return parsed, (str(ip) if ip is not None else name), port, ip

    def cache_options(self) -> dict[str, object]:
        """What this policy lets through, for a page cache key (a page fetched with private hosts
        allowed must never be served to a fetcher that refuses them)."""
        options: dict[str, object] = {"allow_private_hosts": self.allow_private}
        if self.allowed_hosts:
            options["allowed_hosts"] = sorted(f"{h}:{p}" if p else h for h, p in self.allowed_hosts)
        return options

    def is_allowed_host(self, host: str, port: int) -> bool:
        """True when ``host`` (optionally with ``port``) is listed in ``allowed_hosts``."""
        return (host, port) in self.allowed_hosts or (host, None) in self.allowed_hosts

    def check_static(self, url: str | httpx.URL) -> tuple[httpx.URL, str, int, IPAddress | None]:
        """Everything decidable without DNS: syntax, IP literals (any spelling), localhost and
        metadata names. Used as is by fetchers whose DNS happens elsewhere (Crawlbase)."""
        parsed, host, port, ip = self.check_syntax(url)
        if self.is_allowed_host(host, port):
            return parsed, host, port, ip
        if ip is not None:
            self._check_ip(ip, host)
        elif host in METADATA_HOSTS:
            raise UrlRefused(Reason.blocked_address, f"host {host!r} is a cloud metadata endpoint")
        elif not self.allow_private and (host == "localhost" or host.endswith(".localhost")):
            raise UrlRefused(Reason.blocked_address, f"host {host!r} is loopback")
        return parsed, host, port, ip

    async def vet(self, url: str | httpx.URL) -> Target:
        """Check ``url`` fully: :meth:`check_static`, then resolve the host once and check every
        address it resolves to. Raises :class:`UrlRefused`; DNS failures raise ``OSError``
        (``socket.gaierror`` with ``EAI_NONAME`` when the name does not exist)."""
        parsed, host, port, ip = self.check_static(url)
        if ip is not None:
            return Target(parsed, host, port, (ip.compressed,))
        raw = await self.resolver(host, port)
        addresses: list[str] = []
        for text in raw:
            try:
                # getaddrinfo may append a scope id to IPv6 link-local answers ("fe80::1%eth0").
                address = ipaddress.ip_address(text.split("%", 1)[0])
            except ValueError:
                raise UrlRefused(Reason.blocked_address, f"{host!r} resolved to a non-IP answer") from None
            if not self.is_allowed_host(host, port):
                self._check_ip(address, host)
            addresses.append(address.compressed)
        if not addresses:
            raise socket.gaierror(socket.EAI_NONAME, f"{host!r} did not resolve to any address")
        # IPv4 first: many hosts have no working IPv6 route, and we do not race connections.
        addresses.sort(key=lambda a: ":" in a)
        return Target(parsed, host, port, tuple(addresses))

    def _check_ip(self, ip: IPAddress, host: str) -> None:
        if is_metadata(ip):
            raise UrlRefused(Reason.blocked_address, f"{host!r} is a cloud metadata address ({ip})")
        if self.allow_private:
            return
        category = blocked_category(ip)
        if category is not None:
            shown = host if host == ip.compressed else f"{host!r} resolves to {ip}, which"
            raise UrlRefused(Reason.blocked_address, f"{shown} is {category}")


def _parse_url(url: str) -> httpx.URL:
    """Parse with httpx, reading dotted IPv4 spellings httpx rejects (``0177.0.0.1``) as inet_aton does."""
    try:
        return httpx.URL(url)
    except httpx.InvalidURL:
        parts = urlsplit(url)
        host = parts.hostname or ""
        literal = parse_ipv4_literal(host) if host and ":" not in host else None
        if literal is None:
            raise
        port = f":{parts.port}" if parts.port is not None else ""
        return httpx.URL(urlunsplit((parts.scheme, f"{literal}{port}", parts.path, parts.query, parts.fragment)))


def _normalize_allowed(entry: str) -> tuple[str, int | None]:
    host, port = _split_allowed(entry)
    if ":" in host:
        host = ipaddress.IPv6Address(host).compressed
    else:
        literal = parse_ipv4_literal(host) if host else None
        host = str(literal) if literal is not None else host.rstrip(".")
    return host, port
