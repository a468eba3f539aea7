"""DirectFetcher: fetch cited pages ourselves over HTTP(S), with the SSRF policy on every hop.

How a URL is fetched:

1. :meth:`SsrfPolicy.vet <guardrail.fetch.ssrf.SsrfPolicy.vet>` checks the scheme and host
   and resolves the host once, checking every address.
2. The request goes to a vetted *address* (the URL's host is replaced by the IP), with
   the real name in the ``Host`` header and, for https, as the TLS server name
   (``sni_hostname``), so certificates are verified against the name the model cited.
   No second DNS lookup happens, so a rebinding DNS server cannot swap in a private
   address between check and connect. Connections are not kept alive: a pooled
   connection is keyed by IP, and must not be reused for another name on that IP.
   Proxy settings from the environment are ignored (a proxy would resolve the name itself).
3. A redirect is not followed by httpx: its ``Location`` is vetted like a new URL and
   fetched, at most ``max_redirects`` times.
4. The body is streamed and dropped as soon as it passes ``max_bytes``; a declared
   ``Content-Length`` over the cap is refused before reading. Non-2xx answers are not read.
5. The body becomes markdown (:func:`guardrail.fetch.convert.convert`) in a worker thread.

Nothing raises out of :meth:`DirectFetcher.fetch_all` for one page: every failure is a
``FetchedPage`` with ``reason`` set, interpreted later by :func:`guardrail.fetch.interpret.interpret`.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from guardrail.fetch._http import (
    DEFAULT_ACCEPT,
    DEFAULT_ACCEPT_LANGUAGE,
    DEFAULT_USER_AGENT,
    BodyTooLarge,
    declared_length,
    read_capped,
)
from guardrail.fetch.convert import SUPPORTED_TYPES, convert, media_type
from guardrail.fetch.ssrf import Resolver, SsrfPolicy, Target, UrlRefused
from guardrail.schema import FetchedPage, Reason
from guardrail.settings import Settings

log = logging.getLogger("guardrail.fetch")

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
_MAX_ADDRESSES_TRIED = 3


@dataclass
class _Progress:
    """Where a fetch has got to, so a timeout or error still reports the hops it made."""

    url: str
    current: str
    redirects: list[str] = field(default_factory=list)


class DirectFetcher:
    """Fetches pages directly with httpx, guarded against SSRF; the default fetcher (no token).

    Options: ``allow_private_hosts`` (skip the address check, except cloud metadata),
    ``allowed_hosts`` (``host`` / ``host:port`` entries exempt from it), ``resolver``
    (how names resolve; default the system resolver), or a ready ``policy``;
    ``timeout`` per request (connect, read, write) and ``total_timeout`` per page,
    redirects included (default twice ``timeout``); ``max_bytes`` body cap;
    ``max_redirects``; ``concurrency`` (pages fetched at once); ``user_agent``;
    ``verify`` (TLS verification: True, or an ``ssl.SSLContext`` with your CAs).
    """

    name = "direct"

    def __init__(
        self,
        *,
        allow_private_hosts: bool = False,
        allowed_hosts: Iterable[str] = (),
        resolver: Resolver | None = None,
        policy: SsrfPolicy | None = None,
        timeout: float = 15.0,
        total_timeout: float | None = None,
        max_bytes: int = 5_000_000,
        max_redirects: int = 5,
        concurrency: int = 8,
        user_agent: str = DEFAULT_USER_AGENT,
        verify: bool | ssl.SSLContext = True,
    ) -> None:
        if timeout <= 0 or (total_timeout is not None and total_timeout <= 0):
            raise ValueError("timeout and total_timeout must be positive")
        if max_bytes <= 0:
            raise ValueError("max_bytes must be positive")
        if max_redirects < 0:
            raise ValueError("max_redirects must not be negative")
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        if policy is not None and (allow_private_hosts or resolver is not None or tuple(allowed_hosts)):
            raise ValueError("pass either policy or allow_private_hosts/allowed_hosts/resolver, not both")
        self.policy = policy or SsrfPolicy(
            allow_private=allow_private_hosts, allowed_hosts=allowed_hosts, resolver=resolver
        )
        self.timeout = timeout
        self.total_timeout = total_timeout if total_timeout is not None else 2 * timeout
        self.max_bytes = max_bytes
        self.max_redirects = max_redirects
        self.concurrency = concurrency
        self.user_agent = user_agent
        self.verify = verify

    @classmethod
    def from_settings(cls, settings: Settings, **overrides: Any) -> DirectFetcher:
        """A fetcher configured from ``settings`` (``GUARDRAIL_*`` variables); ``overrides`` win."""
        options: dict[str, Any] = {
            "allow_private_hosts": settings.allow_private_hosts,
            "timeout": settings.fetch_timeout,
            "max_bytes": settings.max_bytes,
            "max_redirects": settings.max_redirects,
            "concurrency": settings.concurrency,
        }
        options.update(overrides)
        return cls(**options)

    def __repr__(self) -> str:
        return (
            f"DirectFetcher(policy={self.policy!r}, timeout={self.timeout}, max_bytes={self.max_bytes}, "
            f"max_redirects={self.max_redirects}, concurrency={self.concurrency})"
        )

    async def fetch_all(self, urls: Sequence[str]) -> dict[str, FetchedPage]:
        """Fetch each unique URL of ``urls`` once, at most ``concurrency`` at a time.

        Never raises for a page: failures come back as pages with ``reason`` set.
        """
        unique = list(dict.fromkeys(urls))
        if not unique:
            return {}
        semaphore = asyncio.Semaphore(self.concurrency)
        async with self._client() as client:

            async def bounded(url: str) -> FetchedPage:
                async with semaphore:
                    return await self.fetch_one(client, url)

            pages = await asyncio.gather(*(bounded(u) for u in unique))
        return dict(zip(unique, pages, strict=True))

    def _client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            timeout=httpx.Timeout(self.timeout),
            follow_redirects=False,
            trust_env=False,
            verify=self.verify,
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=0),
        )

    async def fetch_one(self, client: httpx.AsyncClient, url: str) -> FetchedPage:
        """Fetch one URL with ``client`` (from :meth:`fetch_all`); never raises for a bad page."""
        progress = _Progress(url=url, current=url)
        try:
            return await asyncio.wait_for(self._follow(client, progress), self.total_timeout)
        except UrlRefused as exc:
            log.info("refused %s: %s", progress.current, exc.detail)
            return self._failed(progress, exc.reason)
        except (asyncio.TimeoutError, httpx.TimeoutException):
            log.info("timed out fetching %s", progress.current)
            return self._failed(progress, Reason.fetch_timeout.value)
        except BodyTooLarge as exc:
            log.info("%s: %s", progress.current, exc)
            return self._failed(progress, Reason.too_large.value)
        except (httpx.HTTPError, OSError) as exc:  # DNS failure, refused, reset, TLS, protocol
            log.info("could not fetch %s: %s: %s", progress.current, type(exc).__name__, exc)
            return self._failed(progress, Reason.fetch_error.value)
        except Exception as exc:  # a bug or a library surprise must not fail the whole call
            log.warning("unexpected error fetching %s: %s: %s", progress.current, type(exc).__name__, exc)
            return self._failed(progress, Reason.fetch_error.value)

    async def _follow(self, client: httpx.AsyncClient, progress: _Progress) -> FetchedPage:
        for _ in range(self.max_redirects + 1):
            target = await self.policy.vet(progress.current)
            response = await self._send(client, target)
            try:
                location = response.headers.get("location")
                if response.status_code in REDIRECT_STATUSES and location:
                    try:
                        next_url = str(target.url.join(location.strip()))
                    except (httpx.InvalidURL, ValueError) as exc:
                        raise UrlRefused(Reason.invalid_url, f"bad redirect Location: {exc}") from None
                    progress.redirects.append(progress.current)
                    progress.current = next_url
                    continue
                return await self._read(response, progress)
            finally:
                await response.aclose()
        raise UrlRefused(Reason.too_many_redirects, f"more than {self.max_redirects} redirects")

    async def _send(self, client: httpx.AsyncClient, target: Target) -> httpx.Response:
        """Send a GET for ``target`` to one of its vetted addresses (next one if a connect fails)."""
        headers = {
            "Host": target.url.netloc.decode("ascii"),
            "User-Agent": self.user_agent,
            "Accept": DEFAULT_ACCEPT,
            "Accept-Language": DEFAULT_ACCEPT_LANGUAGE,
            "Accept-Encoding": "gzip, deflate",
        }
        extensions: dict[str, Any] = {}
        is_literal = target.host in target.addresses
        if target.url.scheme == "https" and not is_literal:
            extensions["sni_hostname"] = target.host
        last_error: httpx.ConnectError | None = None
        for address in target.addresses[:_MAX_ADDRESSES_TRIED]:
            pinned = target.url.copy_with(host=address, username=None, password=None, fragment=None)
            request = httpx.Request("GET", pinned, headers=headers, extensions=extensions)
            try:
                return await client.send(request, stream=True)
            except httpx.ConnectError as exc:
                last_error = exc
        assert last_error is not None  # Target always carries at least one address
        raise last_error

    async def _read(self, response: httpx.Response, progress: _Progress) -> FetchedPage:
        status = response.status_code
        content_type = response.headers.get("content-type")
        kind = media_type(content_type) or None
        page = FetchedPage(
            url=progress.url,
            final_url=progress.current,
            original_status=status,
            content_type=kind,
            redirects=list(progress.redirects),
            fetcher=self.name,
        )
        if not 200 <= status < 300:
            return page  # interpret() decides http_<code>; the body is not needed
        if kind is not None and kind not in SUPPORTED_TYPES and kind != "application/octet-stream":
            return page.model_copy(update={"reason": Reason.unsupported_content_type.value})
        length = declared_length(response)
        if length is not None and length > self.max_bytes:
            log.info("%s declares %d bytes, over the %d-byte cap", progress.current, length, self.max_bytes)
            return page.model_copy(update={"reason": Reason.too_large.value})
        body = await read_capped(response, self.max_bytes)
        converted = await asyncio.to_thread(convert, body, content_type, progress.current)
        return page.model_copy(
            update={
                "text": converted.text,
                "title": converted.title,
                "content_type": converted.content_type or kind,
                "reason": converted.reason,
            }
        )

    def _failed(self, progress: _Progress, reason: str) -> FetchedPage:
        return FetchedPage(
            url=progress.url,
            final_url=progress.current if progress.redirects else None,
            reason=reason,
            redirects=list(progress.redirects),
            fetcher=self.name,
        )
