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
4. The body is streamed, decoded in small steps (gzip or deflate, one layer: the codings we ask
   for; any other is ``unsupported_content_encoding``) and dropped as soon as its *decoded* size
   passes ``max_bytes``; a declared ``Content-Length`` over the cap is refused before reading.
   Non-2xx answers are not read.
5. The body becomes markdown (:func:`guardrail.fetch.convert.convert`) in a worker thread.

Nothing raises out of :meth:`DirectFetcher.fetch_all` for one page: every failure is a
``FetchedPage`` with ``reason`` set, interpreted later by :func:`guardrail.core.interpret.interpret`.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from guardrail.core.schema import FetchedPage, Reason, http_reason, is_retryable_reason
from guardrail.fetch._http import (
    ACCEPT_ENCODING,
    DEFAULT_ACCEPT,
    DEFAULT_ACCEPT_LANGUAGE,
    DEFAULT_USER_AGENT,
    BodyTooLarge,
    UnsupportedEncoding,
    declared_length,
    read_capped,
)
from guardrail.fetch.convert import SUPPORTED_TYPES, Converter, convert, media_type
from guardrail.fetch.politeness import HostLimiter, HostLimits
from guardrail.fetch.ssrf import Resolver, SsrfPolicy, Target, UrlRefused
from guardrail.retry import RetryPolicy, Transient, parse_retry_after, retry_call
from guardrail.settings import DEFAULT_FETCH_TIMEOUT, DEFAULT_MAX_BYTES, Settings

log = logging.getLogger("guardrail.fetch")

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
_MAX_ADDRESSES_TRIED = 3
_NO_SUCH_HOST = frozenset(
    code for code in (getattr(socket, "EAI_NONAME", None), getattr(socket, "EAI_NODATA", None)) if code is not None
)
"""getaddrinfo answers that mean the name does not exist (not a temporary failure)."""


class _ConverterFailed(Exception):
    """Turning a body into text failed: a failure of our own code, whatever its exception type."""


@dataclass(frozen=True)
class _Outcome:
    """One attempt's page, and how long the server asked us to wait before another."""

    page: FetchedPage
    retry_after: float | None = None


def _status_reason(status: int | None) -> str | None:
    return http_reason(status) if status is not None and not 200 <= status < 300 else None


@dataclass
class _Progress:
    """Where a fetch has got to, so a timeout or error still reports the hops it made."""

    url: str
    current: str
    redirects: list[str] = field(default_factory=list)


class DirectFetcher:
    """Fetches pages directly with httpx, guarded against SSRF; the default fetcher (no token).

    Args:
        allow_private_hosts: skip the address check (cloud metadata addresses stay refused).
        allowed_hosts: ``host`` or ``host:port`` entries exempt from the address check.
        resolver: how host names resolve (default: the system resolver).
        policy: a ready :class:`~guardrail.fetch.ssrf.SsrfPolicy`, instead of the three above.
        timeout: seconds per request phase (connect, read, write).
        total_timeout: seconds per page, redirects and retries included (default twice ``timeout``).
        max_bytes: body cap, counted after decompression; a larger page reads ``too_large``.
        max_redirects: redirects followed per page before ``too_many_redirects``.
        concurrency: pages fetched at once.
        user_agent: the ``User-Agent`` header sent.
        verify: TLS verification: True, or an ``ssl.SSLContext`` holding your CAs.
        retry: how transient failures are tried again (default 3 attempts within ``total_timeout``).
        converter: body -> readable text (default :func:`guardrail.fetch.convert.convert`).
        host_limits: requests to one host at once and per second, and the pause a 429/503 with
            ``Retry-After`` imposes on every request to it (:mod:`guardrail.fetch.politeness`).

    Raises ``ValueError`` naming the option for a non-positive timeout, cap or concurrency, and
    for ``policy`` given together with the options it replaces.
    """

    name = "direct"

    def __init__(
        self,
        *,
        allow_private_hosts: bool = False,
        allowed_hosts: Iterable[str] = (),
        resolver: Resolver | None = None,
        policy: SsrfPolicy | None = None,
        timeout: float = DEFAULT_FETCH_TIMEOUT,
        total_timeout: float | None = None,
        max_bytes: int = DEFAULT_MAX_BYTES,
        max_redirects: int = 5,
        concurrency: int = 8,
        user_agent: str = DEFAULT_USER_AGENT,
        verify: bool | ssl.SSLContext = True,
        retry: RetryPolicy | None = None,
        converter: Converter = convert,
        host_limits: HostLimits | None = None,
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
        self.retry = retry or RetryPolicy(budget=self.total_timeout)
        self.converter = converter
        self.hosts = HostLimiter(host_limits)
        self._tls_context: ssl.SSLContext | None = None

    @classmethod
    def from_settings(cls, settings: Settings, **overrides: Any) -> DirectFetcher:
        """A fetcher configured from ``settings`` (``GUARDRAIL_*`` variables); ``overrides`` win."""
        budget = settings.page_budget(2 * settings.fetch_timeout)  # a page's attempts, inside the deadline
        options: dict[str, Any] = {
            "allow_private_hosts": settings.allow_private_hosts,
            "timeout": min(settings.fetch_timeout, budget),
            "total_timeout": budget,
            "max_bytes": settings.max_bytes,
            "max_redirects": settings.max_redirects,
            "concurrency": settings.concurrency,
            "retry": RetryPolicy(attempts=settings.fetch_attempts, budget=budget),
            "host_limits": HostLimits(concurrency=settings.host_concurrency, rate=settings.host_rate or None),
        }
        options.update(overrides)
        return cls(**options)

    def cache_options(self) -> dict[str, object]:
        """The options that change a fetched page: the size cap, redirects, the SSRF openings.
        Timeouts, retries and concurrency only change transient failures, which are not kept."""
        return {"max_bytes": self.max_bytes, "max_redirects": self.max_redirects, **self.policy.cache_options()}

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
        async with self._client(await self._tls()) as client:

            async def bounded(url: str) -> FetchedPage:
                async with semaphore:
                    return await self.fetch_one(client, url)

            pages = await asyncio.gather(*(bounded(u) for u in unique))
        return dict(zip(unique, pages, strict=True))

    async def _tls(self) -> ssl.SSLContext:
        """The TLS context of this fetcher's clients, built once, in a worker thread: loading the
        CA bundle takes ~0.1 s, which would stall the event loop on every call."""
        if self._tls_context is None:
            self._tls_context = await asyncio.to_thread(httpx.create_ssl_context, self.verify, None, False)
        return self._tls_context

    def _client(self, tls: ssl.SSLContext) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            timeout=httpx.Timeout(self.timeout),
            follow_redirects=False,
            trust_env=False,
            verify=tls,
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=0),
        )

    async def fetch_one(self, client: httpx.AsyncClient, url: str) -> FetchedPage:
        """Fetch one URL with ``client`` (from :meth:`fetch_all`); never raises for a bad page.

        A transient outcome (timeout, connection failure, 408/429/502/503/504) is tried again under
        ``retry`` (``Retry-After`` honoured), all attempts within its time budget.
        """

        def classify(outcome: _Outcome | None, error: BaseException | None) -> Transient | None:
            if outcome is None:
                return None  # _attempt turns every exception into an outcome but cancellation
            reason = outcome.page.reason or _status_reason(outcome.page.original_status)
            return Transient(reason or "", outcome.retry_after) if is_retryable_reason(reason) else None

        def note(why: Transient, attempt: int, wait: float) -> None:
            log.info("%s: %s on attempt %d; retrying in %.2fs", url, why.detail, attempt, wait)

        outcome = await retry_call(lambda left: self._attempt(client, url, left), self.retry, classify, on_retry=note)
        return outcome.page

    async def _attempt(self, client: httpx.AsyncClient, url: str, seconds_left: float) -> _Outcome:
        progress = _Progress(url=url, current=url)
        try:
            return await asyncio.wait_for(self._follow(client, progress), min(self.total_timeout, seconds_left))
        except UrlRefused as exc:
            log.info("refused %s: %s", progress.current, exc.detail)
            return _Outcome(self._failed(progress, exc.reason))
        except httpx.InvalidURL as exc:
            # Not an HTTPError: httpx raises it out of send() for a redirect whose Location it cannot
            # parse (mailto:, about:blank, data:, javascript:, tel:, "http:\\host"), even with
            # follow_redirects off. The page's link is dead, not our code: no traceback.
            log.info("unusable URL after %s: %s", progress.current, exc)
            return _Outcome(self._failed(progress, Reason.invalid_url.value))
        except (asyncio.TimeoutError, httpx.TimeoutException):
            log.info("timed out fetching %s", progress.current)
            return _Outcome(self._failed(progress, Reason.fetch_timeout.value))
        except BodyTooLarge as exc:
            log.info("%s: %s", progress.current, exc)
            return _Outcome(self._failed(progress, Reason.too_large.value))
        except _ConverterFailed as exc:
            log.error("internal error converting %s", progress.current, exc_info=exc.__cause__)
            return _Outcome(self._failed(progress, Reason.internal_error.value))
        except socket.gaierror as exc:
            reason = Reason.host_not_found if exc.errno in _NO_SUCH_HOST else Reason.fetch_error
            log.info("could not resolve %s: %s", progress.current, exc)
            return _Outcome(self._failed(progress, reason.value))
        except (httpx.HTTPError, OSError) as exc:  # refused, reset, TLS, protocol, network down
            log.info("could not fetch %s: %s: %s", progress.current, type(exc).__name__, exc)
            return _Outcome(self._failed(progress, Reason.fetch_error.value))
        except Exception:
            # Our own failure (a bug, a converter that cannot import): never the page's fault.
            log.exception("internal error fetching %s", progress.current)
            return _Outcome(self._failed(progress, Reason.internal_error.value))

    async def _follow(self, client: httpx.AsyncClient, progress: _Progress) -> _Outcome:
        for _ in range(self.max_redirects + 1):
            target = await self.policy.vet(progress.current)
            async with self.hosts.slot(target.host):
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
                    outcome = await self._read(response, progress)
                finally:
                    await response.aclose()
            if response.status_code == 429 or (response.status_code == 503 and outcome.retry_after is not None):
                paused = self.hosts.pause(target.host, outcome.retry_after)
                status = response.status_code
                log.info("%s asked us to slow down (%d): its requests wait %.1fs", target.host, status, paused)
            return outcome
        raise UrlRefused(Reason.too_many_redirects, f"more than {self.max_redirects} redirects")

    async def _send(self, client: httpx.AsyncClient, target: Target) -> httpx.Response:
        """Send a GET for ``target`` to one of its vetted addresses (next one if a connect fails)."""
        headers = {
            "Host": target.url.netloc.decode("ascii"),
            "User-Agent": self.user_agent,
            "Accept": DEFAULT_ACCEPT,
            "Accept-Language": DEFAULT_ACCEPT_LANGUAGE,
            "Accept-Encoding": ACCEPT_ENCODING,
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
        if last_error is None:
            raise UrlRefused(Reason.invalid_url, f"no address to connect to for {target.host!r}")
        raise last_error

    async def _read(self, response: httpx.Response, progress: _Progress) -> _Outcome:
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
            # interpret() decides http_<code>; the body is not needed.
            return _Outcome(page, parse_retry_after(response.headers))
        if kind is not None and kind not in SUPPORTED_TYPES and kind != "application/octet-stream":
            return _Outcome(page.model_copy(update={"reason": Reason.unsupported_content_type.value}))
        length = declared_length(response)
        if length is not None and length > self.max_bytes:
            log.info("%s declares %d bytes, over the %d-byte cap", progress.current, length, self.max_bytes)
            return _Outcome(page.model_copy(update={"reason": Reason.too_large.value}))
        try:
            body = await read_capped(response, self.max_bytes)
        except UnsupportedEncoding as exc:
            log.info("%s: %s", progress.current, exc)
            return _Outcome(page.model_copy(update={"reason": Reason.unsupported_content_encoding.value}))
        try:
            converted = await asyncio.to_thread(self.converter, body, content_type, progress.current)
        except Exception as exc:  # even an OSError here is ours, not a network failure
            raise _ConverterFailed from exc
        return _Outcome(
            page.model_copy(
                update={
                    "text": converted.text,
                    "title": converted.title,
                    "content_type": converted.content_type or kind,
                    "reason": converted.reason,
                    "detail": converted.detail,
                }
            )
        )

    def _failed(self, progress: _Progress, reason: str) -> FetchedPage:
        return FetchedPage(
            url=progress.url,
            final_url=progress.current if progress.redirects else None,
            reason=reason,
            redirects=list(progress.redirects),
            fetcher=self.name,
        )
