"""Address policy for fetching URLs a model wrote (SSRF guard).

A cited URL is untrusted input: it may point at ``http://169.254.169.254/`` (cloud
metadata), ``http://localhost:6379/``, a private service, or a host name whose DNS
answer is private. :class:`SsrfPolicy` decides, before any connection is made:

* the scheme must be http or https, the host a well-formed name or IP literal
  (otherwise ``invalid_url``);
* IPv4 literals are read the way ``inet_aton`` and browsers read them, so
  ``2130706433``, ``0x7f.1``, ``017700000001`` and ``127.1`` are all 127.0.0.1;
* every address the host resolves to must be public: loopback, private, link-local,
  CGNAT, multicast, reserved, unspecified, documentation and benchmarking ranges,
  IPv6 ULA/link-local/site-local, and IPv6 forms that embed an IPv4 address
  (IPv4-mapped, IPv4-compatible, 6to4, NAT64) carrying a private one are refused
  (``blocked_address``); so are ``localhost`` names and cloud metadata names.

:meth:`SsrfPolicy.vet` returns the addresses it checked; the fetcher connects to one of
those, never resolving the name a second time (an attacker's DNS could answer
differently the second time: DNS rebinding).

``allow_private=True`` (``GUARDRAIL_ALLOW_PRIVATE_HOSTS=1``) lifts the address check
for local use and tests, except for cloud metadata endpoints, which no citation needs.
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

from guardrail.schema import Reason

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], Awaitable[list[str]]]
"""``async (host, port) -> [address, ...]``: how a policy turns a host name into addresses."""

ALLOWED_SCHEMES = frozenset({"http", "https"})

_V4 = ipaddress.IPv4Network
_V6 = ipaddress.IPv6Network

# Spelled out rather than relying on ipaddress.is_global/is_private, whose answers
# changed between Python releases (and call 224.0.0.0/4 "global").
_BLOCKED_V4: tuple[tuple[_V4, str], ...] = (
    (_V4("0.0.0.0/8"), "unspecified"),
    (_V4("10.0.0.0/8"), "private"),
    (_V4("100.64.0.0/10"), "shared (CGNAT)"),
    (_V4("127.0.0.0/8"), "loopback"),
    (_V4("169.254.0.0/16"), "link-local"),
    (_V4("172.16.0.0/12"), "private"),
    (_V4("192.0.0.0/24"), "reserved (IETF protocol assignments)"),
    (_V4("192.0.2.0/24"), "reserved (documentation)"),
    (_V4("192.88.99.0/24"), "reserved (6to4 relay)"),
    (_V4("192.168.0.0/16"), "private"),
    (_V4("198.18.0.0/15"), "reserved (benchmarking)"),
    (_V4("198.51.100.0/24"), "reserved (documentation)"),
    (_V4("203.0.113.0/24"), "reserved (documentation)"),
    (_V4("224.0.0.0/4"), "multicast"),
    (_V4("240.0.0.0/4"), "reserved"),
)
_BLOCKED_V6: tuple[tuple[_V6, str], ...] = (
    (_V6("::/128"), "unspecified"),
    (_V6("::1/128"), "loopback"),
    (_V6("64:ff9b:1::/48"), "reserved (local NAT64)"),
    (_V6("100::/64"), "reserved (discard)"),
    (_V6("2001::/32"), "reserved (Teredo)"),
    (_V6("2001:2::/48"), "reserved (benchmarking)"),
    (_V6("2001:10::/28"), "reserved (ORCHID)"),
    (_V6("2001:20::/28"), "reserved (ORCHIDv2)"),
    (_V6("2001:db8::/32"), "reserved (documentation)"),
    (_V6("fc00::/7"), "private (unique local)"),
    (_V6("fe80::/10"), "link-local"),
    (_V6("fec0::/10"), "private (site-local)"),
    (_V6("ff00::/8"), "multicast"),
)
_NAT64 = _V6("64:ff9b::/96")
_IPV4_COMPATIBLE = _V6("::/96")

METADATA_ADDRESSES: frozenset[IPAddress] = frozenset(
    {
        ipaddress.IPv4Address("169.254.169.254"),  # AWS, GCP, Azure, OpenStack, DigitalOcean...
        ipaddress.IPv4Address("169.254.170.2"),  # AWS ECS task metadata
        ipaddress.IPv4Address("100.100.100.200"),  # Alibaba Cloud
        ipaddress.IPv6Address("fd00:ec2::254"),  # AWS IMDS over IPv6
    }
)
METADATA_HOSTS = frozenset(
    {"metadata", "metadata.google.internal", "metadata.goog", "instance-data", "instance-data.ec2.internal"}
)

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


def blocked_category(ip: IPAddress) -> str | None:
    """Why ``ip`` must not be fetched (``"loopback"``, ``"private"``...), or None when it is public."""
    if ip in METADATA_ADDRESSES:
        return "cloud metadata"
    if isinstance(ip, ipaddress.IPv4Address):
        for net, category in _BLOCKED_V4:
            if ip in net:
                return category
        return None
    embedded = _embedded_ipv4(ip)
    if embedded is not None:
        inner = blocked_category(embedded)
        return f"{inner} (IPv4 {embedded} inside IPv6)" if inner else None
    for net6, category in _BLOCKED_V6:
        if ip in net6:
            return category
    if not ip.is_global:
        return "reserved"
    return None


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries and routes to, for the forms that do that."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip in _NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    if ip in _IPV4_COMPATIBLE and int(ip) > 1:  # ::a.b.c.d (deprecated); :: and ::1 are listed
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def is_metadata(ip: IPAddress) -> bool:
    """True for a cloud metadata endpoint, directly or embedded in an IPv6 form."""
    if ip in METADATA_ADDRESSES:
        return True
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = _embedded_ipv4(ip)
        return embedded is not None and embedded in METADATA_ADDRESSES
    return False


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
        self.allowed_hosts: frozenset[tuple[str, int | None]] = frozenset(
            _normalize_allowed(e) for e in allowed_hosts
        )
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
            raise UrlRefused(
                Reason.invalid_url, f"scheme {parsed.scheme or '(none)'!r} is not http or https"
            )
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
        address it resolves to. Raises :class:`UrlRefused`; DNS failures raise ``OSError``."""
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
            raise OSError(f"{host!r} did not resolve to any address")
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
